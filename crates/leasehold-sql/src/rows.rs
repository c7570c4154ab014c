//! Rows the statements return, decoded into the core's types, and the numbers bound into them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::store::{AcquireRequest, ClaimVerdict, StoreResult, from_epoch_ms, judge_claim};
use leasehold::{Holder, Lease, Period, PeriodRecord};
use sqlx::Row;

use crate::classify::classify;

/// A granted or held lease: `fence`, `acquired_at`, `expires_at` (epoch ms, database clock).
pub(crate) type LeaseRow = (i64, i64, i64);

/// A live holder: `slot`, `owner`, `fence`, `acquired_at`, `expires_at`.
pub(crate) type HolderRow = (i32, String, i64, i64, i64);

/// Slot 0's ledger as `read_period` returns it, with whether the slot is held and the
/// database's now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LedgerRow {
    /// `ledger_period`: the id of the window claimed.
    pub(crate) period: Option<i64>,
    /// `ledger_at`: when the latest claim was granted (epoch ms).
    pub(crate) at: Option<i64>,
    /// `ledger_by`.
    pub(crate) by: Option<String>,
    /// `ledger_from` and `ledger_until`: the window claimed (epoch ms).
    pub(crate) from: Option<i64>,
    pub(crate) until: Option<i64>,
    /// `ledger_pending`: the claim's `ledger_at` while it has not started.
    pub(crate) pending: Option<i64>,
    /// `ledger_ran`: when the latest claim that started was granted (epoch ms).
    pub(crate) ran: Option<i64>,
    /// Slot 0 holds a live lease.
    pub(crate) live: bool,
    /// The database's now (epoch ms) when it was read.
    pub(crate) now: i64,
}

/// What a refused period claim was refused for, by the ledger as read after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The period ran.
    AlreadyRan(PeriodRecord),
    /// Contention: the lock is held (by a claim that has not started, or by anyone when the
    /// ledger does not count for the period).
    Held,
    /// Neither any more: the lock is free and the ledger allows the claim (the period changed,
    /// or the lock was released, between the claim and the read). Worth one more try.
    Neither,
}

impl LedgerRow {
    /// Decodes the columns of `read_period` from column `first` on; `None` when they are `NULL`
    /// (the grant's row of PostgreSQL's period claim).
    pub(crate) fn decode<R: Row>(r: &R, first: usize) -> Result<Option<Self>, sqlx::Error>
    where
        usize: sqlx::ColumnIndex<R>,
        Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
        Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    {
        let live: Option<i64> = r.try_get(first + 7)?;
        let now: Option<i64> = r.try_get(first + 8)?;
        let (Some(live), Some(now)) = (live, now) else {
            return Ok(None);
        };
        Ok(Some(Self {
            period: r.try_get(first)?,
            at: r.try_get(first + 1)?,
            by: r.try_get(first + 2)?,
            from: r.try_get(first + 3)?,
            until: r.try_get(first + 4)?,
            pending: r.try_get(first + 5)?,
            ran: r.try_get(first + 6)?,
            live: live != 0,
            now,
        }))
    }

    /// The record, if the lock was ever claimed. Written by an older version of this store (no
    /// `ledger_pending`, or `ledger_at` overwritten after this version's claim): started, and
    /// its window, when the columns do not hold the grant's, `[at, at]`.
    pub(crate) fn record(&self) -> Option<PeriodRecord> {
        let (Some(period), Some(at), Some(by)) = (self.period, self.at, self.by.as_ref()) else {
            return None;
        };
        let (from, until) = match (self.from, self.until) {
            (Some(from), Some(until)) if from <= at && at < until => (from, until),
            _ => (at, at),
        };
        let started = self.pending != Some(at);
        let ran = started.then_some(at).max(self.ran);
        Some(PeriodRecord {
            period,
            from: from_epoch_ms(from),
            until: from_epoch_ms(until),
            at: from_epoch_ms(at),
            by: by.clone(),
            started,
            ran_at: ran.map(from_epoch_ms),
        })
    }

