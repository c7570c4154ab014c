//! `MemoryStore`: the in-process reference store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::StoreResult;
use crate::limits::{MAX_LIST_LOCKS, check_slots, deadline_after};
use crate::name::LockName;
use crate::store::contract::LeaseStore;
use crate::store::hand_off::{HandOff, WaitLine};
use crate::store::lease::Acquisition;
use crate::store::lease::{
    AcquireRequest, Extension, Holder, Lease, LockState, Release, ReleasedTo, Token,
};
use crate::store::list::{ListCursor, ListedLock, LockPage};
use crate::store::period::{ClaimVerdict, PeriodRecord, PeriodStart, PeriodWindow, judge_claim};
use crate::store::signal::{ReleaseNotifier, ReleaseSignal};

/// An in-process store: a map behind a mutex, timed by the tokio clock.
///
/// Because it uses `tokio::time::Instant`, tests and simulations on paused tokio time are
/// deterministic. It wakes waiters on release. Leases are visible only inside this process, so it
/// coordinates tasks, not machines; use it for tests, simulations and single-process services.
/// Fences start at 1 and never repeat while the store lives.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let ran = elector.run_if_leader("job", |_| async { 7 }).await?;
/// assert_eq!(ran, Some(7));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    locks: Mutex<HashMap<LockName, Vec<Row>, foldhash::fast::RandomState>>,
    notifier: ReleaseNotifier,
    epoch: (Instant, SystemTime),
}

#[derive(Debug, Clone)]
struct Row {
    fence: u64,
    holder: Option<Held>,
    /// The period ledger (slot 0 only): the latest period claim.
    ledger: Option<Ledger>,
    /// The waiting electors and the hand-off (slot 0 only, single-slot requests).
    line: WaitLine,
}

/// A lock's latest period claim.
#[derive(Debug, Clone)]
struct Ledger {
    window: PeriodWindow,
    at: Instant,
    by: Arc<str>,
    token: Token,
    started: bool,
    /// When the latest claim that started was granted (this one's `at` once it started).
    ran_at: Option<Instant>,
}

#[derive(Debug, Clone)]
struct Held {
    owner: Arc<str>,
    token: Token,
    acquired_at: Instant,
    expires_at: Instant,
    period: Option<i64>,
}

