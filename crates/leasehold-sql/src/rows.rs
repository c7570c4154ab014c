//! Rows the statements return, decoded into the core's types, and the numbers bound into them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{Holder, Lease, Period, PeriodRecord};
use sqlx::Row;

use crate::classify::classify;

/// A granted or held lease: `fence`, `acquired_at`, `expires_at` (epoch ms, database clock).
pub(crate) type LeaseRow = (i64, i64, i64);

/// A live holder: `slot`, `owner`, `fence`, `acquired_at`, `expires_at`.
pub(crate) type HolderRow = (i32, String, i64, i64, i64);

/// `ledger_period`, `ledger_at`, `ledger_by` and the database's now.
pub(crate) type LedgerRow = (Option<i64>, Option<i64>, Option<String>, i64);

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
        // MySQL reports the `ascii_bin` name column as binary.
        let name = match r.try_get::<String, _>(0) {
            Ok(name) => name,
            Err(e) => String::from_utf8(r.try_get::<Vec<u8>, _>(0)?).map_err(|_| e)?,
        };
        Ok((
            name,
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

/// True if the ledger `row` records the period just before the current one (by the database
/// clock it was read with): a claim refused a moment earlier may have been refused by it.
pub(crate) fn just_ended(row: Option<&LedgerRow>, period: Period) -> bool {
    matches!(row, Some((Some(done), _, _, now)) if *done == period.id_at_ms(*now) - 1)
}

/// Tells "already ran" from contention by the ledger row: `AlreadyRan` when it records the
/// current period (by the database clock `now`) or a later one.
pub(crate) fn judge(row: Option<LedgerRow>, period: Period) -> Acquisition {
    match row {
        Some((Some(done), Some(at), Some(by), now)) if done >= period.id_at_ms(now) => {
            Acquisition::AlreadyRan(PeriodRecord {
                period: done,
                at: time(at),
                by,
            })
        }
        _ => Acquisition::Held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_one_period_behind_the_clock_just_ended() -> Result<(), String> {
        let second = Period::every(std::time::Duration::from_secs(1)).map_err(|e| e.to_string())?;
        let row = |done: i64, now: i64| (Some(done), Some(now), Some("a".to_owned()), now);
        // Read at 10.2 s: the ledger's period 9 is the one that just ended.
        assert!(just_ended(Some(&row(9, 10_200)), second));
        assert!(
            !just_ended(Some(&row(10, 10_200)), second),
            "current: already ran"
        );
        assert!(
            !just_ended(Some(&row(8, 10_200)), second),
            "older: contention"
        );
        assert!(!just_ended(None, second));
        assert!(!just_ended(Some(&(None, None, None, 10_200)), second));
        Ok(())
    }
}
