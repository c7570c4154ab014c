//! Release notifications: one persistent recursive watch on `<prefix>/locks` per store
//! (ZooKeeper ≥ 3.6), started by the first `release_signal` call. A lock's release node
//! (`<lock>/released`), which every release that frees a slot writes in the same `multi`, wakes
//! the lock's local waiters when it is created or changed. Slot nodes change with every grant and
//! renewal too and wake nobody: a follower, or a partition member listening to its member group,
//! would otherwise read again at every renewal of every holder. A wake-up never grants anything,
//! so a spurious one (a session event) only costs a read.

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::ReleaseNotifier;
use zookeeper_client::{AddWatchMode, EventType};

use crate::keys::Paths;
use crate::link::Link;

/// The pause before a watch that ended (session expired, server gone) is set up again.
const REWATCH_PAUSE: Duration = Duration::from_millis(500);

/// Listens until the store is dropped (run as its [`Listener`](leasehold::store::Listener)).
pub(crate) async fn run(link: Arc<Link>, paths: Paths, notifier: Arc<ReleaseNotifier>) {
    let root = paths.locks();
    loop {
        if let Ok(client) = link.client().await {
            match client.watch(&root, AddWatchMode::PersistentRecursive).await {
                Ok(mut watcher) => {
                    // Changes before the watch was set up were not seen: the waiters look again.
                    notifier.notify_all();
                    loop {
                        let event = watcher.changed().await;
                        match event.event_type {
                            EventType::Session if event.session_state.is_terminated() => break,
                            // Disconnected or back: changes meanwhile may not be seen either.
                            EventType::Session => notifier.notify_all(),
                            EventType::NodeDataChanged | EventType::NodeCreated => {
                                if let Some(lock) = paths.released_lock(&event.path) {
                                    notifier.notify(&lock);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "ZooKeeper watch failed; retrying")
                }
            }
        }
        tokio::time::sleep(REWATCH_PAUSE).await;
    }
}
