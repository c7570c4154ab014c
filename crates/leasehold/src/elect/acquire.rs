//! The acquisition loop: the one place that tries a lock until it is won, refused for good, or
//! the patience runs out. It serves every way of getting a lease — a bounded wait (`run`,
//! `try_acquire`, `run_once_per`) and the stable leader's unbounded campaign (`lead`).
//!
//! The loop itself holds only the retry policy and the store's release signal. It asks two
//! seams, each behind one door:
//!
//! * [`TurnTaking`] (module `turns`): whether this task may try now, whom to name as waiter,
//!   and how to pause between attempts, so that an elector's own tasks and other processes take
//!   turns fairly;
//! * [`Attempts`] (module `cleanup`): sends each attempt so that no lease is left behind by a
//!   transient error, an attempt timed out, or the caller's future dropped mid-attempt.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use tracing::debug;

use crate::cleanup::attempts::{Attempted, Attempts};
use crate::elect::elector::Elector;
use crate::elect::run::Patience;
use crate::error::{Error, Result, StoreError};
use crate::events::Event;
use crate::hold::guard::LeaderGuard;
use crate::metrics::LockMetrics;
use crate::name::LockName;
use crate::outcome::Outcome;
use crate::store::lease::Holder;
use crate::store::lease::{AcquireRequest, Token};
use crate::store::period::Period;
use crate::store::signal::{ReleaseSignal, SignalReach};
use crate::turns::{TurnRules, TurnTaking};

impl Elector {
    /// Tries `lock` (claiming `period` in its ledger, if given) with `patience`. A permanent
    /// store error ends it at once, as does a refusal by the ledger (waiting can never make that
    /// succeed).
    pub(crate) async fn acquire_loop(
        &self,
        lock: &LockName,
        period: Option<Period>,
        patience: Patience,
    ) -> Result<Outcome<LeaderGuard>> {
        let opts = &*self.options;
        let shared = &*self.shared;
        let metrics = shared.metrics.get(lock);
        metrics.attempt();
        let start = Instant::now();
        let campaign = patience == Patience::Campaign;
        let deadline = (!campaign).then(|| crate::limits::deadline_after(start, opts.wait));
        let waits = campaign || !opts.wait.is_zero();
        let mut signal = if waits {
            shared.store.release_signal(lock)
        } else {
            None
        };
        let everyone = reaches_every_client(signal.as_ref());
        let retry = opts.retry_for(everyone);
        let quiet = Quiet::choose(
            everyone,
            opts.retry.is_none() && !(opts.fair_turns && shared.turns.hands_off()),
            opts.lease,
        );
        let fair = opts.fair_turns && !campaign;
        let mut turns = TurnTaking::new(
            &shared.turns,
            &shared.held,
            lock,
            self.slots,
            TurnRules {
                line: waits && !campaign,
                yields: fair,
                rounds: fair && self.slots == 1 && everyone,
                named: waits && opts.fair_turns && shared.turns.hands_off(),
            },
        );
        let mut req = self.request(lock);
        req.period = period;
        let mut attempts = Attempts::new(shared, opts, lock);
        let mut last_error = None;
        let mut last_holder = None;
        let mut attempt = 0u32;
        let mut quiet_pause = None;
        loop {
            if !turns.before_attempt(deadline).await {
                return self.give_up(lock, &metrics, last_error, last_holder);
            }
            let sent_at = Instant::now();
            if campaign
                && attempts
                    .in_doubt_since()
                    .is_some_and(|t| sent_at - t >= opts.lease / 2)
            {
                // A lease this token got back now would count from that first unanswered
                // attempt and be worth little or nothing.
                attempts.start_afresh(&mut req);
            }
            req.waiter = turns.waiter();
            let failed = match attempts.send(&mut req, sent_at).await {
                Ok(Attempted::Granted {
                    lease,
                    counted_from,
                }) => {
                    turns.won(sent_at.elapsed());
                    return Ok(Outcome::Elected(self.elected(
                        lease,
                        metrics,
                        start,
                        counted_from,
                    )));
                }
                Ok(Attempted::AlreadyRan(record)) => {
                    drop(turns);
                    metrics.already_ran();
                    debug!(lock = %lock, period = record.period, by = %record.by, "skipped, this period already ran");
                    shared.events.emit(|| Event::AlreadyRan {
                        lock: lock.clone(),
                        record: record.clone(),
                    });
                    return Ok(Outcome::AlreadyRan(record));
                }
                Ok(Attempted::Taken(holder)) => {
                    turns.refused();
                    quiet_pause = match quiet {
                        Quiet::Off => None,
                        Quiet::UntilExpiry => self.until_expiry(lock, holder.as_ref()).await,
                        Quiet::Every(every) => Some(poll_pause(
                            every,
                            holder.as_ref(),
                            shared.store.expiry_tolerance(),
                        )),
                    };
                    last_holder = holder;
                    if campaign && last_error.is_some() {
                        tracing::info!(lock = %lock, "the store answers again; contending");
                    }
                    None
                }
                Err(e) if e.is_transient() => {
                    if !campaign {
                        debug!(lock = %lock, error = %e, "transient error while acquiring");
                    } else if last_error.is_none() {
                        tracing::warn!(lock = %lock, error = %e,
                            "contending for leadership: the store failed; retrying");
                    }
                    Some(e)
                }
                Err(e) => {
                    metrics.not_acquired(true);
                    return Err(Error::store(lock, e));
                }
            };
            last_error = failed;
            let now = Instant::now();
            let mut pause = retry.pause(attempt);
            if let Some(quiet) = quiet_pause.take() {
                pause = pause.max(quiet);
            }
            if let Some(deadline) = deadline {
                if now >= deadline {
                    return self.give_up(lock, &metrics, last_error, last_holder);
                }
                pause = pause.min(deadline - now);
            }
            if turns
                .between_attempts(pause, signal.as_mut(), deadline)
                .await
            {
                attempt = attempt.saturating_add(1);
            }
        }
    }