impl Held {
    fn live(&self, now: Instant) -> bool {
        self.expires_at > now
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    ///
    /// Its clock (the times in leases, holders and ledger records, and the period ids it
    /// computes) reads `SystemTime::now()` at creation and advances with tokio time from there.
    pub fn new() -> Self {
        Self::with_clock_origin(SystemTime::now())
    }

    /// An empty store whose clock reads exactly `origin` at creation and advances with tokio
    /// time from there (so on paused time it moves only as virtual time does).
    ///
    /// [`new`](Self::new) anchors the clock to the wall clock, so the store times it answers,
    /// and where the [period ledger](crate::Period)'s boundaries fall relative to the start, depend on
    /// when the store was made. A fixed origin makes them reproducible: simulations and tests
    /// that place period boundaries at known virtual instants use one (a whole multiple of the
    /// period, such as the Unix epoch, puts the start of a period at creation).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() -> leasehold::Result<()> {
    /// use std::sync::Arc;
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use leasehold::{Elector, MemoryStore, Period, Outcome};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::with_clock_origin(UNIX_EPOCH)));
    /// let every_10s = Period::every(Duration::from_secs(10))?;
    /// tokio::time::sleep(Duration::from_secs(25)).await; // the store's clock reads epoch + 25 s
    /// let ran = elector
    ///     .run_once_per("job", every_10s, |ctx| async move {
    ///         Ok::<_, String>((ctx.lease().period, ctx.lease().acquired_at))
    ///     })
    ///     .await?;
    /// assert_eq!(ran, Outcome::Elected((Some(2), UNIX_EPOCH + Duration::from_secs(25))));
    /// # Ok(()) }
    /// ```
    pub fn with_clock_origin(origin: SystemTime) -> Self {
        Self {
            locks: Mutex::new(HashMap::default()),
            notifier: ReleaseNotifier::default(),
            epoch: (Instant::now(), origin),
        }
    }

    fn wall(&self, at: Instant) -> SystemTime {
        self.epoch.1 + at.saturating_duration_since(self.epoch.0)
    }

    /// Extends `lease` to `ttl` from `now` if its token holds the slot live.
    fn extend_row(
        &self,
        locks: &mut HashMap<LockName, Vec<Row>, foldhash::fast::RandomState>,
        lease: &Lease,
        ttl: Duration,
        now: Instant,
    ) -> Extension {
        let held = locks
            .get_mut(&lease.lock)
            .and_then(|rows| rows.get_mut(slot_index(lease.slot)))
            .and_then(|row| row.holder.as_mut())
            .filter(|h| h.token == lease.token && h.live(now));
        match held {
            Some(held) => {
                held.expires_at = deadline_after(now, ttl);
                Extension::Extended {
                    expires_at: self.wall(held.expires_at),
                }
            }
            None => Extension::NotHeld,
        }
    }

    fn with_rows<T>(
        &self,
        f: impl FnOnce(&mut HashMap<LockName, Vec<Row>, foldhash::fast::RandomState>) -> T,
    ) -> T {
        let mut guard = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    fn holder(&self, slot: usize, fence: u64, held: &Held) -> Holder {
        Holder {
            slot: u32::try_from(slot).unwrap_or(u32::MAX),
            owner: String::from(&*held.owner),
            fence,
            acquired_at: self.wall(held.acquired_at),
            expires_at: self.wall(held.expires_at),
        }
    }

    fn record(&self, ledger: &Ledger) -> PeriodRecord {
        PeriodRecord {
            period: ledger.window.id,
            from: crate::store::period::from_epoch_ms(ledger.window.from_ms),
            until: crate::store::period::from_epoch_ms(ledger.window.until_ms),
            at: self.wall(ledger.at),
            by: String::from(&*ledger.by),
            started: ledger.started,
            ran_at: ledger.ran_at.map(|at| self.wall(at)),
        }
    }

    /// Among the first `wanted` slots of a lock's `rows`, the live holder whose lease ends
    /// first: whom a refusal names.
    fn first_to_free(&self, rows: Option<&[Row]>, wanted: usize, now: Instant) -> Option<Holder> {
        rows?
            .iter()
            .take(wanted)
            .enumerate()
            .filter_map(|(slot, row)| {
                let held = row.holder.as_ref().filter(|h| h.live(now))?;
                Some((held.expires_at, self.holder(slot, row.fence, held)))
            })
            .min_by_key(|(ends, _)| *ends)
            .map(|(_, holder)| holder)
    }

    fn epoch_ms(&self, at: Instant) -> i64 {
        crate::store::period::epoch_ms(self.wall(at))
    }

    fn lease(&self, lock: &LockName, slot: u32, fence: u64, held: &Held) -> Lease {
        Lease {
            period: held.period,
            lock: lock.clone(),
            slot,
            owner: String::from(&*held.owner),
            token: held.token,
            fence,
            acquired_at: self.wall(held.acquired_at),
            expires_at: self.wall(held.expires_at),
        }
    }

    /// One acquisition's decision on `locks`: the lease granted (slot, fence, holder), or why
    /// not (`None`: held, or kept for another elector; `Some`: the ledger's record).
    fn grant(
        &self,
        locks: &mut HashMap<LockName, Vec<Row>, foldhash::fast::RandomState>,
        req: &AcquireRequest,
        wanted: usize,
        now: Instant,
        period: Option<PeriodWindow>,
    ) -> Result<(usize, u64, Held), Option<PeriodRecord>> {
        // Rows exist only for slots ever granted: a lock's vector grows one slot at a time,
        // never to the requested slot count.
        let rows = locks.entry(req.lock.clone()).or_default();
        let used = rows.len().min(wanted);
        if let Some((slot, row)) = rows[..used].iter().enumerate().find(|(_, r)| {
            r.holder
                .as_ref()
                .is_some_and(|h| h.token == req.token && h.live(now))
        }) {
            let Some(held) = row.holder.as_ref() else {
                return Err(None);
            };
            return Ok((slot, row.fence, held.clone()));
        }
        // The ledger is slot 0's (period claims have exactly one slot), judged by time.
        if let Some(window) = period {
            let slot0 = rows.first();
            let latest = slot0.and_then(|r| r.ledger.as_ref());
            let live = slot0
                .and_then(|r| r.holder.as_ref())
                .is_some_and(|h| h.live(now));
            let at = latest.map(|l| (self.epoch_ms(l.at), l.started));
            let ran_at = latest.and_then(|l| l.ran_at).map(|at| self.epoch_ms(at));
            match judge_claim(at, ran_at, window.from_ms, live) {
                ClaimVerdict::Free => {}
                ClaimVerdict::Claimed => return Err(None),
                ClaimVerdict::Ran => {
                    return Err(latest.map(|l| self.record(l)));
                }
            }
        }
        let free = rows[..used]
            .iter()
            .position(|r| r.holder.as_ref().is_none_or(|h| !h.live(now)));
        let single = wanted == 1;
        let kept = single
            && rows
                .first()
                .is_some_and(|r| r.line.kept_from(req.waiter, now));
        let slot = match free {
            Some(_) if kept => return Err(None),
            Some(slot) => slot,
            None if used < wanted => {
                rows.push(Row {
                    fence: 0,
                    holder: None,
                    ledger: None,
                    line: WaitLine::default(),
                });
                used
            }
            None => return Err(None),
        };
        let Some(row) = rows.get_mut(slot) else {
            return Err(None);
        };
        row.fence += 1;
        if single {
            row.line.granted(req.waiter, now);
        }
        if let Some(window) = period {
            let ran_at = row.ledger.as_ref().and_then(|l| l.ran_at);
            row.ledger = Some(Ledger {
                window,
                at: now,
                by: Arc::clone(&req.owner),
                token: req.token,
                started: false,
                ran_at,
            });
        }
        let held = row.holder.insert(Held {
            owner: Arc::clone(&req.owner),
            token: req.token,
            acquired_at: now,
            expires_at: deadline_after(now, req.ttl),
            period: period.map(|w| w.id),
        });
        Ok((slot, row.fence, held.clone()))
    }

    /// A release (see [`LeaseStore::release_to`]): one step under the lock, nothing awaited.
    fn free(&self, lease: &Lease, linger: Duration, to: HandOff) -> ReleasedTo {
        let now = Instant::now();
        // `freed`: (send the release signal, kept for another elector), or None if not held.
        let freed = self.with_rows(|locks| {
            let row = locks
                .get_mut(&lease.lock)?
                .get_mut(slot_index(lease.slot))?;
            let held = row
                .holder
                .as_mut()
                .filter(|h| h.token == lease.token && h.live(now))?;
            if linger.is_zero() {
                row.holder = None;
                let to = if lease.slot == 0 { to } else { HandOff::Anyone };
                let kept_for_another = row.line.freed(to, now);
                Some((!matches!(to, HandOff::Keep(_)), kept_for_another))
            } else {
                held.expires_at = held.expires_at.min(deadline_after(now, linger));
                Some((false, false))
            }
        });
        let Some((signal, kept_for_another)) = freed else {
            return ReleasedTo::plain(Release::NotHeld);
        };
        if signal {
            self.notifier.notify(&lease.lock);
        }
        ReleasedTo::new(Release::Released, kept_for_another)
    }
}

