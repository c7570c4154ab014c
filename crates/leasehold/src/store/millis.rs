//! Time as stores write it: durations rounded **up** to whole milliseconds or seconds, and this
//! host's clock as milliseconds since the Unix epoch.
//!
//! A store that writes a lease's end as a number rounds its TTL up, so a lease is never shorter
//! than asked: to milliseconds for the expiry it records, to whole seconds where the server only
//! counts seconds (an etcd lease, a NATS message TTL). Values too large for the result saturate.
//!
//! ```
//! use std::time::Duration;
//! use leasehold::store::{ceil_millis, ceil_secs, host_epoch_ms, time_at_ms};
//!
//! assert_eq!(ceil_millis(Duration::from_micros(1_001)), 2);
//! assert_eq!(ceil_secs(Duration::from_millis(1_200)), 2);
//! assert_eq!(ceil_secs(Duration::from_millis(1_000)), 1);
//! let now = host_epoch_ms();
//! assert!(time_at_ms(now) <= std::time::SystemTime::now());
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `d` in whole milliseconds, rounded up (`u64::MAX` past it).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(leasehold::store::ceil_millis(Duration::from_nanos(1)), 1);
/// assert_eq!(leasehold::store::ceil_millis(Duration::from_millis(300)), 300);
/// assert_eq!(leasehold::store::ceil_millis(Duration::MAX), u64::MAX);
/// ```
pub fn ceil_millis(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// `d` in whole seconds, rounded up (`0` stays `0`; a server's minimum is the caller's to add).
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::ceil_secs;
/// assert_eq!(ceil_secs(Duration::ZERO), 0);
/// assert_eq!(ceil_secs(Duration::from_millis(300)), 1);
/// assert_eq!(ceil_secs(Duration::from_millis(1_001)), 2);
/// assert_eq!(ceil_secs(Duration::MAX), u64::MAX);
/// ```
pub fn ceil_secs(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000_000)).unwrap_or(u64::MAX)
}

/// This host's wall clock in milliseconds since the Unix epoch (`0` before it), for stores whose
/// server offers no clock to read.
///
/// ```
/// assert!(leasehold::store::host_epoch_ms() > 1_600_000_000_000);
/// ```
pub fn host_epoch_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// The time `ms` milliseconds after the Unix epoch (for signed values, before it too:
/// [`from_epoch_ms`](crate::store::from_epoch_ms)).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// assert_eq!(leasehold::store::time_at_ms(1_500), UNIX_EPOCH + Duration::from_millis(1_500));
/// ```
pub fn time_at_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or(UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_up_and_exact_values_stay() {
        assert_eq!(ceil_millis(Duration::ZERO), 0);
        assert_eq!(ceil_millis(Duration::from_nanos(1_000_001)), 2);
        assert_eq!(ceil_millis(Duration::from_millis(7)), 7);
        assert_eq!(ceil_secs(Duration::from_nanos(1)), 1);
        assert_eq!(ceil_secs(Duration::from_secs(5)), 5);
        assert_eq!(ceil_secs(Duration::from_nanos(5_000_000_001)), 6);
    }

    #[test]
    fn epoch_ms_round_trips() {
        let now = host_epoch_ms();
        let back = time_at_ms(now)
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis());
        assert_eq!(back.ok(), Some(u128::from(now)));
    }
}
