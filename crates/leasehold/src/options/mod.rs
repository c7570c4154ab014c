//! Election options and their validation.

pub(crate) mod error;
pub(crate) mod retry;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use leasehold_rules::check_lease;
pub use leasehold_rules::{MIN_LEASE, MIN_RENEWAL_PERIOD};

use crate::limits::{MAX_NODE_ID_LEN, check_duration, check_node_id_len, check_slots};
use crate::options::retry::RetryPolicy;
pub use error::OptionsError;

/// The lease when none is set: 15 s, renewed every 5 s while the action runs (as client-go's
/// leader election), so that a crashed holder is replaced within about 15 s plus the next
/// contender's attempt.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
/// How long an elector waits for one acquisition attempt's answer unless
/// [`attempt_timeout`](ElectionOptionsBuilder::attempt_timeout) says otherwise.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for election.
///
/// | option | default | rule |
/// |---|---|---|
/// | `max_leaders` | 1 | 1 to [`MAX_SLOTS`](crate::limits::MAX_SLOTS): how many nodes may hold the lock at once, each in its own slot with its own fence |
/// | `wait` | 0 (one attempt, skip at once) | ≥ 0: how long to keep trying before skipping; set it only for mutual exclusion with waiting |
/// | `lease` | 15 s ([`DEFAULT_LEASE`]) | ≥ 1 ms: how long the store keeps the lock without renewal |
/// | `min_lease` | 0 | ≤ `lease`: hold the lock at least this long after acquisition |
/// | `auto_extend` | **on** | renew every `lease/3` (≥ 25 ms) while the action runs (and while a guard is held); needs `lease` ≥ 75 ms |
/// | `cancel_on_lost` | **on** | drop the action's future at the lease's local deadline or loss, before the store can grant the lock again |
/// | `node_id` | `hostname:pid` | recorded as the owner of each lease; 1–255 bytes, no control characters |
/// | `retry` | the store's: 25 ms doubling to 250 ms where its release signal reaches every client, else 4 ms growing by 1.25 to 250 ms ([`RetryPolicy`]); jittered | pause between attempts while waiting; with the store's policy and no `hand_off`, a refused waiter instead sleeps until the holder's lease could end where the store's signal reaches every client (the signal wakes it sooner), and asks again once per `max(1 s, lease / 3)` (sooner when the refusal names an earlier expiry) where it does not |
/// | `attempt_timeout` | 10 s ([`DEFAULT_ATTEMPT_TIMEOUT`]) | > 0: how long one acquisition attempt may take before it counts as a transient store error |
/// | `fair_turns` | **on** | waiters in different processes take turns in rounds (by head starts: no store writes) |
/// | `hand_off` | the store's: on for the memory store, off for stores over a network | with `fair_turns`, a store that keeps a line of waiters (PostgreSQL, Redis, memory) records this elector's waiting and hands the lock to the longest waiter: the fairest turns, at one store write per refused attempt |
///
/// Every duration is at most [`MAX_DURATION`](crate::limits::MAX_DURATION) (100 years) and the node id at
/// most [`MAX_NODE_ID_LEN`] bytes; beyond that `build` answers
/// [`OptionsError::Limit`].
///
/// **The defaults keep the promise "one holder at a time"** for a user who sets no option: a lease
/// is renewed while its action runs, however long that takes, and if renewing fails the action
/// is stopped (its future dropped) at the lease's conservative local deadline, before the store
/// can hand the lock to anyone else. Turning either off is an explicit choice with a risk, see
/// [`auto_extend`](ElectionOptionsBuilder::auto_extend) and
/// [`cancel_on_lost`](ElectionOptionsBuilder::cancel_on_lost).
///
/// The zero `wait` keeps the promise "exactly one node runs it" for a user who sets no option:
/// replicas started together around a job run it once, and the others skip. (The original
/// library waited 5 s, so a second replica waited for the first one's run to end and then ran the
/// job again.) A wait is for mutual exclusion — every caller runs, one at a time — and is chosen
/// explicitly with [`ElectionOptionsBuilder::wait`].
///
/// ```
/// use std::time::Duration;
/// use leasehold::ElectionOptions;
///
/// assert_eq!(ElectionOptions::default().wait(), Duration::ZERO);
/// let opts = ElectionOptions::builder()
///     .wait(Duration::from_secs(30))
///     .lease(Duration::from_secs(30))
///     .min_lease(Duration::from_secs(10))
///     .build()?;
/// assert_eq!(opts.lease(), Duration::from_secs(30));
///
/// let bad = ElectionOptions::builder().lease(Duration::from_secs(1)).min_lease(Duration::from_secs(2)).build();
/// assert!(bad.is_err());
/// # Ok::<(), leasehold::error::OptionsError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionOptions {
    pub(crate) wait: Duration,
    pub(crate) lease: Duration,
    pub(crate) min_lease: Duration,
    pub(crate) auto_extend: bool,
    pub(crate) cancel_on_lost: bool,
    pub(crate) node_id: Arc<str>,
    /// `None`: the store's (see [`RetryPolicy`]).
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) max_leaders: u32,
    pub(crate) attempt_timeout: Duration,
    pub(crate) fair_turns: bool,
    /// `None`: the store's (on where it is process-local).
    pub(crate) hand_off: Option<bool>,
}

