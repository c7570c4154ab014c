//! The period ledger: "run at most once per period of a lock", decided by the store.
//!
//! A claim for a [`Period`] rides on an acquisition ([`AcquireRequest::with_period`]). The store
//! finds the period that contains **its own clock's** now (`floor((store-now − offset) /
//! length)`, in milliseconds since the Unix epoch) and judges the claim **by time**: the period
//! counts as run if a claim granted at or after the period's start started its action, whatever
//! period length or offset that claim was made under (see [`judge_claim`]). A grant records, with
//! the lease and in the same atomic operation, the store time, the owner, the token and the
//! window claimed (its start and end), in the lock's slot-0 record, keeping the grant time of the
//! lock's latest run; the record is kept across release and expiry like the fence.
//!
//! **A claim is not a run.** The record says *claimed* until the elector confirms that its action
//! starts ([`LeaseStore::start_period`](crate::LeaseStore::start_period)), and *started* after.
//! A claim whose holder never started (the answer to the claim was lost, the process died before
//! starting) is taken over by the next claim of the same period once its lease is released or
//! expired, so a lost answer never skips a period everywhere. A refused claim is
//! [`Acquisition::AlreadyRan`](crate::store::Acquisition::AlreadyRan) with the record — its own
//! outcome, never an error and never contention.
//!
//! [`AcquireRequest::with_period`]: crate::store::AcquireRequest::with_period

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::limits::{Human, MAX_DURATION, MIN_PERIOD};

/// A period definition for the ledger: consecutive windows of `length`, shifted by `offset`, on
/// the store's clock (milliseconds since the Unix epoch). Period `p` covers store times
/// `[p × length + offset, (p + 1) × length + offset)`.
///
/// Lengths and offsets are whole milliseconds; the length is at least [`MIN_PERIOD`] and at most
/// [`MAX_DURATION`], the offset is below the length.
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use leasehold::Period;
///
/// let hourly = Period::every(Duration::from_secs(3600))?.offset(Duration::from_secs(300))?;
/// // Period 1 runs from 01:05 to 02:05 (store clock, UTC, since the epoch).
/// assert_eq!(hourly.id_at(UNIX_EPOCH + Duration::from_secs(7200 + 299)), 1);
/// assert_eq!(hourly.id_at(UNIX_EPOCH + Duration::from_secs(3600 + 300)), 1);
/// assert_eq!(hourly.start_of(1), UNIX_EPOCH + Duration::from_secs(3900));
/// assert!(Period::every(Duration::from_micros(500)).is_err());
/// # Ok::<(), leasehold::error::PeriodError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Period {
    length_ms: u64,
    offset_ms: u64,
}

impl Period {
    /// Periods of `length`, starting at the Unix epoch (offset 0).
    ///
    /// # Errors
    ///
    /// [`PeriodError`] when `length` is below [`MIN_PERIOD`], above [`MAX_DURATION`] or not a
    /// whole number of milliseconds.
    pub fn every(length: Duration) -> Result<Self, PeriodError> {
        if length < MIN_PERIOD {
            return Err(PeriodError::TooShort {
                length,
                min: MIN_PERIOD,
            });
        }
        if length > MAX_DURATION {
            return Err(PeriodError::TooLong {
                length,
                max: MAX_DURATION,
            });
        }
        Ok(Self {
            length_ms: whole_ms("period length", length)?,
            offset_ms: 0,
        })
    }

    /// The same periods shifted by `offset` (e.g. daily periods starting at 02:00 UTC:
    /// `every(24h)?.offset(2h)?`).
    ///
    /// # Errors
    ///
    /// [`PeriodError`] when `offset` is not below the length or not a whole number of
    /// milliseconds.
    pub fn offset(self, offset: Duration) -> Result<Self, PeriodError> {
        let offset_ms = whole_ms("period offset", offset)?;
        if offset_ms >= self.length_ms {
            return Err(PeriodError::OffsetNotBelowLength {
                offset,
                length: self.length(),
            });
        }
        Ok(Self { offset_ms, ..self })
    }

    /// The length.
    pub fn length(&self) -> Duration {
        Duration::from_millis(self.length_ms)
    }

    /// The offset.
    pub fn offset_duration(&self) -> Duration {
        Duration::from_millis(self.offset_ms)
    }

    /// The length in milliseconds (what stores compute with).
    pub fn length_ms(&self) -> u64 {
        self.length_ms
    }

    /// The offset in milliseconds (what stores compute with).
    pub fn offset_ms(&self) -> u64 {
        self.offset_ms
    }