    /// Why a claim of `period` was refused, by this row (the ledger's rule, [`judge_claim`], at
    /// the row's now).
    pub(crate) fn refusal(&self, period: Period) -> Refusal {
        let window = period.window_at_ms(self.now);
        let record = self.record();
        let latest = record.as_ref().zip(self.at).map(|(r, at)| (at, r.started));
        let verdict = judge_claim(latest, self.ran, window.from_ms, self.live);
        match (verdict, record) {
            (ClaimVerdict::Ran, Some(record)) => Refusal::AlreadyRan(record),
            (ClaimVerdict::Free, _) if !self.live => Refusal::Neither,
            _ => Refusal::Held,
        }
    }
}

/// A listed row: `lock_name`, then as [`HolderRow`], then 1 when held, else 0.
pub(crate) type ListRow = (String, HolderRow, i64);

/// A group's slot row: `slot`, `token` and 1 when held, else 0.
pub(crate) type SlotRow = (i32, Option<String>, i64);

/// Decodes a [`HolderRow`].
pub(crate) fn holder_cols<R: Row>(r: &R) -> StoreResult<HolderRow>
where
    usize: sqlx::ColumnIndex<R>,
    i32: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (|| {
        Ok((
            r.try_get(0)?,
            r.try_get(1)?,
            r.try_get(2)?,
            r.try_get(3)?,
            r.try_get(4)?,
        ))
    })()
    .map_err(classify)
}

/// Decodes a [`ListRow`].
pub(crate) fn list_cols<R: Row>(r: &R) -> StoreResult<ListRow>
where
    usize: sqlx::ColumnIndex<R>,
    i32: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Vec<u8>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (|| {
        Ok((
            name_col(r, 0)?,
            (
                r.try_get(1)?,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
                r.try_get(5)?,
            ),
            r.try_get(6)?,
        ))
    })()
    .map_err(classify)
}

/// The lock name in column `i` (MySQL reports the `ascii_bin` name column as binary).
fn name_col<R: Row>(r: &R, i: usize) -> Result<String, sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Vec<u8>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    match r.try_get::<String, _>(i) {
        Ok(name) => Ok(name),
        Err(e) => String::from_utf8(r.try_get::<Vec<u8>, _>(i)?).map_err(|_| e),
    }
}

/// A renewed row: `lock_name`, `slot`, `token` and the new `expires_at`.
pub(crate) type RenewedRow = ((String, i32, String), i64);

/// Decodes a [`RenewedRow`].
pub(crate) fn renewed_cols<R: Row>(r: &R) -> StoreResult<RenewedRow>
where
    usize: sqlx::ColumnIndex<R>,
    i32: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Vec<u8>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (|| {
        Ok((
            (name_col(r, 0)?, r.try_get(1)?, r.try_get(2)?),
            r.try_get(3)?,
        ))
    })()
    .map_err(classify)
}

/// Decodes a [`LeaseRow`].
pub(crate) fn lease_cols<R: Row>(r: &R) -> StoreResult<LeaseRow>
where
    usize: sqlx::ColumnIndex<R>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (|| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))().map_err(classify)
}

/// Whole milliseconds, as bound into statements.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A slot number or count, as bound into statements.
pub(crate) fn slots_i32(slots: u32) -> i32 {
    i32::try_from(slots).unwrap_or(i32::MAX)
}

/// A time stored as epoch milliseconds.
pub(crate) fn time(epoch_ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(epoch_ms).unwrap_or_default())
}