impl Default for ElectionOptions {
    fn default() -> Self {
        Self {
            max_leaders: 1,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            wait: Duration::ZERO,
            lease: DEFAULT_LEASE,
            min_lease: Duration::ZERO,
            auto_extend: true,
            cancel_on_lost: true,
            node_id: default_node_id(),
            retry: None,
            fair_turns: true,
            hand_off: None,
        }
    }
}

impl ElectionOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> ElectionOptionsBuilder {
        ElectionOptionsBuilder(Self::default())
    }

    /// A builder starting from these options.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leasehold::ElectionOptions;
    /// let base = ElectionOptions::default();
    /// let quick = base.to_builder().wait(Duration::ZERO).build()?;
    /// assert_eq!(quick.lease(), base.lease());
    /// # Ok::<(), leasehold::error::OptionsError>(())
    /// ```
    pub fn to_builder(&self) -> ElectionOptionsBuilder {
        ElectionOptionsBuilder(self.clone())
    }

    /// How long to keep trying before skipping.
    pub fn wait(&self) -> Duration {
        self.wait
    }
    /// The lease requested from the store.
    pub fn lease(&self) -> Duration {
        self.lease
    }
    /// The minimum time the lock stays held after acquisition.
    pub fn min_lease(&self) -> Duration {
        self.min_lease
    }
    /// Whether a watchdog renews the lease while the action runs.
    pub fn auto_extend(&self) -> bool {
        self.auto_extend
    }
    /// Whether the action is cancelled when the lease is lost.
    pub fn cancel_on_lost(&self) -> bool {
        self.cancel_on_lost
    }
    /// The owner recorded with each lease.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }
    /// The pause policy between attempts set with
    /// [`ElectionOptionsBuilder::retry`]; `None` when the store chooses (see [`RetryPolicy`]).
    pub fn retry(&self) -> Option<&RetryPolicy> {
        self.retry.as_ref()
    }

    /// The pause policy in force: the one set, else the store's default (see [`RetryPolicy`]),
    /// which depends on whether the store's release signal reaches every client.
    pub(crate) fn retry_for(&self, signal_reaches_every_client: bool) -> RetryPolicy {
        match (self.retry, signal_reaches_every_client) {
            (Some(set), _) => set,
            (None, true) => RetryPolicy::default(),
            (None, false) => RetryPolicy::polling(),
        }
    }

    /// The longest pause of the policy in force, whatever the store.
    pub(crate) fn longest_pause(&self) -> Duration {
        self.retry.map_or_else(
            || {
                RetryPolicy::default()
                    .max()
                    .max(RetryPolicy::polling().max())
            },
            |set| set.max(),
        )
    }
    /// How many nodes may hold the lock at once (1: a single leader).
    pub fn max_leaders(&self) -> u32 {
        self.max_leaders
    }
    /// How long one acquisition attempt may take.
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }
    /// Whether waiters in different processes take turns (see
    /// [`ElectionOptionsBuilder::fair_turns`]).
    pub fn fair_turns(&self) -> bool {
        self.fair_turns
    }
    /// Whether turns between processes go through the store's line of waiters, if set
    /// (`None`: the store's default; see [`ElectionOptionsBuilder::hand_off`]).
    pub fn hand_off(&self) -> Option<bool> {
        self.hand_off
    }

    fn validate(&self) -> Result<(), OptionsError> {
        if self.max_leaders == 0 {
            return Err(OptionsError::NoLeaders);
        }
        check_slots(self.max_leaders)?;
        check_duration("attempt_timeout", self.attempt_timeout)?;
        if self.attempt_timeout.is_zero() {
            return Err(OptionsError::ZeroAttemptTimeout);
        }
        check_duration("wait", self.wait)?;
        check_duration("lease", self.lease)?;
        check_duration("min_lease", self.min_lease)?;
        check_lease(self.lease, self.min_lease, self.auto_extend)?;
        validate_node_id(&self.node_id)?;
        self.retry.as_ref().map_or(Ok(()), RetryPolicy::validate)
    }
}

