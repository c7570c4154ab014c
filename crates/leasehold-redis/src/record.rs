//! The lease record: what a lock's hash holds, field by field, and the scripts' replies read
//! back into the core's leases, holders and ledger records.
//!
//! A lock is one hash, `<prefix>:{<lock>}`, with five fields per slot `s`:
//!
//! | field | meaning |
//! |---|---|
//! | `t<s>` | token of the holder (32 hex digits); absent when free |
//! | `o<s>` | owner (node id) of the holder |
//! | `f<s>` | last fence issued for the slot; kept on release |
//! | `a<s>` | acquisition time, epoch ms (server clock) |
//! | `e<s>` | expiry, epoch ms (server clock); a slot whose `e<s>` is not after now is free |
//!
//! and, for the **period ledger** (slot 0 only, set by acquisitions that claim a period and kept
//! across release, expiry and forced release):
//!
//! | field | meaning |
//! |---|---|
//! | `lp` | the latest period id claimed, `floor((now − offset) / length)` of the server clock under the claim's own length and offset |
//! | `lf`, `lu` | that period's window, epoch ms: its start (included) and end (excluded) |
//! | `la` | when it was granted, epoch ms (server clock) |
//! | `lb` | the owner it was granted to |
//! | `lt` | the token of the lease granted with it |
//! | `ls` | `1` once the claim's action started ([`ScriptKind::StartPeriod`](crate::ScriptKind::StartPeriod)), `0` before |
//! | `lr` | when the latest claim that started was granted, epoch ms (`la` once this one started; kept by a new claim until it starts) |
//!
//! A claim is judged by time, as [`leasehold::store::judge_claim`] says: the record refuses a
//! claim only if a run (`lr`, or `la` of a started claim) was granted at or after the start of
//! the window claimed now; a claim granted there but not started holds the period only while
//! slot 0's lease is live. A record written before `lt`/`ls` existed counts as started (claims
//! then meant runs).
//! While the ledger records a period, the hash's cleanup TTL lasts at least until that period
//! ends (plus the idle retention), so the record cannot vanish while it still refuses claims.
//!
//! and one field for the whole lock: `w`, set by an acquire that found no free slot (`HSETNX`, so
//! repeated failures write, and replicate, nothing new). A release
//! publishes its notification only when `w` is set, and clears it: an uncontended lock never
//! publishes, and a contender that failed before a release always hears of it (scripts run one
//! at a time, so its failed attempt either came before the release, and set `w`, or after it,
//! and set `w` for the next one).
//!
//! and, for **hand-off** (single-slot requests, see [`leasehold::store::HandOff`]):
//!
//! | field | meaning |
//! |---|---|
//! | `q<w>` | elector `w` (16 hex digits) waits: `<since>:<seen>`, epoch ms of its first refusal and of a recent one (refreshed when older than a quarter of [`WAITING_FRESH`](leasehold::store::WAITING_FRESH)) |
//! | `n` | the elector a free lock is kept for |
//! | `nu` | until when, epoch ms (server clock): a single-slot acquire by anyone else before then is refused |
//!
//! A refused single-slot acquire of a waiting elector writes its `q<w>` (only while the hash has
//! fewer than [`MAX_WAITERS`](leasehold::store::MAX_WAITERS) fields, its own fields included, so
//! the line and the release's scan of it stay bounded); a grant deletes the grantee's `q<w>`,
//! `n` and `nu`, and the `q<w>` of an elector whose keep lapsed. A release that keeps the lock
//! for its own elector (`k`) writes `n`/`nu` and does not publish; a release to the longest
//! waiter (`l`), when `w` says someone was refused, reads the hash once, drops stale `q<w>`s,
//! and keeps the lock for the earliest `since` among the others. Versions without hand-off ignore
//! these fields (their scripts read only the slot fields, `w` and the ledger), so a mixed fleet is
//! as safe as before, only less fair.
//!
//! Fences are minted as `max(f<s> + 1, server time in µs)`: they rise by one against the stored
//! counter, and never fall below the server clock in microseconds (ms × 1000 and then some). So a
//! counter that vanished — the idle hash expired, the server restarted without persistence, or an
//! older snapshot was restored — still continues above every fence issued before, as long as the
//! server clock has not stepped back by more than the time since. Lua numbers are doubles, exact up
//! to 2^53, which microseconds since 1970 reach in the year 2255.
//!
//! The hash's own TTL is cleanup only (the latest expiry plus an idle retention); correctness
//! never depends on key expiry.

use std::time::{Duration, SystemTime};

use leasehold::store::{AcquireRequest, Acquisition, time_at_ms};
use leasehold::{Holder, Lease, PeriodRecord};

/// The acquire script's reply: `{slot, fence, acquired, expires, '', 0, 0, 0}` when granted,
/// `{-1, period, at, from, by, until, started, ran}` when the period claimed already ran;
/// `nil` (no reply) when held.
pub(crate) type AcquireReply = (i64, i64, i64, i64, String, i64, i64, i64);

/// The ledger's fields as `HMGET lp lf lu la lb ls lt lr` returns them (see the
/// module's table).
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
            acquired_at: time_at_ms(u64::try_from(acquired).unwrap_or_default()),
            expires_at: time_at_ms(u64::try_from(expires).unwrap_or_default()),
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
    time_at_ms(u64::try_from(epoch_ms).unwrap_or_default())
}

/// The holders of `rows`.
pub(crate) fn holders(rows: Vec<HolderRow>) -> Vec<Holder> {
    rows.into_iter()
        .map(|(slot, owner, fence, acquired, expires)| Holder {
            slot,
            owner,
            fence,
            acquired_at: time_at_ms(acquired),
            expires_at: time_at_ms(expires),
        })
        .collect()
}
