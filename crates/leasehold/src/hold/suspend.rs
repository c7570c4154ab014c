//! Noticing that the host was suspended.
//!
//! Local deadlines use tokio's `Instant`, which follows `CLOCK_MONOTONIC` on Linux: that clock
//! stops while the machine sleeps (laptop lid, VM paused by its hypervisor), but the store's
//! clock does not, so after a long enough suspend the store has expired the lease while the
//! local deadline still lies ahead. `CLOCK_BOOTTIME` keeps counting during suspend, so the growth
//! of `BOOTTIME - MONOTONIC` since a renewal was sent is the time the host spent suspended since
//! then; the guard adds it to the monotonic time when it checks its deadline. Elsewhere than
//! Linux and Android there is no such clock pair and nothing is detected.

use std::time::Duration;

/// Growth of `BOOTTIME - MONOTONIC` below this is noise (the two clocks are read one after the
/// other, and the thread may be preempted in between), not a suspend.
pub(crate) const SUSPEND_THRESHOLD: Duration = Duration::from_millis(100);

/// How often a task waiting for a lease to be lost re-checks for a suspend: after the host
/// wakes up, a loss is noticed within this time (plus the scheduler's delay).
pub(crate) const SUSPEND_CHECK: Duration = Duration::from_secs(1);

/// A reading of `BOOTTIME - MONOTONIC` in nanoseconds (signed: the two clocks are read one
/// after the other, so on a host that never slept it may come out slightly negative).
pub(crate) type Offset = i128;

/// `BOOTTIME - MONOTONIC` now: the total time the host spent suspended since boot, or `None`
/// where it cannot be read.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn offset() -> Option<Offset> {
    use nix::time::{ClockId, clock_gettime};
    let mono = Duration::from(clock_gettime(ClockId::CLOCK_MONOTONIC).ok()?);
    let boot = Duration::from(clock_gettime(ClockId::CLOCK_BOOTTIME).ok()?);
    Some(boot.as_nanos() as Offset - mono.as_nanos() as Offset)
}

/// `BOOTTIME - MONOTONIC` now: not available on this platform.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn offset() -> Option<Offset> {
    None
}

/// True where suspends can be detected.
pub(crate) fn detectable() -> bool {
    cfg!(any(target_os = "linux", target_os = "android"))
}

/// The time spent suspended between two readings of [`offset`], if it is more than noise.
pub(crate) fn between(then: Option<Offset>, now: Option<Offset>) -> Option<Duration> {
    let grown = now?.checked_sub(then?)?;
    let suspended = Duration::from_nanos(u64::try_from(grown).ok()?);
    (suspended >= SUSPEND_THRESHOLD).then_some(suspended)
}

/// The time spent suspended since the reading `then` of [`offset`], if more than noise.
pub(crate) fn since(then: Option<Offset>) -> Option<Duration> {
    between(Some(then?), offset())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_growth_beyond_noise_counts_as_a_suspend() {
        let s = |secs: i128| secs * 1_000_000_000;
        let half_threshold = SUSPEND_THRESHOLD.as_nanos() as Offset / 2;
        assert_eq!(
            between(Some(s(5)), Some(s(35))),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            between(Some(s(-1)), Some(s(29))),
            Some(Duration::from_secs(30))
        );
        assert_eq!(between(Some(s(5)), Some(s(5) + half_threshold)), None);
        assert_eq!(between(Some(s(5)), Some(s(4))), None); // noise the other way
        assert_eq!(between(None, Some(s(35))), None);
        assert_eq!(between(Some(s(5)), None), None);
    }

    #[test]
    fn the_clocks_are_readable_and_agree_while_awake() {
        if !detectable() {
            assert_eq!(offset(), None);
            return;
        }
        let first = offset();
        assert!(
            first.is_some(),
            "CLOCK_BOOTTIME and CLOCK_MONOTONIC are readable"
        );
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(since(first), None, "no suspend while this test ran");
    }
}
