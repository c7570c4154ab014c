//! The `LeaseStore` trait: the contract every backend implements.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreResult;
use crate::name::LockName;
use crate::store::hand_off::HandOff;
use crate::store::lease::{
    AcquireRequest, Acquisition, Extension, Holder, Lease, LockState, Release, ReleasedTo,
};
use crate::store::list::{ListCursor, LockPage};
use crate::store::period::{PeriodRecord, PeriodStart};
use crate::store::signal::ReleaseSignal;
use crate::store::unsupported::Unsupported;

/// How many `state` reads the default [`LeaseStore::state_many`] has in flight at once.
const STATE_READS_AT_ONCE: usize = 16;

/// A lease store: atomic, single-round-trip operations on leases.
///
/// Stores contain no waiting loop, watchdog, events or metrics; the core provides those once for
/// every store. Every method is one atomic operation on the store (never check-then-act across two
/// round trips). Implementations must guarantee:
///
/// * `try_acquire` grants the lowest slot in `0..req.slots` that is free or expired, with a fence
///   strictly greater than any fence ever issued for that `(lock, slot)`, and computes expiry with
///   the store's clock. If `req.token` already holds a live slot of the lock, it returns that lease
///   (so a retried request that was applied is recognised). Contention is
///   `Ok(Acquisition::Taken(_))`, never `Err`. It first runs [`AcquireRequest::check`].
/// * **The period ledger.** When `req.period` is set (single-slot locks only), `try_acquire`
///   finds the window `[from, until)` of the period containing the store's now
///   ([`Period::window_at_ms`](crate::Period::window_at_ms) of the store's clock, milliseconds
///   since the Unix epoch) and judges the lock's record by time, in the same atomic operation
///   as the grant ([`judge_claim`](crate::store::judge_claim)): if the latest claim was granted
///   at or after `from` and has started, the claim is refused with
///   `Ok(Acquisition::AlreadyRan(record))` — also while the lock is held (waiting cannot
///   help); if it was granted at or after `from`, has not started and slot 0 is live, the
///   answer is `Ok(Acquisition::Taken(_))`; otherwise the claim is granted like any acquisition
///   (the lock must be free), and the grant replaces the record with the store time, the owner,
///   the request's token, the window (`from`, `until`, its id) and *not started*. A live lease
///   of the request's own token is returned as granted (the record unchanged). The record
///   survives release and expiry (like the fence). Requests without a period neither read nor
///   change the record.
/// * [`start_period`](Self::start_period) marks the record *started*, only for the token that
///   holds slot 0's live lease and made the latest claim.
/// * [`clear_period_ledger`](Self::clear_period_ledger) deletes the record (and only the
///   record: no lease, holder or fence changes) and returns it, in one atomic step.
/// * `extend` succeeds only if the token holds the slot **and** the lease has not expired; the new
///   expiry is store-now + `ttl`.
/// * `release` succeeds only for the live holder's token. With `linger > 0` it shortens the lease to
///   end `linger` from now instead of freeing it (minimum lease); it never lengthens a lease.
///   Records that keep fences must survive release.
/// * `state` reports live holders only.
///
/// The store must be usable as `Arc<dyn LeaseStore>`. The conformance suite in `leasehold-testkit`
/// checks all of this against a real server.
///
/// ```
/// use std::sync::Arc;
/// use leasehold::{LeaseStore, MemoryStore};
/// let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
/// assert_eq!(store.describe(), "memory");
/// ```
#[async_trait]
pub trait LeaseStore: Send + Sync + 'static {
    /// One atomic acquisition attempt.
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition>;

    /// Extends a live lease to end `ttl` from now (store clock).
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension>;

    /// Releases a lease, or shortens it to `linger` from now when `linger > 0`.
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release>;

    /// Releases a lease like [`release`](Self::release), and on a store that
    /// [hands off](Self::hands_off) leaves the freed lock to `to` (single-slot locks: slot 0;
    /// a linger or a slot above 0 ignores `to`). The default ignores `to`.
    ///
    /// Implementations that hand off must guarantee, for slot 0 and `linger` zero:
    ///
    /// * [`HandOff::Keep`]`(w)` frees the lease and keeps the lock for `w` for
    ///   [`HAND_OFF_HOLD`](crate::store::HAND_OFF_HOLD), *without* sending the release signal;
    /// * [`HandOff::Longest`]`(me)` frees the lease, keeps the lock for the waiting elector with
    ///   the earliest start of waiting other than `me` (if any) for `HAND_OFF_HOLD`, first
    ///   forgetting waiters not refused within [`WAITING_FRESH`](crate::store::WAITING_FRESH),
    ///   and sends the signal as `release` does; the answer says whether it found one
    ///   ([`ReleasedTo::kept_for_another`]);
    /// * [`HandOff::Anyone`] is `release`.
    ///
    /// and, in `try_acquire` of a single-slot request (`slots == 1`): a free lock kept for another
    /// elector than [`req.waiter`](AcquireRequest::waiter) is refused as
    /// [`Acquisition::Taken`]; a refusal records `req.waiter` (if any) as waiting — from its first
    /// refusal, its record refreshed by later ones, at most
    /// [`MAX_WAITERS`](crate::store::MAX_WAITERS) per lock; a grant forgets the grantee as a
    /// waiter and ends the keep, and a grant after a keep lapsed also forgets the elector it was
    /// kept for. A forced release ends any keep. None of this changes fences, expiries or who
    /// holds a lease: it only decides who may take a free lock first.
    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        let _ = to;
        Ok(ReleasedTo::plain(self.release(lease, linger).await?))
    }

    /// Extends many live leases at once: the answer for each entry `(lease, ttl)`, in the order
    /// given, exactly as [`extend`](Self::extend) would answer it alone (each entry is judged by
    /// itself: one lease lost does not fail the others). An entry may repeat a lease; every
    /// repetition is answered. The default calls `extend` concurrently, once for each distinct
    /// entry (a repetition gets its first occurrence's answer: two extensions of one lease at
    /// once could race each other on a compare-and-set store). A store that
    /// [renews in batches](Self::renews_in_batches) overrides it with as few requests as its
    /// primitives allow (one statement, one script, one session keep-alive), so that renewing
    /// every lease a process holds costs one heartbeat instead of one request per lease.
    ///
    /// A request that fails as a whole (the connection, a timeout) is that error for every
    /// entry it carried.
    ///
    /// # Errors
    ///
    /// Per entry, as [`extend`](Self::extend).
    ///
    /// # Cancel safety
    ///
    /// As [`extend`](Self::extend): dropped before the answer, some of the leases may have been
    /// extended and the others not; each is still held until its old or its new expiry.
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        let first = super::first_occurrences(leases);
        let distinct = first.iter().enumerate().filter(|&(i, &f)| i == f);
        let answers: std::collections::HashMap<usize, StoreResult<Extension>> =
            futures::future::join_all(distinct.map(|(i, _)| async move {
                let (lease, ttl) = &leases[i];
                (i, self.extend(lease, *ttl).await)
            }))
            .await
            .into_iter()
            .collect();
        super::answer_repeats(&first, &answers)
    }

    /// True if [`extend_many`](Self::extend_many) renews many leases in fewer requests than one
    /// per lease (the default: false). The core then renews all of an elector's leases on this
    /// store together, on one beat: one heartbeat per period, however many leases it holds.
    /// On other stores each lease renews on its own schedule, spreading the requests over the
    /// period. Wrappers forward their inner store's.
    fn renews_in_batches(&self) -> bool {
        false
    }

    /// True if this store keeps a line of waiting electors per single-slot lock and honours
    /// [`HandOff`] in [`release_to`](Self::release_to) (the default: false). The core then
    /// takes turns between processes by hand-off instead of by waiting out a head start.
    /// Wrappers forward their inner store's.
    fn hands_off(&self) -> bool {
        false
    }

    /// Records that the action of the period claim `lease` was granted for starts now: one
    /// atomic step that succeeds only if `lease.token` holds slot 0's live lease **and** made the
    /// lock's latest period claim; it then marks that claim started (a claim already started by
    /// this token answers [`PeriodStart::Started`] again, so a retry after a lost answer is
    /// harmless). Anything else is [`PeriodStart::NotHeld`] and changes nothing. Neither the
    /// lease's expiry nor its fence changes.
    ///
    /// The core calls it once per granted claim, before the action runs; until then the claim can
    /// be taken over once its lease ends (see the ledger above). Wrappers forward it.
    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart>;

    /// The lock's period ledger record (its latest claim, started or not), or `None` for a lock
    /// never claimed: what `leasehold status` shows. One read; it changes nothing. Wrappers
    /// forward it.
    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>>;

    /// Break-glass for operators: deletes the lock's period ledger record, so that the next
    /// claim of any period is judged as on a lock never claimed (the current period runs
    /// again), and returns the record it deleted, as it was just before (`None`, changing
    /// nothing, for a lock without one). Wrappers forward it.
    ///
    /// Implementations must guarantee:
    ///
    /// * **Only the ledger.** Live leases, their holders, expiries and tokens, and the fences
    ///   are untouched: a holder still holds and can extend and release, and the next grant of
    ///   the lock still gets a fence above every fence issued before (a fence never falls
    ///   because of a clear).
    /// * **The record returned is the record deleted.** The read and the delete are one atomic
    ///   step (a transaction, a script, a conditional write on the version read, retried while
    ///   the record changes under it): a claim or a start that lands at the same time comes
    ///   either before the clear (its record is the one returned, and deleted) or after it (a
    ///   claim then records anew on the empty ledger).
    /// * A later claim of the same period is granted as on a fresh lock (once the lock is free),
    ///   and records a new claim. The latest run ([`PeriodRecord::ran_at`]) is deleted too.
    ///
    /// A holder whose claim had not started when its record was deleted can no longer start it
    /// ([`start_period`](Self::start_period) answers [`PeriodStart::NotHeld`], as for a claim
    /// taken over), so its action does not run; a claim that had started keeps running, and the
    /// period may run once more after it.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::store::StoreError): transient when the store could not be reached or the
    /// record kept changing under the clear (nothing was deleted then, or the clear completed
    /// and its answer was lost; asking again is safe), permanent for a configuration problem.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave the record deleted or not; read it with
    /// [`period_record`](Self::period_record), or call this again (a second clear finds nothing
    /// and returns `None`).
    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>>;

    /// A snapshot of the live holders of `lock` among `slots` slots.
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState>;

    /// Break-glass release for operators: frees every live slot of `lock` among `slots`
    /// regardless of token (fences are kept, so the next holder still gets a higher one) and
    /// returns the holders it freed, as they were just before (with their original expiry). Their guards find the lease gone at their next renewal or
    /// release and report it lost. The default answers that the store does not support it.
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        let _ = (lock, slots);
        Err(Unsupported::new(self.describe(), "forced release").into())
    }

    /// Every live holder of `lock`, whatever its slot count (for a group lock whose size the
    /// caller does not know), ordered by slot. Same liveness as [`state`](Self::state).
    ///
    /// The default asks `state` for all [`MAX_SLOTS`](crate::limits::MAX_SLOTS) slots, which every
    /// store answers (no lock has more); a store overrides it where that is not the cheapest
    /// read.
    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        Ok(self.state(lock, crate::limits::MAX_SLOTS).await?.holders)
    }

    /// The [`state`](Self::state) of each of `locks` among `slots` slots, in the order given
    /// (a lock named twice is answered twice). Each answer is judged as `state` judges it, at
    /// some instant during the call; the answers are not one snapshot of all the locks.
    ///
    /// The default calls `state` for each lock, 16 at a time. A store that
    /// [reads in batches](Self::reads_in_batches) overrides it with as few requests as its
    /// primitives allow (DynamoDB: one `BatchGetItem` per 100 items), so that reading many
    /// named locks costs a few requests, however many other locks the store holds.
    ///
    /// # Errors
    ///
    /// The first error of a read, as [`state`](Self::state) would answer it; then no answer
    /// is given for any lock.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        use futures::StreamExt;
        let reads: Vec<_> = locks.iter().map(|lock| self.state(lock, slots)).collect();
        futures::stream::iter(reads)
            .buffered(STATE_READS_AT_ONCE)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect()
    }

    /// True if [`state_many`](Self::state_many) reads many locks in fewer requests than one
    /// per lock (the default: false), independently of how many other locks the store holds.
    /// The core then reads a partition set's shard owners with it rather than by
    /// [listing](Self::list_locks) the store's live locks. Wrappers forward their inner
    /// store's.
    fn reads_in_batches(&self) -> bool {
        false
    }

    /// One page of the locks that currently have live holders, each with its holders (slot,
    /// owner, fence, expiry): the first page with `after = None`, then each following one with
    /// the [`next`](LockPage::next) cursor of the page before, until a page has none.
    ///
    /// Implementations must guarantee:
    ///
    /// * **Bounded calls.** A page holds at most [`MAX_LIST_LOCKS`](crate::limits::MAX_LIST_LOCKS)
    ///   locks, and one call reads at most [`MAX_LIST_SCAN`](crate::limits::MAX_LIST_SCAN) of the
    ///   store's records (plus the slots of one lock the page ends on) — never a scan of the whole
    ///   table or keyspace (the memory store, whose records are this process's own memory, reads
    ///   them all). A page may therefore hold few locks, or none, and still have a `next`.
    /// * **Live holders only**, judged as [`state`](Self::state) judges them: an expired lease is
    ///   never listed, and a lock without live holders is not listed.
    /// * **No lost locks.** Following `next` to the end lists every lock that had live holders
    ///   for the whole listing. A lock may show up in more than one page (a Redis `SCAN` may
    ///   return a key twice; a DynamoDB group's slots are separate items scattered over the
    ///   table): merge pages by name.
    /// * Cursors are the store's own; text that is not one of its cursors is a permanent error
    ///   carrying a [`CursorError`](crate::store::CursorError).
    ///
    /// The default answers that the store does not support listing: a permanent
    /// [`StoreError`](crate::store::StoreError) carrying [`Unsupported`] (see
    /// [`StoreError::unsupported`](crate::store::StoreError::unsupported)).
    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        let _ = after;
        Err(Unsupported::new(self.describe(), "listing locks").into())
    }

    /// Subscribes to release notifications for `lock`, if the store has them. Waiters subscribe
    /// before their first attempt; without a signal they poll with jittered back-off.
    fn release_signal(&self, _lock: &LockName) -> Option<ReleaseSignal> {
        None
    }

    /// True if dropping a `try_acquire` future can never leave a lease granted behind (the store
    /// completes without yielding, like [`MemoryStore`](crate::MemoryStore)). When false (the
    /// default), an acquisition attempt whose caller stops waiting for it is handed over to a
    /// cleanup task of the core, which reads its answer and releases a lease that arrives after the
    /// caller gave up.
    fn acquire_is_cancel_safe(&self) -> bool {
        false
    }

    /// True if this store's leases live only inside this process (the in-memory store, an
    /// in-memory SQLite database): electors in other processes cannot see them, so the store
    /// gives no exclusion between processes — two programs using "the same" such store each
    /// get their own. The command-line tool refuses such a store wherever exclusion between
    /// processes is the point (`run`, `status`, `release`, `serve`, `verify`). The default is
    /// false; wrappers forward their inner store's.
    fn is_process_local(&self) -> bool {
        false
    }

    /// Whose clock the times in this store's leases are read from. [`ClockSource::Server`] lets
    /// the core estimate this host's offset from the store's clock at each renewal (the
    /// `leasehold_store_clock_offset_seconds` gauge, see [`metrics`](crate::metrics)); the
    /// default, [`ClockSource::Client`], records nothing. Wrappers forward their inner store's.
    fn clock_source(&self) -> ClockSource {
        ClockSource::Client
    }

    /// How long after a holder's expiry this store still refuses its lock to others: the
    /// clock-skew tolerance of a store that judges expiry by clocks that may disagree (DynamoDB
    /// by each client's, ZooKeeper by each server's). A refused follower that waits for the
    /// holder's lease to end asks again this much after the expiry the refusal or the lock's
    /// state named, not before (where it would only be refused again). The default, zero, is
    /// for a store that lets a lock go when its lease ends. Wrappers forward their inner
    /// store's.
    fn expiry_tolerance(&self) -> Duration {
        Duration::ZERO
    }

    /// A short description for logs, with any secret redacted (e.g. `postgres://app:***@db/x`).
    fn describe(&self) -> String;
}

/// Whose clock a store reads for the times in its leases ([`LeaseStore::clock_source`]).
///
/// ```
/// use leasehold::{LeaseStore, MemoryStore};
/// use leasehold::store::ClockSource;
/// assert_eq!(MemoryStore::new().clock_source(), ClockSource::Client);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClockSource {
    /// The store server's own clock, read when it applies each request (a database's `now()`,
    /// Redis `TIME`): an extension's new expiry is that clock plus the lease asked for.
    Server,
    /// This host's clock (an in-process or embedded store) or each client's own (a store whose
    /// conditions have no server time): there is no other clock to compare with.
    Client,
}
