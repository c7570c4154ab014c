//! Pauses between acquisition attempts.

use std::time::Duration;

use rand::Rng;

use crate::options::error::OptionsError;

/// Exponential back-off with jitter, used while waiting for a lock.
///
/// The n-th pause is `min(initial × 2ⁿ, max)` scaled by a random factor in `[1 − jitter, 1]`,
/// so contenders spread out instead of retrying in lockstep. A store with a release signal
/// (see [`LeaseStore::release_signal`](crate::LeaseStore::release_signal)) wakes waiters early.
///
/// ```
/// use std::time::Duration;
/// use leasehold::RetryPolicy;
///
/// let p = RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(100), 0.5)?;
/// assert_eq!(p.max(), Duration::from_millis(100));
/// # Ok::<(), leasehold::OptionsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    initial: Duration,
    max: Duration,
    jitter: f64,
}

impl Eq for RetryPolicy {}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(25),
            max: Duration::from_millis(250),
            jitter: 0.5,
        }
    }
}

impl RetryPolicy {
    /// A policy; `initial` must be > 0 and ≤ `max`, `max` at most
    /// [`MAX_DURATION`](crate::MAX_DURATION), `jitter` within `0.0..=1.0`.
    ///
    /// # Errors
    ///
    /// [`OptionsError::Retry`] for an inconsistent policy, [`OptionsError::Limit`] for a `max`
    /// beyond [`MAX_DURATION`](crate::MAX_DURATION).
    pub fn new(initial: Duration, max: Duration, jitter: f64) -> Result<Self, OptionsError> {
        let p = Self {
            initial,
            max,
            jitter,
        };
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

    /// The pause before attempt `attempt + 1` (0-based).
    pub(crate) fn pause(&self, attempt: u32) -> Duration {
        let base = self
            .initial
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max);
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
    fn rejects_inconsistent_policies() {
        let ms = Duration::from_millis;
        assert!(RetryPolicy::new(ms(0), ms(1), 0.1).is_err());
        assert!(RetryPolicy::new(ms(5), ms(1), 0.1).is_err());
        assert!(RetryPolicy::new(ms(1), ms(5), 1.5).is_err());
    }
}