    /// The wait ran out: the last transient error if the last attempt failed with one, else a
    /// skip, naming the holder of the last refusal if the store named one.
    fn give_up(
        &self,
        lock: &LockName,
        metrics: &LockMetrics,
        last_error: Option<StoreError>,
        last_holder: Option<Holder>,
    ) -> Result<Outcome<LeaderGuard>> {
        if let Some(e) = last_error {
            metrics.not_acquired(true);
            return Err(Error::store(lock, e));
        }
        metrics.not_acquired(false);
        debug!(lock = %lock, "skipped, lock held elsewhere");
        self.shared
            .events
            .emit(|| Event::Skipped { lock: lock.clone() });
        Ok(Outcome::Taken(last_holder))
    }

    /// How long until the store can let go of the lease that refused this elector, by the
    /// store's clock: the holder's expiry as the refusal named it, else as the lock's state
    /// shows it (the earliest of a group's holders, none while a slot is free), plus the store's
    /// [`expiry_tolerance`](crate::LeaseStore::expiry_tolerance). At most a lease, and `None`
    /// when the store does not say or that time has passed: the retry policy's pause then.
    async fn until_expiry(&self, lock: &LockName, holder: Option<&Holder>) -> Option<Duration> {
        let expires_at = match holder {
            Some(holder) => holder.expires_at,
            None => {
                let state = self.shared.store.state(lock, self.slots).await.ok()?;
                if state.holders.len() < self.slots as usize {
                    return None;
                }
                state.holders.iter().map(|h| h.expires_at).min()?
            }
        };
        let left =
            until_let_go(expires_at, self.shared.store.expiry_tolerance()).unwrap_or(Duration::MAX);
        (!left.is_zero()).then(|| left.min(self.options.lease))
    }

    /// A request for `lock` with this elector's slots, node id, lease and attempt timeout, and a
    /// new token.
    fn request(&self, lock: &LockName) -> AcquireRequest {
        let opts = &*self.options;
        AcquireRequest::new(
            lock.clone(),
            self.slots,
            Arc::clone(&opts.node_id),
            Token::random(),
            opts.lease,
        )
        .with_timeout(opts.attempt_timeout)
    }
}

/// The shortest pause of a quiet follower on a store whose release signal does not reach every
/// client (MySQL/MariaDB, DynamoDB, an in-memory SQLite database, Redis without notifications):
/// such a follower asks the store at most once per `max(QUIET_POLL_MIN, lease /`
/// [`QUIET_POLL_LEASE_PARTS`]`)`. A release by another process is then seen up to that late;
/// a release in this process wakes it at once.
pub(crate) const QUIET_POLL_MIN: Duration = Duration::from_secs(1);

/// The share of the lease a quiet follower on a store without a signal that reaches every
/// client waits between attempts, when that is longer than [`QUIET_POLL_MIN`]: a third, the
/// period at which a holder renews, so a follower asks about as often as the holder writes.
pub(crate) const QUIET_POLL_LEASE_PARTS: u32 = 3;

/// How a refused waiter with the store's retry policy and no place in the store's line of
/// waiters paces its next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quiet {
    /// The retry policy alone: a policy of the caller's own, or hand-off's line, which needs
    /// each refused attempt to stay in it.
    Off,
    /// The store's signal wakes it on every release: it asks again when the holder's lease
    /// could end.
    UntilExpiry,
    /// Releases elsewhere go unseen: it asks again after this interval, or when the holder's
    /// lease could end if the refusal said so and that is sooner.
    Every(Duration),
}

impl Quiet {
    /// The pacing for a wait whose signal reaches every client (`everyone`) or not, when the
    /// caller left the retry policy to the store and asked for no hand-off (`allowed`).
    fn choose(everyone: bool, allowed: bool, lease: Duration) -> Self {
        match (allowed, everyone) {
            (false, _) => Self::Off,
            (true, true) => Self::UntilExpiry,
            (true, false) => Self::Every(poll_interval(lease)),
        }
    }
}

