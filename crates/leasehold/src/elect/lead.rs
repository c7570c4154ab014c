//! What the stable leader speaks: [`TermEnd`], which a term's action returns to
//! [`Elector::lead`](crate::Elector::lead), and [`LeadershipStream`], with which any process
//! watches who leads (the loops themselves are in `leading`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use futures::future::OptionFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tokio::time::sleep;
use tracing::{info, warn};

use crate::limits::{LimitError, MIN_LEADERSHIP_POLL, check_duration};
use crate::name::LockName;
use crate::store::contract::LeaseStore;
use crate::store::lease::Holder;
use crate::store::signal::ReleaseSignal;

/// How often a [`LeadershipStream`] asks the store for the holder by default, when no release
/// signal wakes it earlier (see [`Elector::leadership`](crate::Elector::leadership)).
pub const DEFAULT_LEADERSHIP_POLL: Duration = Duration::from_secs(1);

/// After it saw a change (or a release signal), a stream looks again this soon, doubling the
/// pause up to its poll interval: a successor is usually elected a few milliseconds after a
/// release, and is then reported with that little lag rather than a whole interval's.
const QUICK_LOOK: Duration = Duration::from_millis(25);

/// What the action of a leadership term asks for when it returns (see
/// [`Elector::lead`](crate::Elector::lead)). Either way the lease is released first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TermEnd {
    /// Step down and contend again: after one retry pause (the elector's
    /// [`RetryPolicy::max`](crate::RetryPolicy::max)), so another node waiting for the lock has
    /// the chance to take over.
    Resign,
    /// Step down and stop leading: `lead` returns `Ok(())`.
    Stop,
}

/// A leadership change seen by a [`LeadershipStream`]: the lock's current holder, or none.
///
/// ```
/// use std::time::SystemTime;
/// use leasehold::{Holder, LockName, lead::Leadership};
/// let t = SystemTime::UNIX_EPOCH;
/// let holder = Holder { slot: 0, owner: "node-a".into(), fence: 7, acquired_at: t, expires_at: t };
/// let change = Leadership::new(LockName::new("reconciler")?, Some(holder));
/// assert_eq!((change.owner(), change.fence(), change.since()), (Some("node-a"), Some(7), Some(t)));
/// assert!(Leadership::new(LockName::new("reconciler")?, None).is_free());
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    /// The lock (the full, namespaced name).
    pub lock: LockName,
    /// The live holder (slot 0), or `None` when the lock is free. Its `expires_at` is as of the
    /// reading that reported the change; renewals are not reported.
    pub leader: Option<Holder>,
}

impl Leadership {
    /// A change to report.
    pub fn new(lock: LockName, leader: Option<Holder>) -> Self {
        Self { lock, leader }
    }
    /// True when nobody holds the lock.
    pub fn is_free(&self) -> bool {
        self.leader.is_none()
    }
    /// The leader's node id.
    pub fn owner(&self) -> Option<&str> {
        self.leader.as_ref().map(|h| h.owner.as_str())
    }
    /// The leader's fence: each new term has a higher one.
    pub fn fence(&self) -> Option<u64> {
        self.leader.as_ref().map(|h| h.fence)
    }
    /// When the leader's term began (its lease was granted), by the store's clock.
    pub fn since(&self) -> Option<SystemTime> {
        self.leader.as_ref().map(|h| h.acquired_at)
    }
}

/// A stream of a lock's leadership changes, for followers and the leader alike, in any process
/// that can reach the store: see [`Elector::leadership`](crate::Elector::leadership).
///
/// It yields the current leadership first, then one item each time the holder changes (a new
/// fence, or the lock becoming free). It never ends by itself. It is lazy and spawns nothing:
/// the store is asked only while the stream is polled, and dropping it stops everything.
#[must_use = "streams do nothing unless polled"]
pub struct LeadershipStream {
    lock: LockName,
    inner: BoxStream<'static, Leadership>,
}

impl std::fmt::Debug for LeadershipStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadershipStream")
            .field("lock", &self.lock)
            .finish_non_exhaustive()
    }
}

impl LeadershipStream {
    /// Validates `poll` and builds the stream for `lock` on `store`.
    pub(crate) fn new(
        store: Arc<dyn LeaseStore>,
        lock: LockName,
        poll: Duration,
    ) -> std::result::Result<Self, LimitError> {
        if poll < MIN_LEADERSHIP_POLL {
            return Err(LimitError::DurationTooShort {
                what: "leadership poll interval",
                value: poll,
                min: MIN_LEADERSHIP_POLL,
                constant: "MIN_LEADERSHIP_POLL",
            });
        }
        check_duration("leadership poll interval", poll)?;
        let watch = Watch {
            signal: store.release_signal(&lock),
            store,
            lock: lock.clone(),
            poll,
            pause: QUICK_LOOK.min(poll),
            seen: None,
            failing: false,
        };
        let inner = futures::stream::unfold(watch, |mut w| async move {
            let change = w.next_change().await;
            Some((change, w))
        })
        .boxed();
        Ok(Self { lock, inner })
    }

    /// The lock watched (the full, namespaced name).
    pub fn lock(&self) -> &LockName {
        &self.lock
    }
}

impl Stream for LeadershipStream {
    type Item = Leadership;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Leadership>> {
        self.inner.poll_next_unpin(cx)
    }
}

/// The state of a leadership watch between readings.
struct Watch {
    store: Arc<dyn LeaseStore>,
    lock: LockName,
    signal: Option<ReleaseSignal>,
    poll: Duration,
    /// The pause before the next reading: short after a change, doubling up to `poll`.
    pause: Duration,
    /// The holder last reported, as `(slot, fence)`; `Some(None)` for a free lock, `None` before
    /// the first report.
    seen: Option<Option<(u32, u64)>>,
    /// True while readings fail (a warning is logged once per run of failures).
    failing: bool,
}

impl Watch {
    async fn next_change(&mut self) -> Leadership {
        loop {
            match self.store.state(&self.lock, 1).await {
                Ok(state) => {
                    if std::mem::take(&mut self.failing) {
                        info!(lock = %self.lock, "watching leadership: the store answers again");
                    }
                    let leader = state.holders.into_iter().find(|h| h.slot == 0);
                    let key = leader.as_ref().map(|h| (h.slot, h.fence));
                    if self.seen != Some(key) {
                        self.seen = Some(key);
                        self.pause = QUICK_LOOK.min(self.poll);
                        return Leadership::new(self.lock.clone(), leader);
                    }
                }
                Err(e) => {
                    if !std::mem::replace(&mut self.failing, true) {
                        warn!(lock = %self.lock, error = %e,
                            "watching leadership: could not read the lock; retrying every poll interval");
                    }
                    self.pause = self.poll;
                }
            }
            let pause = self.pause;
            self.pause = (self.pause * 2).min(self.poll);
            let released = OptionFuture::from(self.signal.as_mut().map(ReleaseSignal::released));
            tokio::select! {
                () = sleep(pause) => {}
                Some(()) = released => self.pause = QUICK_LOOK.min(self.poll),
            }
        }
    }
}
