//! The lease model: tokens, fences, leases and state snapshots.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rand::Rng;

use crate::name::LockName;
use crate::store::hand_off::WaiterId;
use crate::store::period::Period;

/// A random ownership proof (128 bits) minted for each acquisition.
///
/// Extend and release are accepted only with the token of the current holder. Its `Debug`
/// form is abbreviated so logs do not carry the full secret.
///
/// ```
/// use leasehold::store::Token;
/// let (a, b) = (Token::random(), Token::random());
/// assert_ne!(a, b);
/// assert_eq!(a.to_hex().len(), 32);
/// assert_eq!(Token::from_hex(&a.to_hex()), Some(a));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token(u128);

impl Token {
    /// A fresh random token from a cryptographically secure generator.
    pub fn random() -> Self {
        Self(rand::rng().random())
    }
    /// The token as 32 lowercase hex digits, the form stores persist.
    pub fn to_hex(self) -> String {
        format!("{:032x}", self.0)
    }
    /// Parses the 32-hex-digit form.
    pub fn from_hex(text: &str) -> Option<Self> {
        (text.len() == 32).then(|| u128::from_str_radix(text, 16).ok().map(Self))?
    }
    /// The raw value.
    pub fn as_u128(self) -> u128 {
        self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({:08x}…)", (self.0 >> 96) as u32)
    }
}

/// One granted lease, as returned by a store.
///
/// `fence` strictly increases with every grant of the same `(lock, slot)`, across release, expiry,
/// takeover and store restarts (for durable stores); pass it to the resource you protect and have it
/// reject writes that carry a lower fence than one it has seen. Times are the store's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The lock.
    pub lock: LockName,
    /// The slot (always 0 for single-leader locks).
    pub slot: u32,
    /// The owner (node id) recorded with the lease.
    pub owner: String,
    /// The ownership token.
    pub token: Token,
    /// The fencing number.
    pub fence: u64,
    /// When the store granted the lease, by the store's clock.
    pub acquired_at: SystemTime,
    /// When the lease ends unless extended, by the store's clock.
    pub expires_at: SystemTime,
    /// The period id this grant was recorded for in the lock's ledger, when the request claimed
    /// a [`Period`]; `None` otherwise.
    pub period: Option<i64>,
}

/// One attempt to acquire a lease, as the core sends it to a store.
///
/// Build it with [`AcquireRequest::new`] (fields keep growing, so it cannot be built literally
/// outside this crate), and claim a period of the ledger with [`with_period`](Self::with_period).
///
/// ```
/// use std::time::Duration;
/// use leasehold::{LockName, Period, store::Token};
/// use leasehold::store::{AcquireRequest};
///
/// let req = AcquireRequest::new(LockName::new("nightly")?, 1, "node-a", Token::random(), Duration::from_secs(30))
///     .with_period(Period::every(Duration::from_secs(3600))?);
/// assert!(req.check().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AcquireRequest {
    /// The lock.
    pub lock: LockName,
    /// Number of slots: 1 for single-leader locks, `max_leaders` for groups. The store grants the
    /// lowest free slot in `0..slots`.
    pub slots: u32,
    /// The owner to record (the elector's node id, shared).
    pub owner: Arc<str>,
    /// The token; a retried request carries the same token, so a store that finds its own token
    /// already holding a live slot returns that lease instead of contention.
    pub token: Token,
    /// The lease length; expiry is computed by the store's clock.
    pub ttl: Duration,
    /// A period claimed in the lock's ledger (single-slot locks only): granted only if no grant
    /// for the store's current period of it, or a later one, was recorded before.
    pub period: Option<Period>,
    /// How long the caller waits for this attempt's answer
    /// ([`ElectionOptions::attempt_timeout`](crate::ElectionOptions::attempt_timeout)). The core
    /// enforces it around every `try_acquire` (no answer in time is a transient error, and a
    /// grant that arrives later is released); a store may also use it to bound its own I/O.
    pub timeout: Duration,
    /// The elector asking, when it goes on trying after a refusal (its wait is not zero): a
    /// store that [hands off](crate::LeaseStore::hands_off) records it among the lock's waiting
    /// electors when it refuses a single-slot request, and lets it take a free lock kept for it
    /// (see [`HandOff`](crate::store::HandOff)). `None`: the caller does not wait, and is never
    /// recorded (nor ever let in to a lock kept for someone else).
    pub waiter: Option<WaiterId>,
}

impl AcquireRequest {
    /// A request for one of `slots` slots of `lock`, without a period claim.
    pub fn new(
        lock: LockName,
        slots: u32,
        owner: impl Into<Arc<str>>,
        token: Token,
        ttl: Duration,
    ) -> Self {
        Self {
            lock,
            slots,
            owner: owner.into(),
            token,
            ttl,
            period: None,
            timeout: crate::options::DEFAULT_ATTEMPT_TIMEOUT,
            waiter: None,
        }
    }