/// The lease `req` was granted on `slot`.
pub(crate) fn lease(
    req: &AcquireRequest,
    slot: i32,
    (fence, acquired, expires): LeaseRow,
    period: Option<Period>,
) -> Lease {
    Lease {
        lock: req.lock.clone(),
        slot: u32::try_from(slot).unwrap_or_default(),
        owner: req.owner.to_string(),
        token: req.token,
        fence: u64::try_from(fence).unwrap_or_default(),
        acquired_at: time(acquired),
        expires_at: time(expires),
        period: period.map(|p| p.id_at_ms(acquired)),
    }
}

/// The holders of `rows`.
pub(crate) fn holders(rows: &[HolderRow]) -> Vec<Holder> {
    rows.iter()
        .map(|(slot, owner, fence, acquired, expires)| Holder {
            slot: u32::try_from(*slot).unwrap_or_default(),
            owner: owner.clone(),
            fence: u64::try_from(*fence).unwrap_or_default(),
            acquired_at: time(*acquired),
            expires_at: time(*expires),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn row(at: i64, pending: Option<i64>, live: bool, now: i64) -> LedgerRow {
        LedgerRow {
            period: Some(at / HOUR),
            at: Some(at),
            by: Some("a".to_owned()),
            from: Some(at / HOUR * HOUR),
            until: Some((at / HOUR + 1) * HOUR),
            pending,
            ran: None,
            live,
            now,
        }
    }

    fn hourly() -> Result<Period, String> {
        Period::every(Duration::from_secs(3600)).map_err(|e| e.to_string())
    }

    #[test]
    fn refusals_follow_the_ledger_rule() -> Result<(), String> {
        let at = 10 * HOUR + 5;
        let started = row(at, None, true, at + 10);
        assert!(matches!(started.refusal(hourly()?), Refusal::AlreadyRan(r) if r.started));
        let claimed = row(at, Some(at), true, at + 10);
        assert_eq!(claimed.refusal(hourly()?), Refusal::Held);
        let taken_over = row(at, Some(at), false, at + 10);
        assert_eq!(taken_over.refusal(hourly()?), Refusal::Neither);
        // Read in the next hour: the run was for the last one.
        let next_hour = row(at, None, false, 11 * HOUR);
        assert_eq!(next_hour.refusal(hourly()?), Refusal::Neither);
        let next_hour_held = row(at, None, true, 11 * HOUR);
        assert_eq!(next_hour_held.refusal(hourly()?), Refusal::Held);
        // A run in this hour, then a claim (of a shorter period, say) that never started: the
        // hour ran, and the record says when.
        let hidden = LedgerRow {
            ran: Some(10 * HOUR + 1),
            ..row(at, Some(at), false, at + 10)
        };
        assert!(matches!(hidden.refusal(hourly()?),
            Refusal::AlreadyRan(r) if !r.started && r.ran_at == Some(from_epoch_ms(10 * HOUR + 1))));
        let never = LedgerRow {
            period: None,
            at: None,
            by: None,
            from: None,
            until: None,
            pending: None,
            ran: None,
            live: false,
            now: at,
        };
        assert_eq!(never.record(), None);
        assert_eq!(never.refusal(hourly()?), Refusal::Neither);
        Ok(())
    }

    #[test]
    fn records_of_older_versions_read_as_started() {
        let at = 10 * HOUR + 5;
        // No claim columns (an older version's table or grant): started, window unknown.
        let old = LedgerRow {
            from: None,
            until: None,
            ..row(at, None, false, at)
        };
        let record = old.record();
        assert!(
            record.as_ref().is_some_and(|r| r.started
                && r.from == from_epoch_ms(at)
                && r.until == from_epoch_ms(at)),
            "{record:?}"
        );
        // An older version granted over this version's claim, not started: `ledger_at` moved
        // on, so the grant counts as a run, and the stale window is not shown.
        let overwritten = LedgerRow {
            at: Some(12 * HOUR),
            ..row(at, Some(at), false, 12 * HOUR)
        };
        let record = overwritten.record();
        assert!(
            record.as_ref().is_some_and(|r| r.started && r.from == r.at),
            "{record:?}"
        );
    }
}