/// Builder for [`ElectionOptions`]; validated by [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use]
pub struct ElectionOptionsBuilder(ElectionOptions);

impl ElectionOptionsBuilder {
    /// How long to keep trying before skipping (default 0: one attempt, then skip at once).
    ///
    /// Set it only when every caller should run, one after the other (mutual exclusion): with a
    /// wait, a contender that finds the lock held waits for the holder to finish and then runs the
    /// action again — which is what a job meant to run once must not do.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.0.wait = wait;
        self
    }
    /// The lease (default [`DEFAULT_LEASE`], 15 s): how long the store keeps the lock if this
    /// node stops renewing it — the time a crashed holder keeps the job from running elsewhere.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.0.lease = lease;
        self
    }
    /// Keep the lock at least this long after acquisition (default 0).
    pub fn min_lease(mut self, min_lease: Duration) -> Self {
        self.0.min_lease = min_lease;
        self
    }
    /// Renew the lease while the action runs, every `lease/3` (default **on**).
    ///
    /// Off, the lease is never renewed: it bounds the action's run time. With `cancel_on_lost`
    /// (on by default) an action longer than the lease is then stopped at the local deadline;
    /// with both off, it goes on running after the store frees the lock, and a node whose timer
    /// fires later runs the same job beside it. Turn it off only for actions that must end
    /// within one lease anyway.
    pub fn auto_extend(mut self, on: bool) -> Self {
        self.0.auto_extend = on;
        self
    }
    /// Stop the action when the lease is lost (default **on**): its future is dropped at the
    /// loss — at the latest at the lease's conservative local deadline, before the store can grant
    /// the lock to another node — and the run answers [`Error::Lost`](crate::Error::Lost).
    ///
    /// Off, the action keeps running after the loss, **beside the next holder**: only for an
    /// action that watches [`LeaderContext::lost`](crate::LeaderContext::lost) or
    /// [`is_lost`](crate::LeaderContext::is_lost) and stops by itself, or whose every write is
    /// fenced at the resource. The [blocking facade](crate::blocking) cannot drop a closure, so
    /// there the closure must check `ctx.is_lost()` itself.
    pub fn cancel_on_lost(mut self, on: bool) -> Self {
        self.0.cancel_on_lost = on;
        self
    }
    /// The owner recorded with each lease (default `hostname:pid`): 1 to
    /// [`MAX_NODE_ID_LEN`] bytes without control characters (see
    /// [`validate_node_id`]).
    pub fn node_id(mut self, node_id: impl Into<String>) -> Self {
        self.0.node_id = Arc::from(node_id.into());
        self
    }
    /// The pause policy between attempts (default: the store's, see [`RetryPolicy`]).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.0.retry = Some(retry);
        self
    }
    /// How many nodes may hold the lock at once (default 1, at most
    /// [`MAX_SLOTS`](crate::limits::MAX_SLOTS)). With N, up to N holders run at once, each in its own
    /// slot ([`LeaderContext::slot`](crate::LeaderContext::slot)) with its own fence; period claims
    /// ([`Elector::run_once_per`](crate::Elector::run_once_per), aligned
    /// [`Schedule`](crate::Schedule) jobs) need 1.
    ///
    /// ```
    /// use leasehold::{ElectionOptions, error::OptionsError};
    /// assert_eq!(ElectionOptions::builder().max_leaders(3).build()?.max_leaders(), 3);
    /// assert!(matches!(ElectionOptions::builder().max_leaders(0).build(), Err(OptionsError::NoLeaders)));
    /// assert!(ElectionOptions::builder().max_leaders(leasehold::limits::MAX_SLOTS + 1).build().is_err());
    /// # Ok::<(), OptionsError>(())
    /// ```
    pub fn max_leaders(mut self, n: u32) -> Self {
        self.0.max_leaders = n;
        self
    }
    /// How long one acquisition attempt may take before the elector gives up on its answer
    /// (default [`DEFAULT_ATTEMPT_TIMEOUT`]): it then counts as a transient store error (retried
    /// within `wait`), and a lease the store grants later is released. Stores receive it in
    /// [`AcquireRequest::timeout`](crate::store::AcquireRequest::timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold::{ElectionOptions, error::OptionsError};
    /// let o = ElectionOptions::builder().attempt_timeout(Duration::from_secs(2)).build()?;
    /// assert_eq!(o.attempt_timeout(), Duration::from_secs(2));
    /// assert!(ElectionOptions::builder().attempt_timeout(Duration::ZERO).build().is_err());
    /// # Ok::<(), OptionsError>(())
    /// ```
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.0.attempt_timeout = timeout;
        self
    }
    /// Whether this elector's waiters take turns with other processes' (default **on**). On, a
    /// process that wins a single-slot lock from another process gives each of its waiting tasks
    /// one turn and then lets the other processes' waiters go first (by a head start after its
    /// round, or by [`hand_off`](Self::hand_off) where that is on): a task's share of a contended
    /// lock does not depend on how many tasks its process runs. Off, its tasks still take turns
    /// among themselves (in arrival order), but each attempt is first come, first served between
    /// processes.
    ///
    /// ```
    /// use leasehold::ElectionOptions;
    /// assert!(ElectionOptions::default().fair_turns());
    /// let o = ElectionOptions::builder().fair_turns(false).build()?;
    /// assert!(!o.fair_turns());
    /// # Ok::<(), leasehold::error::OptionsError>(())
    /// ```
    pub fn fair_turns(mut self, on: bool) -> Self {
        self.0.fair_turns = on;
        self
    }
    /// Whether turns between processes go through the store's line of waiters (only with
    /// [`fair_turns`](Self::fair_turns), and only on a store that
    /// [hands off](crate::LeaseStore::hands_off): PostgreSQL, Redis, memory). On, every refused
    /// attempt of a waiting task records this elector in the lock's line — a store write per
    /// refusal, by every follower, while nothing else changes — and a release keeps the lock
    /// for the longest waiter. Off, waiters write nothing while they wait, and processes take
    /// turns by head starts, as on every other store. The default is the store's: on for a
    /// [process-local](crate::LeaseStore::is_process_local) store (the memory store, where a
    /// write costs nothing), off for a store over a network. Fixed when
    /// [`Elector::with_options`](crate::Elector::with_options) builds the elector: its
    /// [reconfigured](crate::Elector::reconfigured) copies and tenants keep it.
    ///
    /// ```
    /// use leasehold::ElectionOptions;
    /// assert_eq!(ElectionOptions::default().hand_off(), None);
    /// let o = ElectionOptions::builder().hand_off(true).build()?;
    /// assert_eq!(o.hand_off(), Some(true));
    /// # Ok::<(), leasehold::error::OptionsError>(())
    /// ```
    pub fn hand_off(mut self, on: bool) -> Self {
        self.0.hand_off = Some(on);
        self
    }
    /// Validates and returns the options.
    pub fn build(self) -> Result<ElectionOptions, OptionsError> {
        self.0.validate()?;
        Ok(self.0)
    }
}

