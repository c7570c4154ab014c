//! The bound on a networked store's request and connect timeouts, and the check every such store
//! makes of them.

use std::time::Duration;

use super::option_error::InvalidOption;

/// The longest request or connect timeout accepted: a request that has not answered in ten
/// minutes is not coming back, and a lease renewal must fail long before that. (A duration
/// beyond the core's [`MAX_DURATION`](crate::limits::MAX_DURATION) gets the core's
/// [`LimitError`](crate::limits::LimitError) message, as in every store.)
///
/// ```
/// assert_eq!(leasehold::store::MAX_TIMEOUT, std::time::Duration::from_secs(600));
/// ```
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// Checks the timeout `option` of `store`: the core's bound and message first
/// ([`check_duration`](crate::limits::check_duration)), as in every store's options; then from
/// 1 ms to [`MAX_TIMEOUT`].
///
/// # Errors
///
/// An [`InvalidOption`] naming `option` and the range allowed.
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::check_timeout;
///
/// assert!(check_timeout("etcd", "request_timeout", Duration::from_secs(2)).is_ok());
/// let e = check_timeout("etcd", "connect_timeout", Duration::from_secs(601)).unwrap_err();
/// assert_eq!(e.to_string(), "invalid etcd store option connect_timeout: must be between 1ms and 600s, got 601s");
/// ```
pub fn check_timeout(
    store: &'static str,
    option: &'static str,
    timeout: Duration,
) -> Result<(), InvalidOption> {
    crate::limits::check_duration(option, timeout)
        .map_err(|e| InvalidOption::new(store, option, e.to_string()))?;
    if timeout < Duration::from_millis(1) || timeout > MAX_TIMEOUT {
        return Err(InvalidOption::new(
            store,
            option,
            format!(
                "must be between 1ms and {}s, got {timeout:?}",
                MAX_TIMEOUT.as_secs()
            ),
        ));
    }
    Ok(())
}
