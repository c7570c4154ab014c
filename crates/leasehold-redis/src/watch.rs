//! Release notifications: one pub/sub connection per store, feeding a `ReleaseNotifier`.
//!
//! The release scripts `PUBLISH` the lock name on `<prefix>:released`. A background task keeps
//! one subscriber connection open, pings it so a silently dead connection is noticed, and wakes
//! the local waiters of each released lock. While it reconnects, waiters fall back to polling.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use leasehold::LockName;
use leasehold::store::ReleaseNotifier;
use redis::{Client, ProtocolVersion, RedisError};
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};
use tracing::{debug, warn};

/// How often the subscriber connection is pinged.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// Pauses between reconnection attempts: the first, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// The subscriber task; stopped when dropped (with the store).
#[derive(Debug)]
pub(crate) struct Subscriber(JoinHandle<()>);

/// What the subscriber needs to know.
pub(crate) struct Subscription {
    pub(crate) client: Client,
    pub(crate) channel: String,
    pub(crate) notifier: Arc<ReleaseNotifier>,
    pub(crate) connect_timeout: Duration,
    pub(crate) response_timeout: Duration,
}

impl Subscriber {
    /// Starts the subscriber task, if a tokio runtime is available.
    pub(crate) fn start(subscription: Subscription) -> Option<Self> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        Some(Self(handle.spawn(run(subscription))))
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A client for the subscriber: RESP2, since the pub/sub connection type speaks RESP2.
pub(crate) fn pubsub_client(client: &Client) -> Result<Client, RedisError> {
    let info = client.get_connection_info().clone();
    let redis = info
        .redis_settings()
        .clone()
        .set_protocol(ProtocolVersion::RESP2);
    Client::open(info.set_redis_settings(redis))
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
}

async fn run(sub: Subscription) {
    let client = match pubsub_client(&sub.client) {
        Ok(c) => c,
        Err(e) => {
            warn!(error = %e, "cannot build the Redis subscriber; waiters will poll");
            return;
        }
    };
    let mut pause = FIRST_PAUSE;
    loop {
        let mut subscribed = false;
        let outcome = session(&client, &sub, &mut subscribed).await;
        if subscribed {
            pause = FIRST_PAUSE;
        }
        if let Err(e) = outcome {
            warn!(error = %e, channel = %sub.channel, ?pause,
                "Redis release notifications interrupted; waiters poll until reconnected");
        }
        sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// One subscriber connection, until it fails.
async fn session(
    client: &Client,
    sub: &Subscription,
    subscribed: &mut bool,
) -> Result<(), RedisError> {
    let pubsub = timeout(sub.connect_timeout, client.get_async_pubsub())
        .await
        .map_err(|_| timed_out())??;
    let (mut sink, mut stream) = pubsub.split();
    timeout(sub.response_timeout, sink.subscribe(&sub.channel))
        .await
        .map_err(|_| timed_out())??;
    *subscribed = true;
    debug!(channel = %sub.channel, "subscribed to Redis release notifications");
    // Releases while nobody listened were not heard: waiters look again.
    sub.notifier.notify_all();
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    heartbeat.tick().await;
    loop {
        tokio::select! {
            message = stream.next() => {
                let Some(message) = message else {
                    return Err(RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset)));
                };
                match message.get_payload::<String>().ok().and_then(|p| LockName::new(p).ok()) {
                    Some(lock) => sub.notifier.notify(&lock),
                    None => debug!("ignoring a malformed release notification"),
                }
            }
            _ = heartbeat.tick() => {
                timeout(sub.response_timeout, sink.ping::<redis::Value>())
                    .await
                    .map_err(|_| timed_out())??;
            }
        }
    }
}
