//! The release feed: a background task per store that turns releases by other clients (other
//! processes, other stores on the same database) into wake-ups of this store's waiters.
//!
//! * PostgreSQL: `LISTEN` on the store's channel (see `listen`); the release statements
//!   `NOTIFY` it with the lock's name.
//! * SQLite on a file: `PRAGMA data_version` read every millisecond on a connection of its own,
//!   only while someone waits (see `data_version`): a change means another connection committed,
//!   and every waiter tries again.
//! * MySQL/MariaDB, and SQLite in memory: none; waiters poll with
//!   [`RetryPolicy::polling`](leasehold::RetryPolicy::polling).

use std::sync::{Arc, Mutex};

use leasehold::LockName;
use leasehold::store::{ReleaseNotifier, ReleaseSignal};
use tokio::task::JoinHandle;

use crate::pool::SqlPool;

/// The running feed; stopped when dropped (with its store).
#[derive(Debug)]
pub(crate) struct Feed(JoinHandle<()>);

impl Feed {
    /// A signal of `lock`'s releases from `notifier`, starting the store's feed (kept in `feed`)
    /// on first use: every client's releases when the feed runs, else this store's own.
    pub(crate) fn subscribe(
        feed: &Mutex<Option<Self>>,
        pool: &SqlPool,
        channel: &str,
        notifier: &Arc<ReleaseNotifier>,
        lock: &LockName,
    ) -> ReleaseSignal {
        let signal = notifier.subscribe(lock);
        let mut feed = feed.lock().unwrap_or_else(|p| p.into_inner());
        if feed.is_none() {
            *feed = Self::start(pool, channel, notifier);
        }
        signal.reaching_every_client_if(feed.is_some())
    }

    /// Starts the feed for `pool`'s database, if it has one and a tokio runtime is available.
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub(crate) fn start(
        pool: &SqlPool,
        channel: &str,
        notifier: &Arc<ReleaseNotifier>,
    ) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let notifier = Arc::clone(notifier);
        let task = match pool {
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(pool) => Some(runtime.spawn(crate::listen::listen(
                pool.clone(),
                channel.to_owned(),
                notifier,
            ))),
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(pool) => crate::data_version::watched(pool)
                .map(|options| runtime.spawn(crate::data_version::watch(options, notifier))),
            #[allow(unreachable_patterns)] // MySQL, or no other driver compiled in
            _ => None,
        };
        task.map(Self)
    }
}

/// True for an in-memory SQLite database (`sqlite::memory:`, `mode=memory`): this process's
/// alone, so no other client's releases exist.
pub(crate) fn process_local(pool: &SqlPool) -> bool {
    match pool {
        #[cfg(feature = "sqlite")]
        SqlPool::Sqlite(pool) => crate::data_version::in_memory(pool),
        #[allow(unreachable_patterns)] // PostgreSQL, MySQL, or no driver compiled in
        _ => false,
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.0.abort();
    }
}
