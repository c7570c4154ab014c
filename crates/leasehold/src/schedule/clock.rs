//! This node's estimate of the store's clock, which period-aligned jobs time their attempts by.
//!
//! The store decides which period an attempt is for (see [`crate::store::period`]); this estimate only
//! decides *when* this node asks, so that it asks near each period's start. It runs on tokio's
//! clock (so paused-time tests and the memory store agree with it), anchored to the wall clock
//! at start, and it learns the store's offset from every grant: the store stamps the lease
//! (`acquired_at`) before this node receives the answer, so the estimate after learning is at
//! most one round trip behind the store, never ahead of it — attempts fall just after a
//! period's start, not just before.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::store::period::epoch_ms;

/// How far the wall clock may run ahead of tokio's clock before the anchor is reset (a
/// suspended machine, or a forward step of the wall clock).
const REANCHOR_AFTER: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct StoreClock {
    anchor: Instant,
    anchor_wall_ms: i64,
    offset_ms: i64,
}

impl StoreClock {
    pub(crate) fn new() -> Self {
        Self {
            anchor: Instant::now(),
            anchor_wall_ms: epoch_ms(SystemTime::now()),
            offset_ms: 0,
        }
    }

    /// The local estimate (before the store's offset) at tokio instant `at`.
    fn local_ms(&self, at: Instant) -> i64 {
        let elapsed = at.saturating_duration_since(self.anchor).as_millis();
        self.anchor_wall_ms
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }

    /// The store's time now, as far as this node can tell (milliseconds since the Unix epoch).
    pub(crate) fn now_ms(&mut self) -> i64 {
        let now = Instant::now();
        // The wall clock moved further than tokio's: the machine slept, or the clock stepped
        // forward. Follow it (a step back is left to the next grant to correct).
        let wall = epoch_ms(SystemTime::now());
        let ahead = u64::try_from(wall.saturating_sub(self.local_ms(now))).unwrap_or(0);
        if ahead > u64::try_from(REANCHOR_AFTER.as_millis()).unwrap_or(u64::MAX) {
            self.anchor = now;
            self.anchor_wall_ms = wall;
        }
        self.local_ms(now).saturating_add(self.offset_ms)
    }

    /// Learns from a grant the store stamped at `store_ms`, whose answer arrived at `received`.
    pub(crate) fn learn(&mut self, store_ms: i64, received: Instant) {
        self.offset_ms = store_ms.saturating_sub(self.local_ms(received));
    }

    /// Learns that the store's clock read less than `bound_ms` when an answer arrived at
    /// `received` (the store refused a period this estimate had already reached): moves the
    /// estimate back to just below it, so that the next attempt falls after the store's
    /// period start rather than before it again.
    pub(crate) fn learn_below(&mut self, bound_ms: i64, received: Instant) {
        let estimate = self.local_ms(received).saturating_add(self.offset_ms);
        if estimate >= bound_ms {
            self.offset_ms = self
                .offset_ms
                .saturating_sub(estimate.saturating_sub(bound_ms).saturating_add(1));
        }
    }

    /// The tokio instant at which the store's clock should read `store_ms` (now when that has
    /// passed).
    pub(crate) fn instant_at(&mut self, store_ms: i64) -> Instant {
        let ahead = u64::try_from(store_ms.saturating_sub(self.now_ms())).unwrap_or(0);
        crate::limits::deadline_after(Instant::now(), Duration::from_millis(ahead))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_tokio_time_and_learns_the_store_offset() {
        let mut clock = StoreClock::new();
        let start = clock.now_ms();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let later = clock.now_ms();
        assert!((1500..1600).contains(&(later - start)), "{}", later - start);
        // The store is 10 s ahead: after one grant the estimate follows it.
        clock.learn(later + 10_000, Instant::now());
        let learned = clock.now_ms();
        assert!((10_000..10_100).contains(&(learned - later)));
        // And the instant of a store time 2 s ahead is 2 s from now.
        let at = clock.instant_at(learned + 2_000);
        let wait = at - Instant::now();
        assert!(wait <= Duration::from_millis(2_000) && wait >= Duration::from_millis(1_900));
        assert!(clock.instant_at(learned - 5_000) <= Instant::now());
        // A refusal that shows the store behind a bound moves the estimate below it, and
        // never forward.
        let now = clock.now_ms();
        clock.learn_below(now - 300, Instant::now());
        assert_eq!(clock.now_ms(), now - 301);
        clock.learn_below(now + 5_000, Instant::now());
        assert_eq!(clock.now_ms(), now - 301);
    }
}
