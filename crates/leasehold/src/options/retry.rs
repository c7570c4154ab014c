//! Pauses between acquisition attempts.

use std::time::Duration;

use rand::Rng;

use crate::limits::MAX_RETRY_GROWTH;
use crate::options::error::OptionsError;

/// Exponential back-off with jitter, used while waiting for a lock.
///
/// The n-th pause is `min(initial × growthⁿ, max)` scaled by a random factor in
/// `[1 − jitter, 1]`, so contenders spread out instead of retrying in lockstep. A store with a
/// release signal (see [`LeaseStore::release_signal`](crate::LeaseStore::release_signal)) wakes
/// waiters early.
///
/// Unless options set one, the policy follows the store: where its release signal reaches every
/// client ([`SignalReach::EveryClient`](crate::store::SignalReach)), pauses are only a fallback
/// and the [`Default`] one doubles from 25 ms to 250 ms; where a release by another process goes
/// unseen (MySQL/MariaDB, DynamoDB, an in-memory SQLite database) the policy is
/// [`RetryPolicy::polling`]. With the store's policy and no `hand_off`, a refused waiter does not
/// follow these pauses at all: it sleeps until the holder's lease could end (where the signal
/// reaches every client, which wakes it sooner), or asks again once per `max(1 s, lease / 3)` —
/// sooner when the refusal names an earlier expiry — where it does not, so a follower costs
/// about one request a second. The pauses apply when options set a policy (set
/// `RetryPolicy::polling()` to poll a store without a signal fast again: a release 10–60 ms into
/// a wait is then noticed within about 5 ms at the median, at about 4 requests a second per
/// waiter) and to waits that the store's answers do not cover (errors, hand-off).
///
/// ```
/// use std::time::Duration;
/// use leasehold::RetryPolicy;
///
/// let p = RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(100), 0.5)?;
/// assert_eq!(p.max(), Duration::from_millis(100));
/// # Ok::<(), leasehold::error::OptionsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    initial: Duration,
    max: Duration,
    jitter: f64,
    growth: f64,
}

impl Eq for RetryPolicy {}

impl Default for RetryPolicy {
    /// 25 ms doubling to 250 ms, jitter 0.5: the policy for stores whose release signal reaches
    /// every client.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(25),
            max: Duration::from_millis(250),
            jitter: 0.5,
            growth: 2.0,
        }
    }
}

impl RetryPolicy {
    /// A policy; `initial` must be > 0 and ≤ `max`, `max` at most
    /// [`MAX_DURATION`](crate::limits::MAX_DURATION), `jitter` within `0.0..=1.0`.
    ///
    /// # Errors
    ///
    /// [`OptionsError::Retry`] for an inconsistent policy, [`OptionsError::Limit`] for a `max`
    /// beyond [`MAX_DURATION`](crate::limits::MAX_DURATION).
    pub fn new(initial: Duration, max: Duration, jitter: f64) -> Result<Self, OptionsError> {
        let p = Self {
            initial,
            max,
            jitter,
            growth: 2.0,
        };
        p.validate()?;
        Ok(p)
    }

    /// 4 ms growing by 1.25 to 250 ms, jitter 0.5: the policy for stores that cannot wake
    /// waiters in other processes, where polling is the hand-off (see the type's documentation).
    pub fn polling() -> Self {
        Self {
            initial: Duration::from_millis(4),
            max: Duration::from_millis(250),
            jitter: 0.5,
            growth: 1.25,
        }
    }

    /// The same policy with each pause `growth` times the previous one (before jitter) instead
    /// of twice; `growth` within `1.0..=`[`MAX_RETRY_GROWTH`](crate::limits::MAX_RETRY_GROWTH) (1.0: a
    /// constant pause).
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold::RetryPolicy;
    ///
    /// let p = RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(100), 0.0)?
    ///     .with_growth(1.5)?;
    /// assert_eq!(p.growth(), 1.5);
    /// assert!(RetryPolicy::default().with_growth(0.5).is_err());
    /// # Ok::<(), leasehold::error::OptionsError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`OptionsError::Retry`] for a growth outside
    /// `1.0..=`[`MAX_RETRY_GROWTH`](crate::limits::MAX_RETRY_GROWTH) (or not a number).
    pub fn with_growth(self, growth: f64) -> Result<Self, OptionsError> {
        let p = Self { growth, ..self };
        p.validate()?;
        Ok(p)
    }