    /// The id of the period containing store time `epoch_ms` (milliseconds since the Unix
    /// epoch): `floor((epoch_ms − offset) / length)`. Stores that compute in their own language
    /// must give the same answer (floor, not truncation, for times before the offset).
    pub fn id_at_ms(&self, epoch_ms: i64) -> i64 {
        let length = i64::try_from(self.length_ms).unwrap_or(i64::MAX);
        let offset = i64::try_from(self.offset_ms).unwrap_or(i64::MAX);
        epoch_ms.saturating_sub(offset).div_euclid(length)
    }

    /// The id of the period containing store time `at`.
    pub fn id_at(&self, at: SystemTime) -> i64 {
        self.id_at_ms(epoch_ms(at))
    }

    /// When period `id` starts, by the store clock.
    pub fn start_of(&self, id: i64) -> SystemTime {
        from_epoch_ms(self.start_ms(id))
    }

    /// When period `id` starts, in milliseconds since the Unix epoch (saturating).
    pub fn start_ms(&self, id: i64) -> i64 {
        let ms = i128::from(id) * i128::from(self.length_ms) + i128::from(self.offset_ms);
        i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
    }

    /// The period containing store time `epoch_ms`: its id, start and end (milliseconds since
    /// the Unix epoch). What a store computes for a claim, from its own clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold::Period;
    /// let p = Period::every(Duration::from_secs(10))?.offset(Duration::from_secs(3))?;
    /// let w = p.window_at_ms(25_000);
    /// assert_eq!((w.id, w.from_ms, w.until_ms), (2, 23_000, 33_000));
    /// # Ok::<(), leasehold::error::PeriodError>(())
    /// ```
    pub fn window_at_ms(&self, epoch_ms: i64) -> PeriodWindow {
        let id = self.id_at_ms(epoch_ms);
        PeriodWindow {
            id,
            from_ms: self.start_ms(id),
            until_ms: self.start_ms(id.saturating_add(1)),
        }
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "every {}", Human(self.length()))?;
        if self.offset_ms > 0 {
            write!(f, " (offset {})", Human(self.offset_duration()))?;
        }
        Ok(())
    }
}

fn whole_ms(what: &'static str, value: Duration) -> Result<u64, PeriodError> {
    if !value.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(PeriodError::NotWholeMillis { what, value });
    }
    u64::try_from(value.as_millis()).map_err(|_| PeriodError::TooLong {
        length: value,
        max: MAX_DURATION,
    })
}

/// Milliseconds since the Unix epoch (negative before it).
pub fn epoch_ms(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// The time `ms` milliseconds after the Unix epoch (before it when negative).
pub fn from_epoch_ms(ms: i64) -> SystemTime {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH.checked_add(d).unwrap_or(UNIX_EPOCH)
    } else {
        UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
    }
}

/// A period definition or claim the library cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeriodError {
    /// Shorter than [`MIN_PERIOD`].
    #[error(
        "period length of {length:?} is too short; the minimum is {min:?} (leasehold::limits::MIN_PERIOD)"
    )]
    TooShort {
        /// The length given.
        length: Duration,
        /// [`MIN_PERIOD`].
        min: Duration,
    },
    /// Longer than [`MAX_DURATION`].
    #[error(
        "period length of {} is longer than the maximum of {} (leasehold::limits::MAX_DURATION)",
        Human(*length),
        Human(*max)
    )]
    TooLong {
        /// The length given.
        length: Duration,
        /// [`MAX_DURATION`].
        max: Duration,
    },
    /// Not a whole number of milliseconds.
    #[error(
        "{what} of {value:?} is not a whole number of milliseconds, which periods are counted in"
    )]
    NotWholeMillis {
        /// `"period length"` or `"period offset"`.
        what: &'static str,
        /// The value given.
        value: Duration,
    },
    /// The offset is not below the length.
    #[error("period offset of {offset:?} must be below the period length of {length:?}")]
    OffsetNotBelowLength {
        /// The offset given.
        offset: Duration,
        /// The period length.
        length: Duration,
    },
    /// A period was claimed on a lock with more than one slot.
    #[error(
        "a period can only be claimed on a single-holder lock (1 slot), not one of {slots} slots: \
         the ledger keeps one record per lock"
    )]
    NeedsSingleSlot {
        /// The slot count of the request.
        slots: u32,
    },
}

