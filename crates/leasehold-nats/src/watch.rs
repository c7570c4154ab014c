//! Release notifications: one KV watch per store on every key of its bucket, feeding a
//! `ReleaseNotifier`.
//!
//! Every release and forced release writes a delete marker, and the server writes a marker
//! (`Nats-Marker-Reason: MaxAge`) when a lease's TTL runs out: the watch (new messages only)
//! wakes the local waiters of that key's lock on each. A session record that runs out (or is
//! deleted) wakes every waiter: the locks that named it are free now. When the watch fails it
//! is started again after a pause; in the gap, waiters fall back to polling.

use std::sync::Arc;

use async_nats::jetstream::kv::Operation;
use futures::StreamExt;
use leasehold::store::StoreError;
use leasehold::store::{ListenSessions, ReconnectPause, ReleaseNotifier};
use tracing::{debug, warn};

use crate::classify;
use crate::keys::{KeyOf, Keys};
use crate::link::Link;

/// Listens until the store is dropped (run as its [`Listener`](leasehold::store::Listener)).
pub(crate) async fn run(link: Arc<Link>, keys: Keys, notifier: Arc<ReleaseNotifier>) {
    let mut sessions = ListenSessions::new(ReconnectPause::default());
    loop {
        let watching = sessions.next().await;
        let outcome = session(&link, &keys, &notifier, watching).await;
        if let Some((e, pause)) = sessions.ended(outcome) {
            warn!(error = %e, bucket = %keys.bucket(), ?pause,
                "NATS release notifications interrupted; waiters poll until reconnected");
        }
    }
}

/// One watch, until it fails.
async fn session(
    link: &Link,
    keys: &Keys,
    notifier: &ReleaseNotifier,
    watching: &mut bool,
) -> Result<(), StoreError> {
    let budget = link.request_timeout();
    let conn = link.conn().await?;
    let start = async {
        let bucket = conn
            .js
            .get_key_value(keys.bucket())
            .await
            .map_err(|e| classify::disconnected("a watch request", e))?;
        bucket
            .watch_all()
            .await
            .map_err(|e| classify::disconnected("a watch request", e))
    };
    let mut watch = tokio::time::timeout(budget, start)
        .await
        .map_err(|_| classify::timed_out("a watch request", budget))??;
    *watching = true;
    debug!(bucket = %keys.bucket(), "watching NATS for releases");
    // Releases while nobody watched were not seen: waiters look again.
    notifier.notify_all();
    while let Some(entry) = watch.next().await {
        let entry = entry.map_err(|e| classify::disconnected("the release watch", e))?;
        if entry.operation == Operation::Put {
            continue;
        }
        match keys.parse_key(&entry.key) {
            // A session gone frees every lock still naming it: every waiter looks again.
            Some(KeyOf::Session(_)) => notifier.notify_all(),
            Some(key) => {
                if let Some(lock) = key.lock() {
                    notifier.notify(lock);
                }
            }
            None => {}
        }
    }
    Err(StoreError::transient("the NATS release watch ended"))
}
