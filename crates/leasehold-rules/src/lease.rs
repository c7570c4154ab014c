//! The bounds between a lease, its minimum hold and its renewal.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// The shortest lease leasehold accepts: 1 ms.
pub const MIN_LEASE: Duration = Duration::from_millis(1);

/// The shortest interval between two renewals of a lease while its action runs (`auto_extend`
/// renews every third of the lease, but never more often than this): 25 ms.
pub const MIN_RENEWAL_PERIOD: Duration = Duration::from_millis(25);

/// The shortest lease `auto_extend` accepts: three renewal periods ([`MIN_RENEWAL_PERIOD`]),
/// 75 ms, so that a lease is renewed before it runs out even when a renewal is late.
pub const MIN_AUTO_EXTEND_LEASE: Duration = Duration::from_millis(75);

const _: () = assert!(MIN_AUTO_EXTEND_LEASE.as_nanos() == 3 * MIN_RENEWAL_PERIOD.as_nanos());

/// Which bound between a lease, its minimum hold and `auto_extend` was broken ([`check_lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseError {
    /// The lease was shorter than [`MIN_LEASE`].
    TooShort {
        /// The lease.
        lease: Duration,
    },
    /// `min_lease` exceeded `lease`.
    MinLeaseExceedsLease {
        /// The requested minimum.
        min_lease: Duration,
        /// The lease.
        lease: Duration,
    },
    /// `auto_extend` was asked for with a lease too short to renew in time.
    TooShortForAutoExtend {
        /// The lease.
        lease: Duration,
        /// The smallest lease that auto-extension supports ([`MIN_AUTO_EXTEND_LEASE`]).
        min: Duration,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooShort { lease } => write!(
                f,
                "lease must be at least {MIN_LEASE:?} (leasehold::limits::MIN_LEASE), got {lease:?}"
            ),
            Self::MinLeaseExceedsLease { min_lease, lease } => write!(
                f,
                "min_lease ({min_lease:?}) must not exceed lease ({lease:?})"
            ),
            Self::TooShortForAutoExtend { lease, min } => write!(
                f,
                "auto_extend (on by default) needs a lease of at least {min:?} (three renewals \
                 of {MIN_RENEWAL_PERIOD:?}), got {lease:?}; set auto_extend(false) for a shorter \
                 lease, which then bounds the action"
            ),
        }
    }
}

impl Error for LeaseError {}

/// Checks a lease against its bounds: at least [`MIN_LEASE`], at least `min_lease` (the time
/// the lock is held at least), and, when `auto_extend` renews it, at least
/// [`MIN_AUTO_EXTEND_LEASE`].
///
/// # Errors
///
/// The first bound broken, in that order: [`LeaseError::TooShort`],
/// [`LeaseError::MinLeaseExceedsLease`], [`LeaseError::TooShortForAutoExtend`].
///
/// ```
/// use std::time::Duration;
/// use leasehold_rules::{LeaseError, check_lease};
///
/// let ms = Duration::from_millis;
/// assert_eq!(check_lease(ms(75), ms(75), true), Ok(()));
/// assert_eq!(
///     check_lease(ms(1000), ms(2000), false),
///     Err(LeaseError::MinLeaseExceedsLease { min_lease: ms(2000), lease: ms(1000) })
/// );
/// ```
pub fn check_lease(
    lease: Duration,
    min_lease: Duration,
    auto_extend: bool,
) -> Result<(), LeaseError> {
    if lease < MIN_LEASE {
        return Err(LeaseError::TooShort { lease });
    }
    if min_lease > lease {
        return Err(LeaseError::MinLeaseExceedsLease { min_lease, lease });
    }
    if auto_extend && lease < MIN_AUTO_EXTEND_LEASE {
        return Err(LeaseError::TooShortForAutoExtend {
            lease,
            min: MIN_AUTO_EXTEND_LEASE,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: Duration = Duration::from_nanos(1);

    /// The shortest lease: 1 ms passes, 1 ms less a nanosecond (and zero) does not.
    #[test]
    fn min_lease_edge() {
        assert_eq!(check_lease(MIN_LEASE, Duration::ZERO, false), Ok(()));
        for short in [MIN_LEASE - NS, Duration::ZERO] {
            assert_eq!(
                check_lease(short, Duration::ZERO, false),
                Err(LeaseError::TooShort { lease: short })
            );
        }
        assert_eq!(
            LeaseError::TooShort {
                lease: Duration::ZERO
            }
            .to_string(),
            "lease must be at least 1ms (leasehold::limits::MIN_LEASE), got 0ns"
        );
    }

    /// `min_lease` up to the lease passes, a nanosecond more does not.
    #[test]
    fn min_lease_above_lease_edge() {
        let lease = Duration::from_secs(1);
        assert_eq!(check_lease(lease, lease, true), Ok(()));
        assert_eq!(
            check_lease(lease, lease + NS, true),
            Err(LeaseError::MinLeaseExceedsLease {
                min_lease: lease + NS,
                lease
            })
        );
        assert_eq!(
            check_lease(lease, Duration::from_secs(2), false)
                .map_err(|e| e.to_string())
                .unwrap_err(),
            "min_lease (2s) must not exceed lease (1s)"
        );
    }

    /// With `auto_extend`, 75 ms passes and a nanosecond less does not; without it, any lease
    /// from 1 ms passes.
    #[test]
    fn auto_extend_edge() {
        assert_eq!(
            check_lease(MIN_AUTO_EXTEND_LEASE, Duration::ZERO, true),
            Ok(())
        );
        let short = MIN_AUTO_EXTEND_LEASE - NS;
        assert_eq!(
            check_lease(short, Duration::ZERO, true),
            Err(LeaseError::TooShortForAutoExtend {
                lease: short,
                min: MIN_AUTO_EXTEND_LEASE
            })
        );
        assert_eq!(check_lease(short, Duration::ZERO, false), Ok(()));
        assert_eq!(
            check_lease(Duration::from_millis(50), Duration::ZERO, true)
                .map_err(|e| e.to_string())
                .unwrap_err(),
            "auto_extend (on by default) needs a lease of at least 75ms (three renewals of \
             25ms), got 50ms; set auto_extend(false) for a shorter lease, which then bounds the \
             action"
        );
    }

    /// The bounds are checked in their documented order.
    #[test]
    fn the_first_bound_broken_is_reported() {
        let ms = Duration::from_millis;
        assert!(matches!(
            check_lease(Duration::ZERO, ms(5), true),
            Err(LeaseError::TooShort { .. })
        ));
        assert!(matches!(
            check_lease(ms(50), ms(60), true),
            Err(LeaseError::MinLeaseExceedsLease { .. })
        ));
    }
}
