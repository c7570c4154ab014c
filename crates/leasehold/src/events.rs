//! Election events, broadcast to any number of listeners.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::broadcast;

use crate::limits::EVENT_BUFFER;
use crate::name::LockName;

/// Why a lease was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LostReason {
    /// The store said the token no longer holds the lease (expired, released or taken over).
    NotHeld,
    /// The lease could not be renewed before the conservative local deadline, so it can no
    /// longer be proven; the store may hand the lock on soon after.
    DeadlinePassed,
    /// Renewal failed with a permanent store error.
    StoreFailed,
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotHeld => "the store no longer holds it for this owner",
            Self::DeadlinePassed => "it could not be renewed before its local deadline",
            Self::StoreFailed => "renewal failed with a permanent store error",
        })
    }
}

/// Something that happened to a lock on this node.
///
/// Listening never affects the action: events are sent without waiting, and a listener that falls
/// more than [`EVENT_BUFFER`] events behind misses the oldest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// This node acquired the lock (before the action starts).
    Elected {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The fence of the new lease.
        fence: u64,
        /// The owner recorded.
        owner: Arc<str>,
        /// The store's expiry.
        expires_at: SystemTime,
    },
    /// This node gave up waiting for the lock.
    Skipped {
        /// The lock.
        lock: LockName,
    },
    /// A run claiming a period was refused by the lock's period ledger: a run for this period
    /// (or a later one) was already granted, at `record.at` to `record.by`. Not contention;
    /// nothing waited.
    AlreadyRan {
        /// The lock.
        lock: LockName,
        /// The ledger's record.
        record: crate::store::period::PeriodRecord,
    },
    /// The lease was renewed.
    Extended {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The fence.
        fence: u64,
        /// The new expiry.
        expires_at: SystemTime,
    },
    /// Renewing the lease failed for the first time since it last succeeded: the store
    /// answered with an error, or did not answer within a renewal period (a third of the lease).
    /// The watchdog keeps retrying; unless a retry succeeds before the local deadline, [`Lost`]
    /// follows. Sent once per run of failures (a later success starts a new run), so during a
    /// store outage it comes first, as an early warning.
    ///
    /// [`Lost`]: Self::Lost
    RenewalFailing {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The fence.
        fence: u64,
        /// What went wrong (the store's error, or that it did not answer in time).
        error: String,
        /// The store's expiry as last seen: the lease ends then unless renewed.
        expires_at: SystemTime,
    },
    /// The lease was lost while held.
    Lost {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The fence.
        fence: u64,
        /// Why.
        reason: LostReason,
    },
    /// The lease was released (or shortened to the remaining minimum lease).
    Released {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The fence.
        fence: u64,
        /// How long the store keeps it held for the minimum lease.
        linger: Duration,
    },
}

impl Event {
    /// The lock the event is about.
    pub fn lock(&self) -> &LockName {
        match self {
            Self::Elected { lock, .. }
            | Self::Skipped { lock }
            | Self::AlreadyRan { lock, .. }
            | Self::Extended { lock, .. }
            | Self::RenewalFailing { lock, .. }
            | Self::Lost { lock, .. }
            | Self::Released { lock, .. } => lock,
        }
    }

    /// A short lowercase name: `elected`, `skipped`, `already_ran`, `extended`, `renewal_failing`, `lost`,
    /// `released`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Elected { .. } => "elected",
            Self::Skipped { .. } => "skipped",
            Self::AlreadyRan { .. } => "already_ran",
            Self::Extended { .. } => "extended",
            Self::RenewalFailing { .. } => "renewal_failing",
            Self::Lost { .. } => "lost",
            Self::Released { .. } => "released",
        }
    }
}

/// The sending side shared by an elector and its clones.
#[derive(Debug, Clone)]
pub(crate) struct Events(Arc<Channel>);

#[derive(Debug)]
struct Channel {
    sender: broadcast::Sender<Event>,
    /// Set at the first subscription: until then no event is built and the channel (whose
    /// receiver count sits behind a mutex) is not asked.
    subscribed: AtomicBool,
}

impl Default for Events {
    fn default() -> Self {
        Self(Arc::new(Channel {
            sender: broadcast::channel(EVENT_BUFFER).0,
            subscribed: AtomicBool::new(false),
        }))
    }
}

impl Events {
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        // Before subscribing: an event sent after `subscribe` returns must not be skipped.
        self.0.subscribed.store(true, Ordering::Release);
        self.0.sender.subscribe()
    }

    /// Sends an event, building it only if someone listens.
    pub(crate) fn emit(&self, make: impl FnOnce() -> Event) {
        if self.0.subscribed.load(Ordering::Acquire) && self.0.sender.receiver_count() > 0 {
            let _ = self.0.sender.send(make());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn skipped() -> Event {
        Event::Skipped {
            lock: LockName::new("job").unwrap_or_else(|e| panic!("{e}")),
        }
    }

    #[test]
    fn events_are_built_only_once_someone_listens() {
        let events = Events::default();
        let built = Cell::new(0);
        let make = || {
            built.set(built.get() + 1);
            skipped()
        };
        events.emit(make);
        assert_eq!(built.get(), 0, "nobody listens: not built");
        let mut rx = events.clone().subscribe();
        events.emit(make);
        assert_eq!(built.get(), 1);
        assert_eq!(rx.try_recv().ok(), Some(skipped()));
        drop(rx);
        events.emit(make);
        assert_eq!(built.get(), 1, "the listener left: not built again");
    }
}
