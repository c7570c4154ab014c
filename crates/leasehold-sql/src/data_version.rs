//! SQLite's release feed: `PRAGMA data_version` on a connection of its own.
//!
//! SQLite has no notifications, but every connection can ask cheaply (from the shared WAL index,
//! without reading the database) whether another connection committed since it last asked. While
//! someone waits, the feed asks every [`DATA_VERSION_POLL`] and wakes every waiter of the store
//! when the answer changes: a release by another process on the same host, or by another store
//! on the same file, reaches the waiters within a few milliseconds instead of at their next
//! back-off poll. A wake-up without a release (any other commit) only makes a waiter try again.
//! While nobody waits it asks nothing.

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::ReleaseNotifier;
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool};
use tracing::{debug, warn};

/// How often the feed reads `data_version` while someone waits.
pub(crate) const DATA_VERSION_POLL: Duration = Duration::from_millis(1);

/// The connection options for the feed, or `None` for an in-memory database (no other process
/// can reach it, and the store's own releases wake its waiters directly).
pub(crate) fn watched(pool: &SqlitePool) -> Option<SqliteConnectOptions> {
    (!in_memory(pool)).then(|| (*pool.connect_options()).clone())
}

/// True if `pool`'s database lives in this process's memory (`sqlite::memory:`,
/// `mode=memory`): no other process can open it.
pub(crate) fn in_memory(pool: &SqlitePool) -> bool {
    let options = pool.connect_options();
    let file = options.get_filename().to_string_lossy();
    // `mode=memory` becomes a flag that sqlx keeps private and shows only in its `Debug` form
    // (its URL form panics on some in-memory file names).
    let memory_mode = || format!("{options:?}").contains("in_memory: true");
    file.is_empty()
        || file == ":memory:"
        || file.starts_with("file:sqlx-in-memory-")
        || file.contains("mode=memory")
        || memory_mode()
}

/// Reads `data_version` while anyone waits, and wakes every waiter when it changes; reconnects
/// after an error (waiters poll meanwhile).
pub(crate) async fn watch(options: SqliteConnectOptions, notifier: Arc<ReleaseNotifier>) {
    loop {
        match SqliteConnection::connect_with(&options).await {
            Ok(mut conn) => {
                debug!("watching the SQLite database for other clients' releases");
                let mut seen = None;
                loop {
                    notifier.subscribers().await;
                    match sqlx::query_scalar::<_, i64>("PRAGMA data_version")
                        .fetch_one(&mut conn)
                        .await
                    {
                        Ok(version) => {
                            // The first reading may follow a release the waiters missed.
                            if seen != Some(version) {
                                notifier.notify_all();
                            }
                            seen = Some(version);
                        }
                        Err(e) => {
                            warn!(error = %e, "reading SQLite's data_version failed; waiters poll meanwhile");
                            break;
                        }
                    }
                    tokio::time::sleep(DATA_VERSION_POLL).await;
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot open SQLite's release-feed connection; waiters poll meanwhile");
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
