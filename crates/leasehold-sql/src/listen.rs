//! PostgreSQL's release feed: `LISTEN` on the store's channel, one connection per store.

use std::sync::Arc;
use std::time::Duration;

use leasehold::LockName;
use leasehold::store::ReleaseNotifier;
use sqlx::postgres::{PgListener, PgPool};
use tracing::{debug, warn};

/// Listens on `channel` and wakes the waiters of the locks named in its notifications;
/// reconnects after an error (waiters poll meanwhile).
pub(crate) async fn listen(pool: PgPool, channel: String, notifier: Arc<ReleaseNotifier>) {
    loop {
        match PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(&channel).await {
                    warn!(error = %e, "LISTEN failed; waiters fall back to polling");
                } else {
                    debug!(%channel, "listening for releases");
                    // Releases while nobody listened were not heard: waiters look again.
                    notifier.notify_all();
                    loop {
                        match listener.recv().await {
                            Ok(n) => {
                                if let Ok(lock) = LockName::new(n.payload()) {
                                    notifier.notify(&lock);
                                }
                            }
                            Err(e) => {
                                warn!(error = %e, "release notifications interrupted; reconnecting");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot open a LISTEN connection; waiters poll meanwhile")
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
