//! The scripts' replies decoded into the core's types, and the numbers passed to them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{Holder, Lease, PeriodRecord};

/// The acquire script's reply: `{slot, fence, acquired, expires, ''}` when granted,
/// `{-1, period, at, 0, by}` when the ledger refused the claim; `nil` (no reply) when held.
pub(crate) type AcquireReply = (i64, i64, i64, i64, String);

/// A live holder, as the state and forced-release scripts list them: `{slot, owner, fence,
/// acquired, expires}`.
pub(crate) type HolderRow = (u32, String, u64, u64, u64);

/// Whole milliseconds, at least 1 (a lease of less than a millisecond would already be over).
pub(crate) fn ms_at_least_1(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Milliseconds rounded up, so a minimum lease is never cut short.
pub(crate) fn ms_ceil(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// A server time in epoch milliseconds.
pub(crate) fn time(epoch_ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(epoch_ms)
}

/// The outcome of `req` from the acquire script's reply.
pub(crate) fn acquisition(req: &AcquireRequest, answer: Option<AcquireReply>) -> Acquisition {
    match answer {
        None => Acquisition::Held,
        Some((-1, period, at, _, by)) => Acquisition::AlreadyRan(PeriodRecord {
            period,
            at: time(u64::try_from(at).unwrap_or_default()),
            by,
        }),
        Some((slot, fence, acquired, expires, _)) => Acquisition::Granted(Lease {
            lock: req.lock.clone(),
            slot: u32::try_from(slot).unwrap_or_default(),
            owner: req.owner.to_string(),
            token: req.token,
            fence: u64::try_from(fence).unwrap_or_default(),
            acquired_at: time(u64::try_from(acquired).unwrap_or_default()),
            expires_at: time(u64::try_from(expires).unwrap_or_default()),
            period: req.period.map(|p| p.id_at_ms(acquired)),
        }),
    }
}

/// The holders of `rows`.
pub(crate) fn holders(rows: Vec<HolderRow>) -> Vec<Holder> {
    rows.into_iter()
        .map(|(slot, owner, fence, acquired, expires)| Holder {
            slot,
            owner,
            fence,
            acquired_at: time(acquired),
            expires_at: time(expires),
        })
        .collect()
}
