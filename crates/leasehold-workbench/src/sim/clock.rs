//! Ticks and virtual time.
//!
//! The run starts at virtual instant `t0`. Tick `k` covers the virtual interval
//! `(t0 + k·TICK, t0 + (k+1)·TICK]`, so an instant exactly on a boundary belongs to the tick that
//! ends there (instant `t0` itself counts as tick 0). Frame `k` is sampled at the boundary
//! `t0 + (k+1)·TICK`, after everything that happened up to it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// The virtual length of one tick: durations in [`Params`](crate::sim::Params) are multiples
/// of it.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::TICK, std::time::Duration::from_secs(1));
/// ```
pub const TICK: Duration = Duration::from_secs(1);

/// What the simulated store's clock reads at the start of tick 0: the Unix epoch.
///
/// The store's clock otherwise starts at the wall clock's time, which would move the period
/// ledger's boundaries relative to tick 0 from one run to the next. The epoch is a whole multiple
/// of every period, so period `k` of a length of `p` ticks starts exactly at tick `k × p`, and
/// the same input gives the same timeline.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::STORE_ORIGIN, std::time::UNIX_EPOCH);
/// ```
pub const STORE_ORIGIN: SystemTime = UNIX_EPOCH;

/// How far after the tick boundary node number `i` (0-based) makes an attempt scheduled for that
/// tick: `(i + 1)` ms. Attempts due in the same tick thus run in candidate order, and nothing
/// the nodes start falls on a sampling instant.
pub(crate) fn attempt_offset(index: usize) -> Duration {
    Duration::from_millis(u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1))
}

/// How often a waiting node retries (the elector's retry policy, without jitter).
pub(crate) const RETRY: Duration = Duration::from_millis(50);

/// Maps virtual instants of one run to ticks and back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    t0: Instant,
}

impl Clock {
    pub(crate) fn new(t0: Instant) -> Self {
        Self { t0 }
    }

    /// The tick an instant belongs to.
    pub(crate) fn tick(&self, at: Instant) -> u32 {
        let nanos = at.saturating_duration_since(self.t0).as_nanos();
        let tick = nanos.saturating_sub(1) / TICK.as_nanos();
        u32::try_from(tick).unwrap_or(u32::MAX)
    }

    /// The end of tick `tick`, where its frame is sampled.
    pub(crate) fn end_of(&self, tick: u32) -> Instant {
        self.t0 + TICK * tick.saturating_add(1)
    }

    /// When node `index` makes an attempt scheduled for `tick`.
    pub(crate) fn attempt_at(&self, tick: u32, index: usize) -> Instant {
        self.t0 + TICK * tick + attempt_offset(index)
    }

    /// Whole milliseconds from the start of the run to `at`.
    pub(crate) fn millis(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.t0).as_millis()).unwrap_or(u64::MAX)
    }

    /// Ticks left at tick `now` of a lease ending at `expires` (0 once it ended).
    pub(crate) fn ttl(&self, expires: Instant, now: u32) -> u32 {
        self.tick(expires).saturating_sub(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_belong_to_the_tick_that_ends_there() {
        let t0 = Instant::now();
        let c = Clock::new(t0);
        assert_eq!(c.tick(t0), 0);
        assert_eq!(c.tick(t0 + Duration::from_millis(1)), 0);
        assert_eq!(c.tick(t0 + TICK), 0);
        assert_eq!(c.tick(t0 + TICK + Duration::from_nanos(1)), 1);
        assert_eq!(c.tick(c.end_of(4)), 4);
        assert_eq!(c.tick(c.attempt_at(4, 2)), 4);
        assert_eq!(c.ttl(c.attempt_at(10, 0), 3), 7);
        assert_eq!(c.ttl(c.attempt_at(2, 0), 3), 0);
    }
}