    /// The same request made by `waiter`, an elector that waits (see
    /// [`waiter`](Self::waiter)).
    #[must_use]
    pub fn waiting_as(mut self, waiter: WaiterId) -> Self {
        self.waiter = Some(waiter);
        self
    }

    /// The same request with another per-attempt timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same request claiming `period` in the lock's ledger.
    #[must_use]
    pub fn with_period(mut self, period: Period) -> Self {
        self.period = Some(period);
        self
    }

    /// The checks every store runs first in `try_acquire`: the slot count against
    /// [`MAX_SLOTS`](crate::limits::MAX_SLOTS), and a period claim only with one slot.
    ///
    /// # Errors
    ///
    /// A permanent [`StoreError`](crate::store::StoreError) carrying a
    /// [`LimitError`](crate::limits::LimitError) or a [`PeriodError`](crate::error::PeriodError).
    pub fn check(&self) -> crate::error::StoreResult<u32> {
        let slots = crate::limits::check_slots(self.slots)?;
        if self.period.is_some() {
            crate::store::period::check_period_slots(slots)?;
        }
        Ok(slots)
    }

    /// Checks the owner with the core's node-id rule
    /// ([`validate_node_id`](crate::options::validate_node_id)): for a store that writes the
    /// owner where a control character or an unbounded length would break its record (etcd,
    /// NATS and ZooKeeper call it after [`check`](Self::check)). Stores that keep any owner as
    /// given — another client's, not bound by this rule — do not.
    ///
    /// # Errors
    ///
    /// A permanent [`StoreError`](crate::store::StoreError): one carrying a
    /// [`LimitError`](crate::limits::LimitError) for an owner longer than
    /// [`MAX_NODE_ID_LEN`](crate::limits::MAX_NODE_ID_LEN), else one saying the owner is blank
    /// or holds control characters.
    pub fn check_owner(&self) -> crate::error::StoreResult<()> {
        match crate::options::validate_node_id(&self.owner) {
            Ok(()) => Ok(()),
            Err(crate::error::OptionsError::Limit(limit)) => Err(limit.into()),
            Err(e) => Err(crate::error::StoreError::permanent(e.to_string())),
        }
    }
}

/// The outcome of an extend request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extension {
    /// Extended; the lease now ends at this store time.
    Extended {
        /// The new expiry.
        expires_at: SystemTime,
    },
    /// The token no longer holds a live lease (expired, released, or taken over).
    NotHeld,
}

/// The outcome of a release request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Released (or shortened to the requested linger).
    Released,
    /// The token no longer held a live lease; nothing was changed.
    NotHeld,
}

/// What [`release_to`](crate::LeaseStore::release_to) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReleasedTo {
    /// The release's answer, as [`release`](crate::LeaseStore::release) gives it.
    pub release: Release,
    /// True if the freed lock is now kept for another elector than the releasing one (a
    /// [`HandOff::Longest`](crate::store::HandOff::Longest) that found a waiter): the releasing elector need not hold back to
    /// let the others go first.
    pub kept_for_another: bool,
}

impl ReleasedTo {
    /// A release's answer, with whether it kept the lock for another elector.
    pub fn new(release: Release, kept_for_another: bool) -> Self {
        Self {
            release,
            kept_for_another,
        }
    }

    /// A release that left the lock to anyone (or kept it for the releasing elector).
    pub fn plain(release: Release) -> Self {
        Self::new(release, false)
    }
}

/// One live holder in a state snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The slot.
    pub slot: u32,
    /// The owner (node id).
    pub owner: String,
    /// The current fence.
    pub fence: u64,
    /// When it was granted.
    pub acquired_at: SystemTime,
    /// When it ends unless extended.
    pub expires_at: SystemTime,
}

impl Holder {
    /// The time left on this lease at store time `now` (zero once expired).
    ///
    /// ```
    /// # use std::time::{Duration, SystemTime};
    /// # use leasehold::Holder;
    /// let t = SystemTime::UNIX_EPOCH;
    /// let h = Holder { slot: 0, owner: "n".into(), fence: 1, acquired_at: t, expires_at: t + Duration::from_secs(5) };
    /// assert_eq!(h.time_left(t + Duration::from_secs(2)), Duration::from_secs(3));
    /// assert_eq!(h.time_left(t + Duration::from_secs(9)), Duration::ZERO);
    /// ```
    pub fn time_left(&self, now: SystemTime) -> Duration {
        self.expires_at.duration_since(now).unwrap_or_default()
    }
}