/// Checks a node id: non-empty, not only whitespace, no control characters, and at most
/// [`MAX_NODE_ID_LEN`] bytes — what every store can record as a lease's
/// owner. The options builders apply it; it is public so that a program (or a command-line flag)
/// can reject a bad id where it enters.
///
/// # Errors
///
/// [`OptionsError::BadNodeId`] for an empty id or one with control characters,
/// [`OptionsError::Limit`] ([`LimitError::NodeIdTooLong`](crate::limits::LimitError::NodeIdTooLong)) for one that is too long.
///
/// ```
/// use leasehold::{limits::LimitError, error::OptionsError, options::validate_node_id};
///
/// assert!(validate_node_id("web-1:4242").is_ok());
/// assert!(matches!(validate_node_id(""), Err(OptionsError::BadNodeId(_))));
/// assert!(matches!(validate_node_id("a\tb"), Err(OptionsError::BadNodeId(_))));
/// assert!(matches!(
///     validate_node_id(&"n".repeat(256)),
///     Err(OptionsError::Limit(LimitError::NodeIdTooLong { len: 256, max: 255, .. }))
/// ));
/// ```
pub fn validate_node_id(id: &str) -> Result<(), OptionsError> {
    if id.trim().is_empty() || id.chars().any(char::is_control) {
        return Err(OptionsError::BadNodeId(id.chars().take(64).collect()));
    }
    check_node_id_len(id)?;
    Ok(())
}