fn slot_index(slot: u32) -> usize {
    usize::try_from(slot).unwrap_or(usize::MAX)
}

#[async_trait]
impl LeaseStore for MemoryStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        let wanted = slot_index(req.check()?);
        let now = Instant::now();
        let period = req.period.map(|p| p.window_at_ms(self.epoch_ms(now)));
        self.with_rows(|locks| {
            let answer = self.grant(locks, req, wanted, now, period);
            // A refused single-slot request of a waiting elector joins the lock's line.
            if matches!(answer, Err(None))
                && wanted == 1
                && let Some(who) = req.waiter
                && let Some(row) = locks.get_mut(&req.lock).and_then(|rows| rows.first_mut())
            {
                row.line.refused(who, now);
            }
            Ok(match answer {
                Ok((slot, fence, held)) => Acquisition::Elected(self.lease(
                    &req.lock,
                    u32::try_from(slot).unwrap_or(u32::MAX),
                    fence,
                    &held,
                )),
                Err(None) => Acquisition::Taken(self.first_to_free(
                    locks.get(&req.lock).map(Vec::as_slice),
                    wanted,
                    now,
                )),
                Err(Some(record)) => Acquisition::AlreadyRan(record),
            })
        })
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let now = Instant::now();
        Ok(self.with_rows(|locks| self.extend_row(locks, lease, ttl, now)))
    }

    /// Every entry under one lock of the map: the memory store's one request.
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        let now = Instant::now();
        self.with_rows(|locks| {
            leases
                .iter()
                .map(|(lease, ttl)| Ok(self.extend_row(locks, lease, *ttl, now)))
                .collect()
        })
    }

    fn renews_in_batches(&self) -> bool {
        true
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        Ok(self.free(lease, linger, HandOff::Anyone).release)
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        Ok(self.free(lease, linger, to))
    }

    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        let now = Instant::now();
        let started = self.with_rows(|locks| {
            let row = locks.get_mut(&lease.lock)?.first_mut()?;
            row.holder
                .as_ref()
                .filter(|h| lease.slot == 0 && h.token == lease.token && h.live(now))?;
            let ledger = row.ledger.as_mut().filter(|l| l.token == lease.token)?;
            ledger.started = true;
            ledger.ran_at = Some(ledger.at);
            Some(())
        });
        Ok(started.map_or(PeriodStart::NotHeld, |()| PeriodStart::Started))
    }

    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        Ok(self.with_rows(|locks| {
            let ledger = locks.get(lock)?.first()?.ledger.as_ref()?;
            Some(self.record(ledger))
        }))
    }

    /// One step under the lock: slot 0's ledger taken out of its row (the row, its holder and
    /// its fence stay).
    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        Ok(self.with_rows(|locks| {
            let ledger = locks.get_mut(lock)?.first_mut()?.ledger.take()?;
            Some(self.record(&ledger))
        }))
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        let now = Instant::now();
        let holders = self.with_rows(|locks| {
            let Some(rows) = locks.get(lock) else {
                return Vec::new();
            };
            rows.iter()
                .take(slot_index(slots))
                .enumerate()
                .filter_map(|(slot, row)| {
                    let held = row.holder.as_ref().filter(|h| h.live(now))?;
                    Some(self.holder(slot, row.fence, held))
                })
                .collect()
        });
        Ok(LockState {
            lock: lock.clone(),
            slots,
            holders,
        })
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        check_slots(slots)?;
        let now = Instant::now();
        let freed: Vec<Holder> = self.with_rows(|locks| {
            let Some(rows) = locks.get_mut(lock) else {
                return Vec::new();
            };
            rows.iter_mut()
                .take(slot_index(slots))
                .enumerate()
                .filter_map(|(slot, row)| {
                    row.line.clear_keep();
                    let held = row.holder.take_if(|h| h.live(now))?;
                    Some(self.holder(slot, row.fence, &held))
                })
                .collect()
        });
        if !freed.is_empty() {
            self.notifier.notify(lock);
        }
        Ok(freed)
    }

    /// Names in order, after the cursor's name (the last of the page before): one pass over the
    /// locks of this process, which holds them all in memory anyway.
    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        let now = Instant::now();
        let after = after.map(ListCursor::as_str);
        let mut live: Vec<ListedLock> = self.with_rows(|locks| {
            locks
                .iter()
                .filter(|(name, _)| after.is_none_or(|a| name.as_str() > a))
                .filter_map(|(name, rows)| {
                    let holders: Vec<Holder> = rows
                        .iter()
                        .enumerate()
                        .filter_map(|(slot, row)| {
                            let held = row.holder.as_ref().filter(|h| h.live(now))?;
                            Some(self.holder(slot, row.fence, held))
                        })
                        .collect();
                    (!holders.is_empty()).then(|| ListedLock {
                        lock: name.clone(),
                        holders,
                    })
                })
                .collect()
        });
        live.sort_by(|a, b| a.lock.cmp(&b.lock));
        let next = (live.len() > MAX_LIST_LOCKS)
            .then(|| live.get(MAX_LIST_LOCKS - 1))
            .flatten()
            .map(|last| ListCursor::after_lock(&last.lock));
        live.truncate(MAX_LIST_LOCKS);
        Ok(LockPage::new(live, next))
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        // Every client of this store shares its state, and so its notifier.
        Some(self.notifier.subscribe(lock).reaching_every_client_if(true))
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        true
    }

    fn hands_off(&self) -> bool {
        true
    }

    fn is_process_local(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        "memory".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::store::period::Period;

    fn request(owner: &str, period: Option<Period>) -> AcquireRequest {
        let lock = LockName::new("job").expect("a valid name");
        let req = AcquireRequest::new(lock, 1, owner, Token::random(), Duration::from_secs(5));
        match period {
            Some(p) => req.with_period(p),
            None => req,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_clock_origin_fixes_store_times_and_period_ids() {
        let origin = UNIX_EPOCH + Duration::from_secs(1_000);
        let store = MemoryStore::with_clock_origin(origin);
        tokio::time::sleep(Duration::from_millis(7_250)).await;
        let lease = store
            .try_acquire(&request("a", None))
            .await
            .expect("the memory store does not fail")
            .elected()
            .expect("a free lock");
        assert_eq!(lease.acquired_at, origin + Duration::from_millis(7_250));
        assert_eq!(lease.expires_at, origin + Duration::from_millis(12_250));
        let release = store.release(&lease, Duration::ZERO).await;
        assert_eq!(release.ok(), Some(Release::Released));

        // Periods of 10 s from the epoch: store time 1007.25 s is in period 100.
        let every_10s = Period::every(Duration::from_secs(10)).expect("a valid period");
        let first = store.try_acquire(&request("a", Some(every_10s))).await;
        let lease = first.ok().and_then(Acquisition::elected).expect("granted");
        assert_eq!(lease.period, Some(100));
        let start = store.start_period(&lease).await;
        assert_eq!(start.ok(), Some(PeriodStart::Started));
        assert!(store.release(&lease, Duration::ZERO).await.is_ok());
        let again = store.try_acquire(&request("b", Some(every_10s))).await;
        let record = again.ok().and_then(|a| a.already_ran().cloned());
        assert_eq!(
            record,
            Some(PeriodRecord {
                period: 100,
                from: UNIX_EPOCH + Duration::from_secs(1_000),
                until: UNIX_EPOCH + Duration::from_secs(1_010),
                at: origin + Duration::from_millis(7_250),
                by: "a".to_owned(),
                started: true,
                ran_at: Some(origin + Duration::from_millis(7_250)),
            })
        );
        // 2.75 s later the store's clock enters period 101.
        tokio::time::sleep(Duration::from_millis(2_750)).await;
        let next = store.try_acquire(&request("b", Some(every_10s))).await;
        let lease = next
            .ok()
            .and_then(Acquisition::elected)
            .expect("a new period");
        assert_eq!(lease.period, Some(101));
        assert_eq!(lease.acquired_at, origin + Duration::from_secs(10));
    }
}