/// Checks that a request claiming a period asks for exactly one slot. Every store calls it in
/// `try_acquire` (through [`AcquireRequest::check`](crate::store::AcquireRequest::check)).
///
/// # Errors
///
/// [`PeriodError::NeedsSingleSlot`] for any other slot count.
pub fn check_period_slots(slots: u32) -> Result<(), PeriodError> {
    if slots == 1 {
        Ok(())
    } else {
        Err(PeriodError::NeedsSingleSlot { slots })
    }
}

/// One period of a [`Period`]: its id and its window on the store's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeriodWindow {
    /// The period id: `floor((t − offset) / length)` for any store time `t` inside it.
    pub id: i64,
    /// Its start (included), in milliseconds since the Unix epoch.
    pub from_ms: i64,
    /// Its end (excluded), in milliseconds since the Unix epoch.
    pub until_ms: i64,
}

/// The ledger entry of a lock: its latest period claim — the window claimed, when (store clock)
/// and to whom it was granted, and whether its action started — and when the latest claim that
/// started was granted ([`ran_at`](Self::ran_at)).
///
/// A period of any length or offset **counts as run** when a claim granted at or after its
/// start started its action; see [`judge_claim`]. A claim that never started is *claimed, not
/// run*: the next claim of the same period takes it over once its lease is released or expired,
/// and it never hides an earlier run (its record keeps `ran_at`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PeriodRecord {
    /// The id of the window claimed, under the claim's own period length and offset
    /// ([`Period::id_at`] of the grant's store time).
    pub period: i64,
    /// The start of the window claimed, by the store's clock.
    pub from: SystemTime,
    /// The end of the window claimed (excluded), by the store's clock.
    pub until: SystemTime,
    /// When the claim was granted, by the store's clock.
    pub at: SystemTime,
    /// The owner (node id) it was granted to.
    pub by: String,
    /// True once the claim's action started ([`LeaseStore::start_period`]); false while the
    /// period is only claimed.
    ///
    /// [`LeaseStore::start_period`]: crate::LeaseStore::start_period
    pub started: bool,
    /// When the latest claim whose action started was granted, by the store's clock: `at` when
    /// this claim started, an earlier claim's grant when this one has not, `None` when no claim
    /// of the lock is known to have started (or the record was written by a version that did
    /// not keep it).
    pub ran_at: Option<SystemTime>,
}

impl PeriodRecord {
    /// The window claimed as a [`Period`]-independent length: `until − from`.
    pub fn length(&self) -> Duration {
        self.until.duration_since(self.from).unwrap_or_default()
    }

    /// When the latest run was granted: [`ran_at`](Self::ran_at), or `at` when this claim
    /// started.
    pub fn last_run(&self) -> Option<SystemTime> {
        let this = self.started.then_some(self.at);
        this.max(self.ran_at)
    }

    /// What to call the record in messages: `"ran"` or `"claimed, not run"`.
    pub fn state_text(&self) -> &'static str {
        if self.started {
            "ran"
        } else {
            "claimed, not run"
        }
    }
}

impl fmt::Display for PeriodRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "period {} ({} to {}) {}: granted at {} to {}",
            self.period,
            format_utc(self.from),
            format_utc(self.until),
            self.state_text(),
            format_utc(self.at),
            self.by
        )?;
        match self.ran_at {
            Some(ran) if !self.started => {
                write!(f, " (the last run was granted at {})", format_utc(ran))
            }
            _ => Ok(()),
        }
    }
}

/// What the ledger makes of a period claim ([`judge_claim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimVerdict {
    /// No run counts for the period: grant it if the lock is free (and record the claim).
    Free,
    /// The period is claimed by a holder that has not started yet and still holds the lock:
    /// contention ([`Acquisition::Taken`](crate::store::Acquisition::Taken)); it may start, or let
    /// go and leave the period to the next claim.
    Claimed,
    /// The period already ran: [`Acquisition::AlreadyRan`](crate::store::Acquisition::AlreadyRan)
    /// with the record, also when the lock is held.
    Ran,
}