/// `max(`[`QUIET_POLL_MIN`]`, lease /` [`QUIET_POLL_LEASE_PARTS`]`)`.
fn poll_interval(lease: Duration) -> Duration {
    (lease / QUIET_POLL_LEASE_PARTS).max(QUIET_POLL_MIN)
}

/// How long from now until a store that keeps a lock `tolerance` past its lease's end lets go
/// of a lease that ends at `expires_at`, by this host's clock: zero if that has passed, `None`
/// if it is beyond what the clock can tell (never, as far as a waiter is concerned).
fn until_let_go(expires_at: SystemTime, tolerance: Duration) -> Option<Duration> {
    let free_at = expires_at.checked_add(tolerance)?;
    Some(
        free_at
            .duration_since(SystemTime::now())
            .unwrap_or_default(),
    )
}

/// The pause after a refusal when polling `every` interval: sooner if the refusal named a
/// holder whose lease the store lets go before then (its expiry plus the store's `tolerance`),
/// by this host's clock. A follower with a 30 s lease waited 10 s after a SIGKILLed 1 s
/// holder's lease had ended; asking at the expiry itself, inside DynamoDB's tolerance, was
/// refused and cost another second. A time already past means the clocks disagree: ask again
/// after [`QUIET_POLL_MIN`], not a whole interval later.
fn poll_pause(every: Duration, holder: Option<&Holder>, tolerance: Duration) -> Duration {
    let Some(holder) = holder else {
        return every;
    };
    match until_let_go(holder.expires_at, tolerance) {
        None => every,
        Some(left) if !left.is_zero() => left.min(every),
        Some(_) => QUIET_POLL_MIN.min(every),
    }
}

/// True if `signal` wakes waiters in every process (see [`SignalReach`]).
fn reaches_every_client(signal: Option<&ReleaseSignal>) -> bool {
    signal.is_some_and(|s| s.reach() == SignalReach::EveryClient)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_interval_is_a_third_of_the_lease_and_at_least_a_second() {
        assert_eq!(
            poll_interval(Duration::from_secs(3)),
            Duration::from_secs(1)
        );
        assert_eq!(poll_interval(Duration::from_millis(500)), QUIET_POLL_MIN);
        assert_eq!(
            poll_interval(Duration::from_secs(30)),
            Duration::from_secs(10)
        );
        let lease = Duration::from_secs(3);
        assert_eq!(Quiet::choose(true, false, lease), Quiet::Off);
        assert_eq!(Quiet::choose(false, false, lease), Quiet::Off);
        assert_eq!(Quiet::choose(true, true, lease), Quiet::UntilExpiry);
        assert_eq!(
            Quiet::choose(false, true, lease),
            Quiet::Every(Duration::from_secs(1))
        );
    }

    #[test]
    fn a_named_expiry_sooner_than_the_interval_shortens_the_pause() {
        let every = Duration::from_secs(10);
        let holder = |in_ms: u64, past: bool| {
            let d = Duration::from_millis(in_ms);
            let now = SystemTime::now();
            Holder {
                slot: 0,
                owner: "n".into(),
                fence: 1,
                acquired_at: now,
                expires_at: if past { now - d } else { now + d },
            }
        };
        let none = Duration::ZERO;
        assert_eq!(poll_pause(every, None, none), every);
        let soon = poll_pause(every, Some(&holder(2_000, false)), none);
        assert!(
            soon <= Duration::from_secs(2) && soon > Duration::from_secs(1),
            "{soon:?}"
        );
        assert_eq!(poll_pause(every, Some(&holder(60_000, false)), none), every);
        // The store keeps the lock for its tolerance past the expiry: ask when that ends.
        let tolerance = Duration::from_millis(1_500);
        let later = poll_pause(every, Some(&holder(2_000, false)), tolerance);
        assert!(
            later <= Duration::from_millis(3_500) && later > Duration::from_millis(2_500),
            "{later:?}"
        );
        let inside = poll_pause(every, Some(&holder(500, true)), tolerance);
        assert!(
            inside <= Duration::from_secs(1) && inside > Duration::ZERO,
            "{inside:?}"
        );
        // Past even with the tolerance (the clocks disagree): ask again soon, but no more
        // than once per QUIET_POLL_MIN.
        assert_eq!(
            poll_pause(every, Some(&holder(1_000, true)), none),
            QUIET_POLL_MIN
        );
        assert_eq!(
            poll_pause(every, Some(&holder(3_000, true)), tolerance),
            QUIET_POLL_MIN
        );
        assert_eq!(
            poll_pause(Duration::from_millis(500), Some(&holder(1_000, true)), none),
            Duration::from_millis(500)
        );
        // A tolerance that would overflow the clock saturates instead of panicking.
        assert_eq!(
            poll_pause(every, Some(&holder(2_000, false)), Duration::MAX),
            every
        );
    }
}
