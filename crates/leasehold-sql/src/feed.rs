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

use std::sync::Arc;

use leasehold::store::ReleaseNotifier;
use tokio::task::JoinHandle;

use crate::pool::SqlPool;

/// The running feed; stopped when dropped (with its store).
#[derive(Debug)]
pub(crate) struct Feed(JoinHandle<()>);

impl Feed {
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

impl Drop for Feed {
    fn drop(&mut self) {
        self.0.abort();
    }
}
