//! Hand-off: a store that keeps a line of the electors waiting for a single-slot lock, so that
//! a release can keep the lock for a chosen one of them instead of leaving it to whoever asks
//! first ([`LeaseStore::hands_off`](crate::LeaseStore::hands_off)).
//!
//! The core uses it for turns between processes (see the elector's rounds in
//! `docs/leasehold.md`): within an elector's round each release keeps the lock for that
//! elector's next task, and the round's last release keeps it for the elector that has waited
//! longest. A kept lock is free — no lease, nothing to renew — but for [`HAND_OFF_HOLD`] the
//! store refuses it to every other single-slot request, as if it were held. The kept-for
//! elector takes it with an ordinary acquisition; if it does not come in time, anyone may.
//!
//! Hand-off decides only *who may take a free lock first*: it never grants, never extends,
//! never shortens a lease, and a store that ignores it (or an older version of one) is only
//! less fair, never less safe.
//!
//! ```
//! use leasehold::store::{HandOff, WaiterId};
//! let me = WaiterId::random();
//! assert_ne!(me, WaiterId::random());
//! assert_eq!(WaiterId::from_hex(&me.to_hex()), Some(me));
//! assert_eq!(HandOff::default(), HandOff::Anyone);
//! assert_eq!(HandOff::Keep(me).waiter(), Some(me));
//! ```

use std::fmt;
use std::time::Duration;

use rand::Rng as _;
use tokio::time::Instant;

/// How long a release's hand-off keeps a free lock for the chosen elector: other single-slot
/// requests are refused as if it were held until then, or until the kept-for elector takes it.
///
/// Why 50 ms: the kept-for elector is woken by the store's release signal and answers with one
/// acquisition — a few milliseconds even across a data centre — so the hold is many times what
/// it needs; and when it has gone (its wait ran out between its last attempt and the release)
/// the lock lies free for at most this long, once: the store then forgets it as a waiter.
pub const HAND_OFF_HOLD: Duration = Duration::from_millis(50);

/// How long after its last refused attempt an elector still counts as waiting for a lock.
///
/// Longer than the longest pause between the attempts of a waiter on a store with a release
/// signal ([`RetryPolicy::default`](crate::RetryPolicy)'s 250 ms, eight times over): a waiter
/// that pauses longer (a custom retry policy) simply drops out of the line and joins it again,
/// at the back, with its next refused attempt. Nothing else depends on it being exact.
pub const WAITING_FRESH: Duration = Duration::from_secs(2);

/// The most waiting electors a store records per lock; further ones are not recorded (they
/// still contend, first come first served, and are recorded once the line has room).
///
/// It bounds the store's work for the round's last release, which looks through the line for the
/// longest waiter (on Redis one read of the lock's hash), whatever the number of processes.
pub const MAX_WAITERS: usize = 64;

/// Identifies one elector (with its clones and tenants: everything sharing its local line) among
/// a lock's waiters. Random per elector, so that two electors of one process, or two processes
/// configured with the same node id, still take turns with each other.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaiterId(u64);

impl Default for WaiterId {
    /// A fresh random id, as [`random`](Self::random).
    fn default() -> Self {
        Self::random()
    }
}

impl WaiterId {
    /// A fresh random id.
    pub fn random() -> Self {
        Self(rand::rng().random())
    }
    /// The id as 16 lowercase hex digits, the form stores persist.
    pub fn to_hex(self) -> String {
        format!("{:016x}", self.0)
    }
    /// Parses the 16-hex-digit form.
    pub fn from_hex(text: &str) -> Option<Self> {
        (text.len() == 16).then(|| u64::from_str_radix(text, 16).ok().map(Self))?
    }
    /// The raw value.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for WaiterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WaiterId({:016x})", self.0)
    }
}

/// Who a release leaves a freed single-slot lock to, on a store that
/// [hands off](crate::LeaseStore::hands_off) (every other store frees it for anyone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HandOff {
    /// Whoever asks first: a plain release.
    #[default]
    Anyone,
    /// Kept for this elector (the releasing one: its next task in line) for [`HAND_OFF_HOLD`].
    /// The store's release signal is not sent: the others would only be refused.
    Keep(WaiterId),
    /// Kept for the elector that has waited longest, other than this one (the releasing one),
    /// for [`HAND_OFF_HOLD`]; for anyone if no other elector waits. Its release signal is sent.
    Longest(WaiterId),
}

impl HandOff {
    /// The elector named by the hand-off, if any.
    pub fn waiter(self) -> Option<WaiterId> {
        match self {
            Self::Anyone => None,
            Self::Keep(w) | Self::Longest(w) => Some(w),
        }
    }
}

/// The line of one lock's waiting electors, kept in memory: what [`MemoryStore`]
/// (crate::MemoryStore) keeps per lock, and the rules every store that hands off follows (the
/// Redis store's scripts implement the same rules in Lua).
#[derive(Debug, Clone, Default)]
pub(crate) struct WaitLine {
    /// The elector the lock is kept for, and until when.
    kept: Option<(WaiterId, Instant)>,
    /// Waiting electors: id, when it started waiting, when it was last refused.
    waiting: Vec<(WaiterId, Instant, Instant)>,
}

impl WaitLine {
    /// True if a free lock is kept, at `now`, for an elector other than `who`.
    pub(crate) fn kept_from(&self, who: Option<WaiterId>, now: Instant) -> bool {
        self.kept
            .is_some_and(|(w, until)| until > now && Some(w) != who)
    }

    /// A request by `who` was refused at `now`: it waits (from its first refusal, unless its
    /// record went stale), if the line has room.
    pub(crate) fn refused(&mut self, who: WaiterId, now: Instant) {
        if let Some(entry) = self.waiting.iter_mut().find(|e| e.0 == who) {
            if now - entry.2 >= WAITING_FRESH {
                entry.1 = now;
            }
            entry.2 = now;
        } else if self.waiting.len() < MAX_WAITERS {
            self.waiting.push((who, now, now));
        }
    }

    /// `who` (if it is an elector that waits) was granted the lock at `now`: it no longer
    /// waits, and a keep for someone else that lapsed drops that one from the line too.
    pub(crate) fn granted(&mut self, who: Option<WaiterId>, now: Instant) {
        if let Some((w, until)) = self.kept.take()
            && until <= now
            && Some(w) != who
        {
            self.waiting.retain(|e| e.0 != w);
        }
        if let Some(who) = who {
            self.waiting.retain(|e| e.0 != who);
        }
    }

    /// The lock was freed at `now` with `to`: what it is kept for from now on. True if it is
    /// now kept for another elector than the releasing one.
    pub(crate) fn freed(&mut self, to: HandOff, now: Instant) -> bool {
        self.waiting.retain(|e| now - e.2 < WAITING_FRESH);
        let keep_for = match to {
            HandOff::Anyone => None,
            HandOff::Keep(w) => Some(w),
            HandOff::Longest(me) => self
                .waiting
                .iter()
                .filter(|e| e.0 != me)
                .min_by_key(|e| e.1)
                .map(|e| e.0),
        };
        if let Some(w) = keep_for {
            self.kept = Some((w, crate::limits::deadline_after(now, HAND_OFF_HOLD)));
        }
        matches!(to, HandOff::Longest(_)) && keep_for.is_some()
    }

    /// Nothing is kept any more (a forced release frees the lock for anyone).
    pub(crate) fn clear_keep(&mut self) {
        self.kept = None;
    }
}
