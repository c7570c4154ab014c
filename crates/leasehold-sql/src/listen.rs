//! PostgreSQL `LISTEN` for release notifications: one connection per store.

use std::sync::Arc;
use std::time::Duration;

use leasehold::LockName;
use leasehold::store::ReleaseNotifier;
use sqlx::postgres::{PgListener, PgPool};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

/// A background task that listens on the store's channel and wakes local waiters; stopped when
/// the store is dropped.
#[derive(Debug)]
pub(crate) struct Listener(JoinHandle<()>);

impl Listener {
    /// Starts listening, if a tokio runtime is available.
    pub(crate) fn start(
        pool: PgPool,
        channel: String,
        notifier: Arc<ReleaseNotifier>,
    ) -> Option<Self> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        Some(Self(handle.spawn(listen(pool, channel, notifier))))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn listen(pool: PgPool, channel: String, notifier: Arc<ReleaseNotifier>) {
    loop {
        match PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(&channel).await {
                    warn!(error = %e, "leasehold: LISTEN failed; waiters fall back to polling");
                } else {
                    debug!(%channel, "leasehold: listening for releases");
                    loop {
                        match listener.recv().await {
                            Ok(n) => {
                                if let Ok(lock) = LockName::new(n.payload()) {
                                    notifier.notify(&lock);
                                }
                            }
                            Err(e) => {
                                warn!(error = %e, "leasehold: release notifications interrupted; reconnecting");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => {
                warn!(error = %e, "leasehold: cannot open a LISTEN connection; waiters poll meanwhile")
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
