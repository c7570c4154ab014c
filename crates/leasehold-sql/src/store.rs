//! `SqlStore`: leases in one table keyed by `(lock_name, slot)`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, HandOff, ListCursor, LockPage, PeriodStart, ReleaseNotifier,
    ReleaseSignal, ReleasedTo, StoreResult, WaiterId, answer_each, check_slots,
};
use leasehold::{
    Holder, Lease, LeaseStore, LockName, PeriodRecord,
    store::{Extension, LockState, Release},
};

use crate::dialect::Dialect;
use crate::feed::Feed;
use crate::options::SqlOptions;
use crate::protocol::{Attempt, Queries, Waiters};
use crate::rows::{holders, lease};
use crate::schema::{LedgerColumns, Schema};

/// A lease store on SQLite, PostgreSQL or MySQL/MariaDB.
///
/// * One row per `(lock_name, slot)`; rows are kept on release so fences only grow. A new row's
///   fence starts at the database clock in ms × 1000, so even a row deleted by hand continues above
///   its old fences.
/// * Acquire is one atomic upsert that takes the row only if it is missing, released, expired or
///   already ours, timed by the **database clock**; extend and release are token-checked single
///   statements. A release marks the row free outright (no token, expiry 0), so it is free to
///   every clock; a minimum lease instead shortens the row's expiry.
/// * SQLite has no server clock, so each process would judge expiry by its own wall clock. SQLite
///   leases are therefore timed by the wall clock **and** the host's boot clock (`/proc/uptime`,
///   tagged with the boot id), which every process on the host shares and which no clock step
///   or per-process fake time moves; a row is taken over only when its lease is over on both.
///   Rows from another boot are judged by the wall clock alone.
/// * PostgreSQL wakes waiters on release with `LISTEN`/`NOTIFY`; SQLite and MySQL waiters poll with
///   jittered back-off.
/// * MySQL's upsert is a write even when it changes nothing, so after a refusal the next attempts
///   on that lock read its row first and write only when it looks free: a waiting follower writes
///   nothing, and its refusals name the holder (and so when its lease could end).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::Elector;
/// use leasehold_sql::SqlStore;
///
/// let store = SqlStore::connect("postgres://app@db.internal/app").await?;
/// let elector = Elector::new(Arc::new(store));
/// elector.run_if_leader("nightly-report", |ctx| async move { ctx.fence() }).await?;
/// # Ok(()) }
/// ```
pub struct SqlStore {
    pub(crate) queries: Queries,
    pub(crate) schema: Schema,
    pub(crate) dialect: Dialect,
    pub(crate) options: SqlOptions,
    /// Other clients' releases, where the database can report them (see `feed`).
    pub(crate) feed: Mutex<Option<Feed>>,
    pub(crate) notifier: Arc<ReleaseNotifier>,
    pub(crate) description: String,
    /// Whether acquisitions were recently refused and releases found waiters (hand-off on
    /// PostgreSQL).
    #[cfg(feature = "postgres")]
    pub(crate) contended: crate::contended::Contended,
    /// The single-slot locks whose last acquisition was refused (MySQL: read before writing,
    /// see `refused`).
    #[cfg(feature = "mysql")]
    pub(crate) refused: crate::refused::RefusedLocks,
}

impl SqlStore {
    /// True if an acquisition of single-slot `lock` should read its slot before it writes: on
    /// MySQL/MariaDB, after a refusal of the lock through this store (see `refused`).
    fn reads_first(&self, lock: &LockName) -> bool {
        #[cfg(feature = "mysql")]
        if self.dialect == Dialect::MySql {
            return self.refused.contains(lock);
        }
        let _ = lock;
        false
    }

    /// Remembers whether the last acquisition of single-slot `lock` was `granted` (MySQL).
    fn acquired(&self, lock: &LockName, granted: bool) {
        #[cfg(feature = "mysql")]
        if self.dialect == Dialect::MySql {
            if granted {
                self.refused.granted(lock);
            } else {
                self.refused.refused(lock);
            }
        }
        let _ = (lock, granted);
    }

    fn notify_release(&self, lock: &LockName) {
        // PostgreSQL's NOTIFY reaches this process's waiters too; elsewhere wake them directly.
        if self.dialect != Dialect::Postgres {
            self.notifier.notify(lock);
        }
    }
}

