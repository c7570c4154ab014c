//! When `leasehold run` stops its command: the `--kill-grace` rule and the times of SIGTERM and
//! SIGKILL, chosen so that everything the command started is dead before the store can grant
//! the lock to another holder.
//!
//! The guard's local deadline D (the store's expiry less a safety margin, measured from when
//! the last renewal was sent) moves forward at every successful renewal. If the clock reaches
//! D − grace and D has not moved past that point, the command gets SIGTERM, and SIGKILL at D at
//! the latest. Renewals come every lease/3, so with healthy renewals D − now never drops below
//! about 0.57 × the lease: a grace of at most a third of the lease never fires spuriously.

use std::time::Duration;

use tokio::time::Instant;

use crate::exit::Failure;
use crate::time_text::human;

/// `--kill-grace` when none is given (and the lease is long enough: see [`kill_grace`]).
pub(crate) const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(10);

/// The grace is at most the lease divided by this: a third of the lease, the renewal period.
pub(crate) const LEASE_SHARE_OF_GRACE: u32 = 3;

/// Where the lease came from, for the message of a grace that does not fit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseSource {
    /// `--lease` was given.
    Flag,
    /// `--min-lease`, longer than the default lease.
    MinLease,
    /// The default lease.
    Default,
}

/// The grace between SIGTERM and SIGKILL for `lease`: `given` if it fits (at most
/// `lease / LEASE_SHARE_OF_GRACE`), else a usage error naming both flags; without `given`,
/// [`DEFAULT_KILL_GRACE`] or a third of the lease if that is shorter.
pub(crate) fn kill_grace(
    given: Option<Duration>,
    lease: Duration,
    source: LeaseSource,
) -> Result<Duration, Failure> {
    let longest = lease / LEASE_SHARE_OF_GRACE;
    let Some(grace) = given else {
        return Ok(DEFAULT_KILL_GRACE.min(longest));
    };
    if grace <= longest {
        return Ok(grace);
    }
    let lease_text = match source {
        LeaseSource::Flag => format!("--lease {}", human(lease)),
        LeaseSource::MinLease => format!("--lease {} (from --min-lease)", human(lease)),
        LeaseSource::Default => format!("--lease {} (the default)", human(lease)),
    };
    let fitting_lease = grace.saturating_mul(LEASE_SHARE_OF_GRACE);
    Err(Failure::usage(format!(
        "--kill-grace {} does not fit {lease_text}: the command must be dead before the store \
         can grant the lock to another holder, and renewals come every third of the lease, so \
         --kill-grace may be at most a third of --lease ({}); use --kill-grace {} or less, or \
         --lease {} or more",
        human(grace),
        human(longest),
        human(longest),
        human(fitting_lease),
    )))
}

/// When SIGTERM is due if the lease is not renewed: `grace` before the local deadline (at once
/// if that is already past).
pub(crate) fn term_at(deadline: Instant, grace: Duration) -> Instant {
    deadline.checked_sub(grace).unwrap_or_else(Instant::now)
}

/// When SIGKILL follows a SIGTERM sent `now`: after `grace`, but never later than `deadline`
/// when the lease bounds it (`None` under `--on-lost continue`).
pub(crate) fn kill_at(now: Instant, grace: Duration, deadline: Option<Instant>) -> Instant {
    let after_grace = leasehold::store::deadline_after(now, grace);
    deadline.map_or(after_grace, |d| after_grace.min(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn the_default_grace_is_ten_seconds_at_most_a_third_of_the_lease() {
        let default = |lease| kill_grace(None, lease, LeaseSource::Default).ok();
        assert_eq!(default(secs(60)), Some(secs(10)));
        assert_eq!(default(secs(30)), Some(secs(10)));
        assert_eq!(default(secs(15)), Some(secs(5)));
        assert_eq!(default(secs(3)), Some(secs(1)));
        assert_eq!(
            default(Duration::from_millis(75)),
            Some(Duration::from_millis(25))
        );
    }

    #[test]
    fn a_given_grace_must_fit_a_third_of_the_lease() {
        let given = |grace, lease| kill_grace(Some(grace), lease, LeaseSource::Flag);
        assert_eq!(given(secs(5), secs(15)).ok(), Some(secs(5)));
        assert_eq!(given(Duration::ZERO, secs(1)).ok(), Some(Duration::ZERO));
        assert_eq!(given(secs(30), secs(90)).ok(), Some(secs(30)));
        let Err(refused) = given(secs(10), secs(15)) else {
            panic!("10 s does not fit a 15 s lease");
        };
        assert_eq!(refused.code(), crate::exit::USAGE);
        let message = refused.message();
        for needle in [
            "--kill-grace 10.0s",
            "--lease 15.0s",
            "a third",
            "--kill-grace 5.0s or less",
            "--lease 30.0s or more",
        ] {
            assert!(message.contains(needle), "{needle:?} in {message}");
        }
        assert!(given(Duration::from_millis(1001), secs(3)).is_err());
        let huge = Duration::from_secs(36_500 * 86_400);
        assert!(kill_grace(Some(huge), huge, LeaseSource::Flag).is_err());
        assert!(kill_grace(Some(huge / 3), huge, LeaseSource::Flag).is_ok());
    }

    #[test]
    fn sigkill_comes_at_the_deadline_at_the_latest() {
        let now = Instant::now();
        let deadline = now + secs(4);
        assert_eq!(kill_at(now, secs(1), Some(deadline)), now + secs(1));
        assert_eq!(kill_at(now, secs(10), Some(deadline)), deadline);
        assert_eq!(kill_at(now, secs(10), None), now + secs(10));
        assert_eq!(term_at(deadline, secs(1)), now + secs(3));
        assert!(term_at(now, secs(u64::MAX / 4)) <= now, "due at once");
    }
}