/// The ledger's rule, in one place for every store that decides in Rust (stores that decide in
/// a script or a statement implement the same rule and the conformance suite checks it):
///
/// * `latest`: the lock's latest claim — when it was granted (ms since the epoch, store clock)
///   and whether its action started; `None` for a lock never claimed.
/// * `ran_at_ms`: when the latest claim whose action started was granted (the record's
///   [`ran_at`](PeriodRecord::ran_at)); `None` when unknown, and then a started `latest` stands
///   for it.
/// * `window_from_ms`: the start of the period claimed now, from the store's clock.
/// * `lock_live`: whether slot 0 holds a live lease (of anyone) now.
///
/// The period **ran** when a claim granted at or after its start started its action, whichever
/// claim came later. A claim granted **before** the start does not count for it (so a changed
/// period length or offset never refuses for ever, and never skips a period whose window starts
/// after the last run). A claim granted at or after the start that has not started holds the
/// period only while its lease is live; it never hides an earlier run of the same period (under
/// another length, an unstarted claim of a short window can come after a run of a long one).
///
/// ```
/// use leasehold::store::{ClaimVerdict, judge_claim};
/// assert_eq!(judge_claim(None, None, 1_000, false), ClaimVerdict::Free);
/// assert_eq!(judge_claim(Some((999, true)), None, 1_000, false), ClaimVerdict::Free); // an earlier period
/// assert_eq!(judge_claim(Some((1_500, true)), None, 1_000, true), ClaimVerdict::Ran);
/// assert_eq!(judge_claim(Some((1_500, false)), None, 1_000, true), ClaimVerdict::Claimed);
/// assert_eq!(judge_claim(Some((1_500, false)), None, 1_000, false), ClaimVerdict::Free); // taken over
/// // A run at 1.2 s, then a claim at 1.5 s that never started: the period from 1 s ran.
/// assert_eq!(judge_claim(Some((1_500, false)), Some(1_200), 1_000, false), ClaimVerdict::Ran);
/// ```
pub fn judge_claim(
    latest: Option<(i64, bool)>,
    ran_at_ms: Option<i64>,
    window_from_ms: i64,
    lock_live: bool,
) -> ClaimVerdict {
    let latest_run = latest.filter(|&(_, started)| started).map(|(at, _)| at);
    if latest_run
        .max(ran_at_ms)
        .is_some_and(|ran| ran >= window_from_ms)
    {
        return ClaimVerdict::Ran;
    }
    match latest {
        Some((at_ms, false)) if at_ms >= window_from_ms && lock_live => ClaimVerdict::Claimed,
        _ => ClaimVerdict::Free,
    }
}

/// The answer of [`LeaseStore::start_period`](crate::LeaseStore::start_period).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub enum PeriodStart {
    /// The claim is recorded as started (also when it already was): the action may run.
    Started,
    /// The lease is no longer held by this token (released, expired, force-released, or not a
    /// period claim's): the action must not run.
    NotHeld,
}

/// `at` as RFC 3339 in UTC with milliseconds (`2026-11-30T13:00:00.250Z`): how leasehold writes
/// times in its messages, records and command-line output.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// assert_eq!(
///     leasehold::store::format_utc(UNIX_EPOCH + Duration::from_millis(1_796_043_600_250)),
///     "2026-11-30T13:00:00.250Z"
/// );
/// ```
pub fn format_utc(at: SystemTime) -> String {
    let ms = epoch_ms(at);
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_floor_and_offsets_shift() {
        let p = Period::every(Duration::from_secs(10)).unwrap();
        assert_eq!(p.id_at_ms(0), 0);
        assert_eq!(p.id_at_ms(9_999), 0);
        assert_eq!(p.id_at_ms(10_000), 1);
        assert_eq!(p.id_at_ms(-1), -1);
        let p = p.offset(Duration::from_secs(3)).unwrap();
        assert_eq!(p.id_at_ms(2_999), -1);
        assert_eq!(p.id_at_ms(3_000), 0);
        assert_eq!(p.start_of(2), UNIX_EPOCH + Duration::from_secs(23));
        assert_eq!(p.id_at(p.start_of(7)), 7);
    }

    #[test]
    fn bad_periods_are_typed_errors() {
        assert!(matches!(
            Period::every(Duration::ZERO),
            Err(PeriodError::TooShort { .. })
        ));
        assert!(matches!(
            Period::every(MAX_DURATION + Duration::from_millis(1)),
            Err(PeriodError::TooLong { .. })
        ));
        assert!(Period::every(MAX_DURATION).is_ok());
        assert!(matches!(
            Period::every(Duration::from_micros(1500)),
            Err(PeriodError::NotWholeMillis { .. })
        ));
        let p = Period::every(Duration::from_secs(1)).unwrap();
        let e = p.offset(Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("below the period length"), "{e}");
        assert!(check_period_slots(2).is_err() && check_period_slots(1).is_ok());
        assert!(check_period_slots(0).is_err());
    }

    #[test]
    fn records_render_in_utc() {
        assert_eq!(
            format_utc(UNIX_EPOCH + Duration::from_millis(1_796_043_600_250)),
            "2026-11-30T13:00:00.250Z"
        );
    }
}