    pub(crate) fn validate(&self) -> Result<(), OptionsError> {
        if self.initial.is_zero() {
            return Err(OptionsError::Retry(
                "initial pause must be greater than zero",
            ));
        }
        if self.initial > self.max {
            return Err(OptionsError::Retry(
                "initial pause must not exceed the maximum pause",
            ));
        }
        crate::limits::check_duration("retry max pause", self.max)?;
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(OptionsError::Retry("jitter must be within 0.0..=1.0"));
        }
        if !(1.0..=MAX_RETRY_GROWTH).contains(&self.growth) {
            return Err(OptionsError::Retry("growth must be within 1.0..=10.0"));
        }
        Ok(())
    }

    /// The first pause.
    pub fn initial(&self) -> Duration {
        self.initial
    }
    /// The longest pause.
    pub fn max(&self) -> Duration {
        self.max
    }
    /// The random fraction taken off each pause.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }
    /// How much each pause grows over the previous one, before jitter.
    pub fn growth(&self) -> f64 {
        self.growth
    }

    /// `min(initial × growthⁿ, max)`, in whole nanoseconds (exact for whole growth factors).
    fn base(&self, attempt: u32) -> Duration {
        let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
        let nanos = self.initial.as_nanos() as f64 * self.growth.powi(exponent);
        if nanos >= self.max.as_nanos() as f64 {
            return self.max;
        }
        // Below `max` (at most 100 years in nanoseconds, well within u64).
        Duration::from_nanos(nanos as u64)
    }

    /// The pause before attempt `attempt + 1` (0-based).
    pub(crate) fn pause(&self, attempt: u32) -> Duration {
        let base = self.base(attempt);
        if self.jitter == 0.0 {
            return base;
        }
        let factor = 1.0 - rand::rng().random_range(0.0..=self.jitter);
        base.mul_f64(factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_the_cap_within_jitter() -> Result<(), OptionsError> {
        let p = RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(80), 0.5)?;
        for attempt in 0..10 {
            let base = Duration::from_millis((10u64 << attempt.min(3)).min(80));
            let got = p.pause(attempt);
            assert!(
                got <= base && got >= base / 2,
                "attempt {attempt}: {got:?} vs {base:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn pauses_grow_by_the_chosen_factor() -> Result<(), OptionsError> {
        let p = RetryPolicy::new(Duration::from_millis(4), Duration::from_millis(250), 0.0)?
            .with_growth(1.25)?;
        let pauses: Vec<u128> = (0..25).map(|n| p.pause(n).as_micros()).collect();
        assert_eq!(&pauses[..4], &[4000, 5000, 6250, 7812]);
        assert_eq!(pauses[24], 250_000, "capped at max");
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]));
        // A constant pause, and a huge attempt number that neither panics nor overflows.
        let flat = p.with_growth(1.0)?;
        assert_eq!(flat.pause(u32::MAX), Duration::from_millis(4));
        assert_eq!(p.pause(u32::MAX), Duration::from_millis(250));
        Ok(())
    }

    /// The polling default asks about as often as the signalling one over a long wait: the
    /// figure the type's documentation gives (≤ 10% more attempts over 30 s).
    #[test]
    fn the_polling_default_costs_little_more_over_a_long_wait() -> Result<(), OptionsError> {
        fn attempts(p: RetryPolicy, within: Duration) -> u32 {
            // Mean pauses (jitter 0.5 takes off a quarter on average).
            let mut at = Duration::ZERO;
            let mut n = 0;
            while at < within {
                at += p.base(n).mul_f64(1.0 - p.jitter() / 2.0);
                n += 1;
            }
            n
        }
        let thirty = Duration::from_secs(30);
        let signalling = attempts(RetryPolicy::default(), thirty);
        let polling = attempts(RetryPolicy::polling(), thirty);
        assert!(polling > signalling);
        assert!(
            f64::from(polling) <= f64::from(signalling) * 1.10,
            "{polling} vs {signalling}"
        );
        assert!(RetryPolicy::polling().validate().is_ok());
        Ok(())
    }

    #[test]
    fn rejects_inconsistent_policies() {
        let ms = Duration::from_millis;
        assert!(RetryPolicy::new(ms(0), ms(1), 0.1).is_err());
        assert!(RetryPolicy::new(ms(5), ms(1), 0.1).is_err());
        assert!(RetryPolicy::new(ms(1), ms(5), 1.5).is_err());
        let p = RetryPolicy::default();
        for growth in [0.99, 10.5, f64::NAN, f64::INFINITY] {
            assert!(p.with_growth(growth).is_err(), "{growth}");
        }
    }
}