/// A best-effort snapshot of a lock: for observability, never to decide whether to run work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockState {
    /// The lock (the full, namespaced name).
    pub lock: LockName,
    /// Number of slots asked about.
    pub slots: u32,
    /// Live holders, ordered by slot.
    pub holders: Vec<Holder>,
}

impl LockState {
    /// A snapshot of `lock`'s `slots` with these live `holders` (ordered by slot): what a
    /// store's `state` answers.
    ///
    /// ```
    /// # use leasehold::{LockName, store::LockState};
    /// let s = LockState::new(LockName::new("x")?, 2, Vec::new());
    /// assert_eq!(s, LockState::empty(LockName::new("x")?, 2));
    /// # Ok::<(), leasehold::error::NameError>(())
    /// ```
    pub fn new(lock: LockName, slots: u32, holders: Vec<Holder>) -> Self {
        Self {
            lock,
            slots,
            holders,
        }
    }

    /// The snapshots of `locks`, each with its `slots` and the live holders at the same place
    /// in `holders`: what a store's batched `state_many` answers from its read.
    ///
    /// ```
    /// # use leasehold::{LockName, store::LockState};
    /// let locks = [LockName::new("a")?, LockName::new("b")?];
    /// let states = LockState::each(&locks, 1, vec![Vec::new(), Vec::new()]);
    /// assert_eq!(states, vec![LockState::empty(locks[0].clone(), 1), LockState::empty(locks[1].clone(), 1)]);
    /// # Ok::<(), leasehold::error::NameError>(())
    /// ```
    pub fn each(locks: &[LockName], slots: u32, holders: Vec<Vec<Holder>>) -> Vec<Self> {
        locks
            .iter()
            .zip(holders)
            .map(|(lock, holders)| Self::new(lock.clone(), slots, holders))
            .collect()
    }

    /// An empty snapshot.
    ///
    /// ```
    /// # use leasehold::{LockName, store::LockState};
    /// let s = LockState::empty(LockName::new("x")?, 1);
    /// assert!(s.is_free() && s.available() == 1);
    /// # Ok::<(), leasehold::error::NameError>(())
    /// ```
    pub fn empty(lock: LockName, slots: u32) -> Self {
        Self::new(lock, slots, Vec::new())
    }
    /// True when no slot is held.
    pub fn is_free(&self) -> bool {
        self.holders.is_empty()
    }
    /// The holder of a single-leader lock (slot 0).
    pub fn holder(&self) -> Option<&Holder> {
        self.holders.first()
    }
    /// Slots in use.
    pub fn active(&self) -> u32 {
        u32::try_from(self.holders.len()).unwrap_or(u32::MAX)
    }
    /// Slots free.
    pub fn available(&self) -> u32 {
        self.slots.saturating_sub(self.active())
    }
    /// The time left on a holder's lease at store time `now`; see [`Holder::time_left`].
    pub fn time_left(holder: &Holder, now: SystemTime) -> Duration {
        holder.time_left(now)
    }
}

/// The answer of one acquisition attempt ([`LeaseStore::try_acquire`](crate::LeaseStore::try_acquire)).
/// Its cases are named as the elector's [`Outcome`](crate::Outcome) names them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub enum Acquisition {
    /// Granted: the lease (with [`Lease::period`] set when a period was claimed).
    Elected(Lease),
    /// Every slot is held by someone else: contention; trying again later may succeed. With the
    /// holder the store saw, if its refusal tells (for several slots, the one whose lease ends
    /// first); `None` otherwise.
    Taken(Option<Holder>),
    /// A period was claimed and the lock's ledger already records a grant for that period or a
    /// later one: trying again within the period can never succeed.
    AlreadyRan(crate::store::period::PeriodRecord),
}

impl Acquisition {
    /// The lease, if granted.
    pub fn elected(self) -> Option<Lease> {
        match self {
            Self::Elected(lease) => Some(lease),
            _ => None,
        }
    }

    /// The lease, if granted, by reference.
    pub fn lease(&self) -> Option<&Lease> {
        match self {
            Self::Elected(lease) => Some(lease),
            _ => None,
        }
    }

    /// True for [`Acquisition::Elected`].
    pub fn is_elected(&self) -> bool {
        matches!(self, Self::Elected(_))
    }

    /// True for [`Acquisition::Taken`], whether or not the holder is known.
    pub fn is_taken(&self) -> bool {
        matches!(self, Self::Taken(_))
    }

    /// The ledger record of a refused period claim.
    pub fn already_ran(&self) -> Option<&crate::store::period::PeriodRecord> {
        match self {
            Self::AlreadyRan(record) => Some(record),
            _ => None,
        }
    }
}

impl From<Option<Lease>> for Acquisition {
    fn from(lease: Option<Lease>) -> Self {
        lease.map_or(Self::Taken(None), Self::Elected)
    }
}
