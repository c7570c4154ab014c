//! The client clock: DynamoDB conditions have no server time, so every timestamp is this host's
//! wall clock in epoch milliseconds.

use std::time::Duration;

/// A duration in whole milliseconds (saturating).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `ttl` attribute (epoch seconds, rounded up) for an item whose lease ends at `expiry_ms`.
pub(crate) fn ttl_seconds(expiry_ms: u64, padding: Duration) -> u64 {
    expiry_ms.saturating_add(ms(padding)).div_ceil(1000)
}

/// The fence a brand-new item starts from: the clock in ms × 1000. An item deleted by TTL (at
/// least the TTL padding after its last lease) and created again continues above every fence it
/// issued, as long as it issued fewer than 1000 fences per millisecond of its life.
pub(crate) fn fence_seed(now_ms: u64) -> u64 {
    now_ms.saturating_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_rounds_up_and_pads() {
        assert_eq!(ttl_seconds(1_000, Duration::ZERO), 1);
        assert_eq!(ttl_seconds(1_001, Duration::ZERO), 2);
        assert_eq!(ttl_seconds(1_000, Duration::from_secs(60)), 61);
    }

    #[test]
    fn seeds_grow_with_the_clock() {
        let now = leasehold::store::host_epoch_ms();
        assert!(fence_seed(now + 1) > fence_seed(now) + 999);
    }
}
