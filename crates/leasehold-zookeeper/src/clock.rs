//! The store's estimate of the ensemble's clock: a **lower bound** of the leader's time.
//!
//! ZooKeeper offers no clock to read, but every node's `mtime` is the clock of the leader that
//! applied its last write, and a write's reply carries the node's new `mtime`: the ensemble's
//! time at that write. So after seeing `mtime` at local instant `t`, the ensemble's time is at
//! least `mtime + (now − t)` (clocks do not run backwards, and the elapsed time is measured on
//! this host's monotonic clock). The store keeps the highest such bound, refreshed by every
//! reply that carries a `mtime`; one write to `<prefix>/clock` seeds it when a session opens.

use std::sync::Mutex;
use std::time::Instant;

/// The highest `mtime` seen, projected forward with this host's monotonic clock.
#[derive(Debug, Default)]
pub(crate) struct ServerClock {
    seen: Mutex<Option<(i64, Instant)>>,
}

fn millis_since(at: Instant, now: Instant) -> i64 {
    i64::try_from(now.saturating_duration_since(at).as_millis()).unwrap_or(i64::MAX)
}

impl ServerClock {
    /// Records that the ensemble's time was at least `mtime` (ms since the epoch) now.
    pub(crate) fn observe(&self, mtime: i64) {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let known = seen.map(|(m, at)| m.saturating_add(millis_since(at, now)));
        if known.is_none_or(|k| mtime > k) {
            *seen = Some((mtime, now));
        }
    }

    /// The lower bound of the ensemble's time now, in ms since the epoch; `None` before the
    /// first observation.
    pub(crate) fn now_ms(&self) -> Option<i64> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.map(|(m, at)| m.saturating_add(millis_since(at, Instant::now())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_only_rises() {
        let clock = ServerClock::default();
        assert_eq!(clock.now_ms(), None);
        clock.observe(10_000);
        let a = clock.now_ms().unwrap_or_default();
        assert!(a >= 10_000);
        clock.observe(5_000); // an old node's mtime: no news
        assert!(clock.now_ms().unwrap_or_default() >= a);
        clock.observe(20_000);
        assert!(clock.now_ms().unwrap_or_default() >= 20_000);
    }
}