/// The default node id, `hostname:pid`, computed once per process (the host name is shortened
/// if needed so that the id fits [`MAX_NODE_ID_LEN`]).
///
/// ```
/// let id = leasehold::options::default_node_id();
/// assert!(id.ends_with(&format!(":{}", std::process::id())));
/// ```
pub fn default_node_id() -> Arc<str> {
    static ID: OnceLock<Arc<str>> = OnceLock::new();
    Arc::clone(ID.get_or_init(|| {
        let host = gethostname::gethostname().to_string_lossy().into_owned();
        let host = if host.trim().is_empty() || host.chars().any(char::is_control) {
            "localhost".to_owned()
        } else {
            host
        };
        let pid = format!(":{}", std::process::id());
        let mut end = host.len().min(MAX_NODE_ID_LEN - pid.len());
        while !host.is_char_boundary(end) {
            end -= 1;
        }
        Arc::from(format!("{}{pid}", &host[..end]))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_policy_follows_the_stores_signal_unless_one_is_set() -> Result<(), OptionsError> {
        let opts = ElectionOptions::default();
        assert_eq!(opts.retry(), None);
        assert_eq!(opts.retry_for(true), RetryPolicy::default());
        assert_eq!(opts.retry_for(false), RetryPolicy::polling());
        let set = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(2), 0.0)?;
        let opts = ElectionOptions::builder().retry(set).build()?;
        assert_eq!(opts.retry(), Some(&set));
        assert_eq!(opts.retry_for(false), set);
        assert_eq!(opts.retry_for(true), set);
        assert_eq!(opts.longest_pause(), Duration::from_secs(2));
        Ok(())
    }

    #[test]
    fn defaults_match_the_design() -> Result<(), OptionsError> {
        let o = ElectionOptions::builder().build()?;
        assert_eq!(
            (o.wait(), o.lease(), o.min_lease()),
            (Duration::ZERO, Duration::from_secs(15), Duration::ZERO)
        );
        assert!(o.auto_extend() && o.cancel_on_lost());
        assert_eq!(o.max_leaders(), 1);
        Ok(())
    }

    #[test]
    fn each_invariant_has_its_error() {
        use leasehold_rules::LeaseError;

        let b = ElectionOptions::builder;
        assert_eq!(
            b().lease(Duration::ZERO).build(),
            Err(OptionsError::Lease(LeaseError::TooShort {
                lease: Duration::ZERO
            }))
        );
        assert!(matches!(
            b().lease(Duration::from_secs(1))
                .min_lease(Duration::from_secs(2))
                .build(),
            Err(OptionsError::Lease(LeaseError::MinLeaseExceedsLease { .. }))
        ));
        assert!(
            b().lease(Duration::from_secs(1))
                .min_lease(Duration::from_secs(1))
                .build()
                .is_ok()
        );
        assert!(matches!(
            b().lease(Duration::from_millis(50))
                .auto_extend(true)
                .build(),
            Err(OptionsError::Lease(
                LeaseError::TooShortForAutoExtend { .. }
            ))
        ));
        // On by default: a short lease without renewal is asked for explicitly.
        assert!(matches!(
            b().lease(Duration::from_millis(50)).build(),
            Err(OptionsError::Lease(
                LeaseError::TooShortForAutoExtend { .. }
            ))
        ));
        assert!(
            b().lease(Duration::from_millis(50))
                .auto_extend(false)
                .build()
                .is_ok()
        );
        assert!(matches!(
            b().node_id(" ").build(),
            Err(OptionsError::BadNodeId(_))
        ));
        assert!(matches!(
            b().node_id("a\nb").build(),
            Err(OptionsError::BadNodeId(_))
        ));
        assert_eq!(b().max_leaders(0).build(), Err(OptionsError::NoLeaders));
        assert!(matches!(
            b().max_leaders(crate::limits::MAX_SLOTS + 1).build(),
            Err(OptionsError::Limit(
                crate::limits::LimitError::TooManySlots { .. }
            ))
        ));
    }
}