#[async_trait]
impl LeaseStore for SqlStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        req.check()?;
        let token = req.token.to_hex();
        let waiter = req.waiter.map(WaiterId::to_hex);
        if let Some(period) = req.period {
            self.schema.check_ledger(&self.queries).await?;
            let (q, waiters) = (&self.queries, self.waiters(waiter.as_deref()).await?);
            return q.claim_period(req, period, &token, waiters).await;
        }
        self.migrate().await?;
        let single = req.slots <= 1;
        let (candidates, waiters) = if single {
            let waiters = self.waiters(waiter.as_deref()).await?;
            if self.reads_first(&req.lock) {
                // Held by another node: a refusal without a write, naming the holder and so
                // when its lease could end. Free, or held under this node id (perhaps by this
                // very request, applied before): the upsert decides.
                let rows = self.queries.state(&req.lock, 1).await?;
                if let Some(holder) = holders(&rows).into_iter().find(|h| h.owner != *req.owner) {
                    self.acquired(&req.lock, false);
                    return Ok(Acquisition::Taken(Some(holder)));
                }
            }
            (vec![0], waiters)
        } else {
            let slots = self.queries.candidate_slots(req, &token).await?;
            (slots, Waiters::Ignored)
        };
        // On MySQL/MariaDB, whose releases reach no other process, a refusal names the holder
        // from the read back of the upsert, so that a follower paces its next attempt by the
        // holder's expiry (without one, by a third of its own lease, whatever the holder's).
        let mut holder = None;
        for slot in candidates {
            match self.queries.acquire(req, slot, &token, waiters).await? {
                Attempt::Granted(row) => {
                    if single {
                        self.acquired(&req.lock, true);
                    }
                    return Ok(Acquisition::Elected(lease(req, slot, row, None)));
                }
                Attempt::Refused(row) => holder = row.or(holder),
            }
        }
        if single {
            self.acquired(&req.lock, false);
        }
        if matches!(waiters, Waiters::Kept { .. }) {
            self.refused();
        }
        Ok(Acquisition::Taken(
            holder.and_then(|row| holders(&[row]).pop()),
        ))
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.migrate().await?;
        self.queries.extend(lease, ttl).await
    }

    /// One statement for every lease of one ttl (see `protocol/`).
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        let renewed = async {
            self.migrate().await?;
            self.queries.extend_many(leases).await
        };
        answer_each(renewed.await, leases.len())
    }

    fn renews_in_batches(&self) -> bool {
        true
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.migrate().await?;
        if self.queries.release_lease(lease, linger).await? == 0 {
            return Ok(Release::NotHeld);
        }
        if linger.is_zero() {
            self.notify_release(&lease.lock);
        }
        Ok(Release::Released)
    }

    /// One `UPDATE` of slot 0's row, by the token and the claim's: `ledger_pending` set to
    /// `NULL`. On a table without the claim columns (`create_schema(false)`) no claim of this
    /// version can have been granted: `NotHeld`.
    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        if lease.slot != 0 || self.schema.ledger(&self.queries).await? != LedgerColumns::All {
            return Ok(PeriodStart::NotHeld);
        }
        let token = lease.token.to_hex();
        Ok(
            match self.queries.start_period(&lease.lock, &token).await? {
                0 => PeriodStart::NotHeld,
                _ => PeriodStart::Started,
            },
        )
    }

    /// One read of slot 0's row. A table without the claim columns (`create_schema(false)` on
    /// a table of an older version) still shows an older version's records, as started.
    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let Some(claims) = self.schema.claims(&self.queries).await? else {
            return Ok(None);
        };
        let ledger = self.queries.read_period(lock, claims).await?;
        Ok(ledger.and_then(|l| l.record()))
    }

    /// One transaction on slot 0's row: the ledger read with the row locked, then its `ledger_*`
    /// columns set to `NULL` (the row, its lease and its fence stay). On a table without the
    /// claim columns (`create_schema(false)` on a table of an older version) the first three.
    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let Some(claims) = self.schema.claims(&self.queries).await? else {
            return Ok(None);
        };
        let ledger = self.queries.clear_period(lock, claims).await?;
        Ok(ledger.and_then(|l| l.record()))
    }

    /// On PostgreSQL (whose table has hand-off's column) a release of slot 0 without a linger
    /// keeps the lock as `to` says, in the release's one statement; elsewhere `release`.
    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        #[cfg(feature = "postgres")]
        if self.hands_off()
            && linger.is_zero()
            && lease.slot == 0
            && to.waiter().is_some()
            && self.schema.hands_off(&self.queries).await?
            && let Some(released) = self.queries.release_to(lease, to, &self.contended).await?
        {
            return Ok(released);
        }
        let _ = to;
        Ok(ReleasedTo::plain(self.release(lease, linger).await?))
    }

    /// True on PostgreSQL: its table keeps hand-off's line (in the `waiting` column of slot 0's
    /// row, added on first use). A table without it (`create_schema(false)` on a table from an
    /// older version) only makes the store release and acquire without hand-off.
    fn hands_off(&self) -> bool {
        self.statements().hand_off.is_some()
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        self.migrate().await?;
        let rows = self.queries.state(lock, slots).await?;
        Ok(LockState::new(lock.clone(), slots, holders(&rows)))
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        check_slots(slots)?;
        self.migrate().await?;
        let rows = self.queries.force_release(lock, slots).await?;
        if !rows.is_empty() {
            self.notify_release(lock);
        }
        Ok(holders(&rows))
    }

    /// One bounded read after the cursor, then the lock it ends on (see `list.rs`).
    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.migrate().await?;
        crate::list::page(&self.queries, after).await
    }

    /// Every client's releases on PostgreSQL (`LISTEN`) and on an SQLite file (its
    /// `data_version`); this store's own on MySQL/MariaDB and an in-memory SQLite database.
    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        let q = &self.queries;
        Some(Feed::subscribe(
            &self.feed,
            q.pool(),
            q.channel(),
            &self.notifier,
            lock,
        ))
    }

    /// An in-memory SQLite database (`sqlite::memory:`, `mode=memory`) is this process's alone.
    fn is_process_local(&self) -> bool {
        crate::feed::process_local(self.pool())
    }

    /// PostgreSQL and MySQL/MariaDB read the database server's clock; SQLite reads this host's.
    fn clock_source(&self) -> leasehold::store::ClockSource {
        match self.dialect {
            Dialect::Sqlite => leasehold::store::ClockSource::Client,
            Dialect::Postgres | Dialect::MySql => leasehold::store::ClockSource::Server,
        }
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
