//! Release notifications: one etcd watch per store on its key prefix, feeding a
//! `ReleaseNotifier`.
//!
//! Every release, expiry, forced release and linger end deletes a slot key; the watch (deletes
//! only) wakes the local waiters of that key's lock. The stream asks for a progress report every
//! few seconds and is replaced when none arrives, so a member that silently went away is noticed.
//! A new stream resumes after the last revision the old one reported, so releases made while it
//! reconnected still wake their waiters (unless etcd compacted that history meanwhile); in the
//! gap, waiters fall back to polling.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, WatchFilterType, WatchOptions};
use leasehold::store::StoreError;
use leasehold::store::{ListenSessions, ReconnectPause, ReleaseNotifier};
use tokio::time::{Instant, timeout};
use tracing::{debug, warn};

use crate::classify::{classify, timed_out};
use crate::keys::Keys;
use crate::link::Link;

/// How often the watch stream is asked for a progress report.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// Listens until the store is dropped (run as its [`Listener`](leasehold::store::Listener)).
pub(crate) async fn run(link: Arc<Link>, keys: Keys, notifier: Arc<ReleaseNotifier>) {
    let mut sessions = ListenSessions::new(ReconnectPause::default());
    let mut resume = None;
    loop {
        let watching = sessions.next().await;
        let outcome = session(&link, &keys, &notifier, watching, &mut resume).await;
        if let Some((e, pause)) = sessions.ended(outcome) {
            warn!(error = %e, prefix = %keys.root(), ?pause,
                "etcd release notifications interrupted; waiters poll until reconnected");
        }
    }
}

/// One watch stream, until it fails. `resume` is the revision to start from (after the last one
/// a previous stream reported), kept up to date.
async fn session(
    link: &Link,
    keys: &Keys,
    notifier: &ReleaseNotifier,
    watching: &mut bool,
    resume: &mut Option<i64>,
) -> Result<(), StoreError> {
    let budget = link.request_timeout();
    let mut client = link.client().await?;
    let mut options = WatchOptions::new()
        .with_prefix()
        .with_filters([WatchFilterType::NoPut]);
    if let Some(revision) = *resume {
        options = options.with_start_revision(revision);
    }
    let stream = timeout(budget, client.watch(keys.root(), Some(options)))
        .await
        .map_err(|_| timed_out("a watch request", budget))?
        .map_err(classify)?;
    let (mut requests, mut responses) = stream.split();
    *watching = true;
    debug!(prefix = %keys.root(), "watching etcd for releases");
    // A stream resumed from a compacted revision may have missed releases: waiters look again.
    notifier.notify_all();
    let mut heard = Instant::now();
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = responses.message() => {
                let Some(resp) = message.map_err(classify)? else {
                    return Err(StoreError::transient("the etcd watch stream ended"));
                };
                heard = Instant::now();
                if resp.canceled() {
                    if resp.compact_revision() > 0 {
                        *resume = None; // the history to resume from is gone: start from now
                    }
                    return Err(StoreError::transient(format!(
                        "etcd cancelled the watch: {}", resp.cancel_reason()
                    )));
                }
                for event in resp.events() {
                    if event.event_type() != EventType::Delete {
                        continue;
                    }
                    if let Some((lock, _)) = event.kv().and_then(|kv| keys.parse(kv.key())) {
                        notifier.notify(&lock);
                    }
                }
                if let Some(header) = resp.header() {
                    *resume = Some(header.revision() + 1);
                }
            }
            _ = heartbeat.tick() => {
                if heard.elapsed() > HEARTBEAT * 3 {
                    return Err(StoreError::transient("the etcd watch stream went silent"));
                }
                requests.request_progress().await.map_err(classify)?;
            }
        }
    }
}
