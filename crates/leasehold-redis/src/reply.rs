//! The scripts' replies decoded into the core's types, and the numbers passed to them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{Holder, Lease, PeriodRecord};

/// The acquire script's reply: `{slot, fence, acquired, expires, '', 0, 0, 0}` when granted,
/// `{-1, period, at, from, by, until, started, ran}` when the period claimed already ran;
/// `nil` (no reply) when held.
pub(crate) type AcquireReply = (i64, i64, i64, i64, String, i64, i64, i64);

/// The ledger's fields as `HMGET lp lf lu la lb ls lt lr` returns them (see the scripts'
/// module).
pub(crate) type LedgerFields = (
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// The fields [`LedgerFields`] reads, in its order.
pub(crate) const LEDGER_FIELDS: [&str; 8] = ["lp", "lf", "lu", "la", "lb", "ls", "lt", "lr"];

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
        None => Acquisition::Taken(None),
        Some((-1, period, at, from, by, until, started, ran)) => {
            Acquisition::AlreadyRan(PeriodRecord {
                period,
                from: epoch_time(from),
                until: epoch_time(until),
                at: epoch_time(at),
                by,
                started: started == 1,
                ran_at: Some(epoch_time(ran)),
            })
        }
        Some((slot, fence, acquired, expires, ..)) => Acquisition::Elected(Lease {
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

/// The ledger's record from its fields, `None` for a lock never claimed. A record written before
/// the window and the token were kept shows its grant time as its window and counts as started.
pub(crate) fn period_record(fields: LedgerFields) -> Option<PeriodRecord> {
    let (period, from, until, at, by, started, token, ran) = fields;
    let (period, at) = (period?, at?);
    let started = started.as_deref() == Some("1") || token.is_none();
    Some(PeriodRecord {
        period,
        from: epoch_time(from.unwrap_or(at)),
        until: epoch_time(until.unwrap_or(at)),
        at: epoch_time(at),
        by: by.unwrap_or_default(),
        started,
        ran_at: started.then_some(at).max(ran).map(epoch_time),
    })
}

/// A signed server time in epoch milliseconds (before 1970 reads as 1970).
fn epoch_time(epoch_ms: i64) -> SystemTime {
    time(u64::try_from(epoch_ms).unwrap_or_default())
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
