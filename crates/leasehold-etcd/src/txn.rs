//! The protocol room: the keys, the record kept in each slot key, and the etcd requests that
//! acquire, extend, release, read and force-release leases.
//!
//! * Slot `n` of lock `L` is the key `<prefix>/L/n`, where a `/` inside `L` is written `%2F`
//!   (`reports/daily` → `<prefix>/reports%2Fdaily/0`; lock names never contain `%`, and names
//!   without `/` are written as they are). So the lock part of a key never contains `/`, the
//!   keys of different locks never nest, and the prefix range `<prefix>/L/` of one lock never
//!   holds another lock's keys. Its value is a [`Record`]; it is attached to an etcd lease
//!   granted for this one acquisition, so etcd deletes it when the lease runs out.
//! * The **fence** is the key's `create_revision`: the cluster-wide revision of the put that
//!   created it. Revisions only grow (across leaders, member restarts and compaction), and a key
//!   is created again only after it was deleted, so every grant of a slot gets a higher fence.
//! * Every change after the grant is a compare-and-swap on the key's `mod_revision` read just
//!   before, after checking the token and fence in what was read: nothing changes a lease its
//!   holder no longer holds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, LeaseGrantOptions, PutOptions, Txn, TxnOp,
    TxnOpResponse, TxnResponse,
};
use leasehold::store::{
    AcquireRequest, Acquisition, ClaimVerdict, LedgerText, PeriodStart, PeriodWindow, StoreResult,
};
use leasehold::{
    Holder, Lease, LockName, Period, PeriodRecord,
    store::{Extension, Release, StoreError, Token},
};

use crate::link::Link;

/// The longest TTL etcd grants, in seconds (etcd's `MaxLeaseTTL`).
pub(crate) const MAX_TTL_SECS: i64 = 9_000_000_000;
/// The version tag at the start of every value this store writes.
const TAG: &str = "leasehold/1";
/// How many keys one forced-release transaction deletes (etcd allows 128 operations by default).
const FORCE_CHUNK: usize = 100;
/// How often a forced release re-reads a lock that changed under it before giving up.
const FORCE_ROUNDS: usize = 5;
/// How often a period start re-reads a lock that changed under it before giving up (with a
/// transient error: the core tries again).
const START_ROUNDS: usize = 4;
/// How often a clear of the ledger re-reads a ledger that changed under it before giving up
/// (with a transient error: the operator tries again).
const CLEAR_ROUNDS: usize = 4;

/// Whole seconds for an etcd lease: `ttl` rounded **up** (so a lease is never shorter than
/// asked), at least 1, at most etcd's maximum. etcd may raise it further to its own minimum
/// (1.5 election timeouts, rounded up: 2 s with the default 1 s election timeout); the grant's
/// answer says what it chose, and expiries are computed from that.
///
/// ```text
/// 300ms → 1 s, 1s → 1 s, 1.2s → 2 s
/// ```
pub(crate) fn ttl_secs(ttl: Duration) -> i64 {
    let secs = ttl.as_nanos().div_ceil(1_000_000_000).max(1);
    i64::try_from(secs)
        .unwrap_or(MAX_TTL_SECS)
        .min(MAX_TTL_SECS)
}

/// This host's clock in milliseconds since the epoch. etcd has no clock of its own to read, so
/// a lease's `expires_at` is this clock at the moment the request was **sent** plus the TTL
/// asked for: never later than etcd's own expiry, which counts the TTL rounded up to whole
/// seconds from when the leader applies the request, and only ever lengthens on a leader change.
pub(crate) fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

fn time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// Milliseconds rounded up.
fn ms_ceil(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

fn secs_ms(secs: i64) -> u64 {
    u64::try_from(secs).unwrap_or(0).saturating_mul(1000)
}

/// The expiry of a lease asked for `ttl` at `sent_ms` on an etcd lease of `granted` seconds:
/// `ttl` later, but never after the etcd lease (etcd only ever grants more than asked; this
/// holds even if it did not, and for TTLs beyond etcd's maximum).
fn expiry(sent_ms: u64, ttl: Duration, granted: i64) -> u64 {
    sent_ms.saturating_add(ms_ceil(ttl).min(secs_ms(granted)))
}

/// Where a store's keys live.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }
    /// `<prefix>/<lock>/<slot>`.
    pub(crate) fn slot(&self, lock: &LockName, slot: u32) -> String {
        format!("{}/{}/{slot}", self.prefix, segment(lock.as_str()))
    }
    /// `<prefix>/<lock>/ledger`: the lock's period ledger (not a slot: slots are numbers). It is
    /// under the lock's prefix, so every read of the lock's slots reads it too, and it has no
    /// etcd lease, so it outlives every grant.
    pub(crate) fn ledger(&self, lock: &LockName) -> String {
        format!("{}/{}/ledger", self.prefix, segment(lock.as_str()))
    }
    /// `<prefix>/<lock>/`: every slot of a lock.
    pub(crate) fn lock(&self, lock: &LockName) -> String {
        format!("{}/{}/", self.prefix, segment(lock.as_str()))
    }
    /// The first key after every key of `lock` (`<prefix>/<lock>0`: `0` follows `/`), where a
    /// listing continues after that lock.
    pub(crate) fn after(&self, lock: &LockName) -> String {
        format!("{}/{}0", self.prefix, segment(lock.as_str()))
    }
    /// The range of every lock's keys, `[<prefix>/0, <prefix>/{)`: lock names start with a
    /// letter or digit, so it leaves out `<prefix>/.fences/` and anything else not a lock's.
    pub(crate) fn locks_range(&self) -> (String, String) {
        (format!("{}/0", self.prefix), format!("{}/{{", self.prefix))
    }
    /// The lock a slot or ledger key of this store belongs to.
    pub(crate) fn lock_of(&self, key: &[u8]) -> Option<LockName> {
        let rest = std::str::from_utf8(key)
            .ok()?
            .strip_prefix(&self.prefix)?
            .strip_prefix('/')?;
        let (lock, tail) = rest.split_once('/')?;
        if tail.is_empty() || tail.contains('/') {
            return None;
        }
        LockName::new(lock.replace(SLASH, "/")).ok()
    }
    /// True for the ledger key of a lock of this store (and not of a store whose prefix nests
    /// under this one's).
    pub(crate) fn is_ledger(&self, key: &[u8]) -> bool {
        std::str::from_utf8(key)
            .ok()
            .and_then(|k| k.strip_prefix(&self.prefix)?.strip_prefix('/'))
            .and_then(|rest| rest.strip_suffix("/ledger"))
            .is_some_and(|lock| !lock.is_empty() && !lock.contains('/'))
    }
    /// `<prefix>/.fences/<key>`: the highest fence written to the application's key `key` by a
    /// fenced put. Lock names start with a letter or digit, so no lock's keys are under
    /// `<prefix>/.fences/`, and [`parse`](Self::parse) reads none of these keys as a slot.
    // Part of the key layout (the tests check it) though only the `fence` feature writes it.
    #[cfg_attr(not(feature = "fence"), allow(dead_code))]
    pub(crate) fn fence(&self, key: &str) -> String {
        format!("{}/.fences/{key}", self.prefix)
    }
    /// `<prefix>/`: every lock of the store (what the release watch covers).
    pub(crate) fn root(&self) -> String {
        format!("{}/", self.prefix)
    }
    /// The lock and slot of a key of this store.
    pub(crate) fn parse(&self, key: &[u8]) -> Option<(LockName, u32)> {
        let key = std::str::from_utf8(key).ok()?;
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix('/')?;
        let (lock, slot) = rest.rsplit_once('/')?;
        if slot.is_empty()
            || !slot.bytes().all(|b| b.is_ascii_digit())
            || (slot.len() > 1 && slot.starts_with('0'))
            // A raw `/` in the lock part: a key of a store whose prefix nests under this one's.
            || lock.contains('/')
        {
            return None;
        }
        // Any other `%` is refused by the name rule, so `%2F` is the one way to write `/`.
        Some((
            LockName::new(lock.replace(SLASH, "/")).ok()?,
            slot.parse().ok()?,
        ))
    }
}

/// How a `/` inside a lock name is written in a key.
const SLASH: &str = "%2F";

/// A lock name as the middle part of a key: `/` written as `%2F`, everything else as it is.
fn segment(lock: &str) -> std::borrow::Cow<'_, str> {
    if lock.contains('/') {
        std::borrow::Cow::Owned(lock.replace('/', SLASH))
    } else {
        std::borrow::Cow::Borrowed(lock)
    }
}

/// What a slot key holds: the value this store wrote plus what etcd knows about the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) slot: u32,
    pub(crate) token: Token,
    pub(crate) owner: String,
    pub(crate) acquired_ms: u64,
    /// The end of the lease as asked for (this host's clock at sending + the TTL); etcd's lease
    /// runs at least until then.
    pub(crate) expires_ms: u64,
    /// The TTL asked for (rounded up to seconds) and the TTL etcd granted, in seconds.
    pub(crate) asked: i64,
    pub(crate) granted: i64,
    /// Released with a linger: still held until it ends, but no longer extendable.
    pub(crate) released: bool,
    pub(crate) fence: u64,
    pub(crate) mod_revision: i64,
    pub(crate) lease_id: i64,
}

/// The value of a slot key: `leasehold/1 <token> <acquired ms> <expires ms> <asked s> <granted s>
/// <released 0|1> <owner>` (the owner last: it may contain spaces).
pub(crate) fn encode(r: &Record) -> String {
    format!(
        "{TAG} {} {} {} {} {} {} {}",
        r.token.to_hex(),
        r.acquired_ms,
        r.expires_ms,
        r.asked,
        r.granted,
        u8::from(r.released),
        r.owner
    )
}

impl Record {
    /// Decodes a key of `keys`; `None` for anything this store did not write.
    pub(crate) fn decode(keys: &Keys, kv: &KeyValue) -> Option<Self> {
        let (_, slot) = keys.parse(kv.key())?;
        let text = std::str::from_utf8(kv.value()).ok()?;
        let mut f = text.splitn(8, ' ');
        if f.next()? != TAG {
            return None;
        }
        Some(Self {
            slot,
            token: Token::from_hex(f.next()?)?,
            acquired_ms: f.next()?.parse().ok()?,
            expires_ms: f.next()?.parse().ok()?,
            asked: f.next()?.parse().ok()?,
            granted: f.next()?.parse().ok()?,
            released: f.next()? == "1",
            owner: f.next()?.to_owned(),
            fence: u64::try_from(kv.create_revision()).ok()?,
            mod_revision: kv.mod_revision(),
            lease_id: kv.lease(),
        })
    }

    /// True if `lease` is this grant, still unreleased.
    fn is(&self, lease: &Lease) -> bool {
        self.token == lease.token && self.fence == lease.fence && !self.released
    }

    /// True until the end of the lease as asked for, by this host's clock. After it the holder
    /// may no longer extend, even while etcd has yet to delete the key.
    fn live_at(&self, now_ms: u64) -> bool {
        now_ms < self.expires_ms
    }

    fn lease(&self, lock: &LockName) -> Lease {
        Lease {
            lock: lock.clone(),
            slot: self.slot,
            owner: self.owner.clone(),
            token: self.token,
            fence: self.fence,
            acquired_at: time(self.acquired_ms),
            expires_at: time(self.expires_ms),
            period: None,
        }
    }

    pub(crate) fn holder(&self) -> Holder {
        Holder {
            slot: self.slot,
            owner: self.owner.clone(),
            fence: self.fence,
            acquired_at: time(self.acquired_ms),
            expires_at: time(self.expires_ms),
        }
    }
}

/// Whether the foreign-key warning was logged (once per process: waiters poll often).
static FOREIGN_WARNED: AtomicBool = AtomicBool::new(false);

/// The slot keys of a lock as read: the leases this store wrote, and every slot whose key exists.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    /// The leases, by slot.
    pub(crate) records: Vec<Record>,
    /// Every slot with a key, including keys another program wrote (which are never overwritten,
    /// so such a slot is never granted).
    taken: Vec<u32>,
    /// The period ledger, if the lock has one.
    pub(crate) ledger: Option<Ledger>,
}

/// A lock's period ledger: its latest claim — the period id and window claimed, when (this
/// store's clients' clocks, ms) and to whom it was granted, the token it was granted to and
/// whether its action started — with the key's `mod_revision` for compare-and-swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub(crate) period: i64,
    pub(crate) at_ms: u64,
    pub(crate) by: String,
    /// The window claimed, `[from, until)` in ms; `None` in a record of an older version.
    pub(crate) window: Option<(i64, i64)>,
    /// The token the claim was granted to; `None` in a record of an older version.
    pub(crate) token: Option<Token>,
    /// True once the claim's action started (always, in a record of an older version: a claim
    /// was a run then).
    pub(crate) started: bool,
    /// When the latest claim that started was granted, ms ([`LedgerText::ran_at_ms`]).
    pub(crate) ran_at_ms: Option<i64>,
    pub(crate) mod_revision: i64,
}

impl Ledger {
    /// The ledger of a claim granted now: at `at_ms` to `req`, for `window`, not started,
    /// keeping the latest run of `previous` (the ledger it replaces).
    fn claim(
        req: &AcquireRequest,
        window: PeriodWindow,
        at_ms: u64,
        previous: Option<&Self>,
    ) -> Self {
        let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
        let ran = previous.and_then(|l| l.text().last_run_ms());
        Self::from_text(LedgerText::claim(window, at, &req.owner, req.token, ran), 0)
    }

    /// This claim, marked started.
    fn started(&self) -> Self {
        let mut text = self.text();
        text.start();
        Self::from_text(text, self.mod_revision)
    }

    /// The value ([`LedgerText`]'s two lines).
    fn encode(&self) -> String {
        self.text().encode()
    }

    /// A ledger value; one without the second line (an older version's) reads as a claim that
    /// started, whose window is unknown.
    fn decode(kv: &KeyValue) -> Option<Self> {
        Self::parse(kv.value(), kv.mod_revision())
    }

    fn parse(value: &[u8], mod_revision: i64) -> Option<Self> {
        let text = LedgerText::decode(std::str::from_utf8(value).ok()?)?;
        Some(Self::from_text(text, mod_revision))
    }

    fn from_text(text: LedgerText, mod_revision: i64) -> Self {
        Self {
            period: text.period,
            at_ms: u64::try_from(text.at_ms).unwrap_or_default(),
            by: text.by,
            window: text.window,
            token: text.token,
            started: text.started,
            ran_at_ms: text.ran_at_ms,
            mod_revision,
        }
    }

    fn text(&self) -> LedgerText {
        LedgerText {
            period: self.period,
            at_ms: self.at_epoch_ms(),
            by: self.by.clone(),
            window: self.window,
            token: self.token,
            started: self.started,
            ran_at_ms: self.ran_at_ms,
        }
    }

    /// When the claim was granted, ms since the epoch.
    fn at_epoch_ms(&self) -> i64 {
        i64::try_from(self.at_ms).unwrap_or(i64::MAX)
    }

    fn record(&self) -> PeriodRecord {
        self.text().record()
    }
}

impl Slots {
    fn read(keys: &Keys, kvs: &[KeyValue]) -> Self {
        let mut records: Vec<Record> = kvs
            .iter()
            .filter_map(|kv| Record::decode(keys, kv))
            .collect();
        records.sort_by_key(|r| r.slot);
        let taken: Vec<u32> = kvs
            .iter()
            .filter_map(|kv| keys.parse(kv.key()).map(|(_, slot)| slot))
            .collect();
        if taken.len() > records.len() && !FOREIGN_WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "a slot key under the etcd prefix holds a value leasehold did not write; that slot is never granted (warned once per process)"
            );
        }
        let ledger = kvs
            .iter()
            .find(|kv| keys.is_ledger(kv.key()))
            .and_then(Ledger::decode);
        Self {
            records,
            taken,
            ledger,
        }
    }

    /// The lowest slot in `0..slots` without a key.
    fn lowest_free(&self, slots: u32) -> Option<u32> {
        (0..slots.max(1)).find(|s| !self.taken.contains(s))
    }
}

/// Every slot of `lock` (linearizable read).
pub(crate) async fn read_lock(link: &Link, keys: &Keys, lock: &LockName) -> StoreResult<Slots> {
    let prefix = keys.lock(lock);
    let resp = link
        .idempotent("a read", |mut c| {
            let prefix = prefix.clone();
            async move { c.get(prefix, Some(GetOptions::new().with_prefix())).await }
        })
        .await?;
    Ok(Slots::read(keys, resp.kvs()))
}

async fn read_slot(link: &Link, keys: &Keys, lease: &Lease) -> StoreResult<Option<Record>> {
    let key = keys.slot(&lease.lock, lease.slot);
    let resp = link
        .idempotent("a read", |mut c| {
            let key = key.clone();
            async move { c.get(key, None).await }
        })
        .await?;
    Ok(Slots::read(keys, resp.kvs()).records.into_iter().next())
}

/// The fence of a grant: the revision of the transaction that put the slot's record.
fn granted_fence(resp: &TxnResponse) -> StoreResult<u64> {
    let revision = resp.header().map_or(0, |h| h.revision());
    u64::try_from(revision)
        .map_err(|_| StoreError::permanent("etcd answered a put without its revision"))
}

/// The lock's slots as a failed acquisition transaction read them back (its `or_else` get).
fn slots_read_back(keys: &Keys, resp: TxnResponse) -> Slots {
    resp.op_responses()
        .into_iter()
        .find_map(|r| match r {
            TxnOpResponse::Get(g) => Some(Slots::read(keys, g.kvs())),
            _ => None,
        })
        .unwrap_or_default()
}

/// Sends one transaction (again only when it was certainly not applied).
pub(crate) async fn txn(link: &Link, what: &str, txn: Txn) -> StoreResult<TxnResponse> {
    link.call(what, |mut c| {
        let txn = txn.clone();
        async move { c.txn(txn).await }
    })
    .await
}

/// A fresh etcd lease for `req` and the record a grant on `slot` writes under it (fence and
/// revision are filled in by the transaction that puts it).
async fn new_grant(
    link: &Link,
    req: &AcquireRequest,
    sent_ms: u64,
    slot: u32,
) -> StoreResult<Record> {
    let asked = ttl_secs(req.ttl);
    let (lease_id, granted) = grant(link, asked).await?;
    Ok(Record {
        slot,
        token: req.token,
        owner: req.owner.to_string(),
        acquired_ms: sent_ms,
        expires_ms: expiry(sent_ms, req.ttl, granted),
        asked,
        granted,
        released: false,
        fence: 0,
        mod_revision: 0,
        lease_id,
    })
}

/// Grants an etcd lease of `secs` seconds: its id and the TTL etcd chose.
async fn grant(link: &Link, secs: i64) -> StoreResult<(i64, i64)> {
    let resp = link
        .idempotent("a lease grant", |mut c| async move {
            c.lease_grant(secs, Some(LeaseGrantOptions::new())).await
        })
        .await?;
    if !resp.error().is_empty() {
        return Err(StoreError::transient(format!(
            "etcd refused a lease: {}",
            resp.error()
        )));
    }
    Ok((resp.id(), resp.ttl()))
}

/// Revokes a lease we no longer need; failures only cost the lease running out on its own.
pub(crate) async fn revoke_quietly(link: &Link, id: i64) {
    if id == 0 {
        return;
    }
    let revoked = link
        .idempotent("a lease revocation", |mut c| async move {
            c.lease_revoke(id).await
        })
        .await;
    if let Err(e) = revoked
        && !e.message().contains("not found")
    {
        tracing::debug!(error = %e, lease = id, "etcd lease left to expire");
    }
}

/// Renews a lease to its granted TTL; `false` if it no longer exists.
async fn keep_alive(link: &Link, id: i64) -> StoreResult<bool> {
    link.idempotent("a lease keep-alive", |mut c| async move {
        match c.lease_keep_alive(id).await {
            Ok(_) => Ok(true),
            Err(etcd_client::Error::LeaseKeepAliveError(m)) if m.contains("not found") => Ok(false),
            Err(etcd_client::Error::GRpcStatus(s)) if s.message().contains("not found") => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    })
    .await
}

/// Puts `record` (re-encoded) if the key still has `mod_revision`, attached to `lease_id`
/// (`None`: keep the key's lease).
async fn swap(
    link: &Link,
    key: &str,
    mod_revision: i64,
    record: &Record,
    lease_id: Option<i64>,
) -> StoreResult<bool> {
    let put = match lease_id {
        Some(id) => PutOptions::new().with_lease(id),
        None => PutOptions::new().with_ignore_lease(),
    };
    let t = Txn::new()
        .when([Compare::mod_revision(key, CompareOp::Equal, mod_revision)])
        .and_then([TxnOp::put(key, encode(record), Some(put))]);
    Ok(txn(link, "a lease update", t).await?.succeeded())
}

/// One acquisition: a linearizable read of the lock's slots (our own live grant is returned as
/// is, so a retried request is recognised), then a lease grant and one transaction per attempt
/// that puts the lowest free slot if it is still absent, or returns the slots as they are now.
pub(crate) async fn acquire(
    link: &Link,
    keys: &Keys,
    req: &AcquireRequest,
) -> StoreResult<Option<Lease>> {
    let sent_ms = now_ms();
    let held = read_lock(link, keys, &req.lock).await?;
    let mine = |held: &Slots| {
        held.records
            .iter()
            .find(|r| {
                r.token == req.token
                    && !r.released
                    && r.live_at(now_ms())
                    && r.slot < req.slots.max(1)
            })
            .cloned()
    };
    if let Some(r) = mine(&held) {
        return Ok(Some(r.lease(&req.lock)));
    }
    let Some(mut slot) = held.lowest_free(req.slots) else {
        return Ok(None);
    };
    let mut record = new_grant(link, req, sent_ms, slot).await?;
    let lease_id = record.lease_id;
    for _ in 0..=req.slots.max(1) {
        record.slot = slot;
        let key = keys.slot(&req.lock, slot);
        let t = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.as_str(),
                encode(&record),
                Some(PutOptions::new().with_lease(lease_id)),
            )])
            .or_else([TxnOp::get(
                keys.lock(&req.lock),
                Some(GetOptions::new().with_prefix()),
            )]);
        let resp = txn(link, "an acquisition", t).await?;
        if resp.succeeded() {
            record.fence = granted_fence(&resp)?;
            return Ok(Some(record.lease(&req.lock)));
        }
        let now = slots_read_back(keys, resp);
        if let Some(r) = mine(&now) {
            if r.lease_id != lease_id {
                revoke_quietly(link, lease_id).await;
            }
            return Ok(Some(r.lease(&req.lock)));
        }
        match now.lowest_free(req.slots) {
            Some(s) => slot = s,
            None => break,
        }
    }
    revoke_quietly(link, lease_id).await;
    Ok(None)
}

/// One acquisition claiming `period` of the ledger (slot 0 only): a linearizable read of the
/// lock (slot and ledger; our own live grant is returned as is), the ledger's judgement
/// ([`judge_claim`](leasehold::store::judge_claim): a run granted at or after the window's start
/// refuses, an unstarted claim since then holds the period while slot 0 is taken), then a lease grant and one transaction
/// per attempt that puts slot 0 **and** the ledger (the new claim, not started, keeping the
/// previous record's latest run) only if the slot
/// is still absent and the ledger unchanged since read (`mod_revision`, or still absent). The
/// window comes from this host's clock (etcd has none to offer).
pub(crate) async fn acquire_period(
    link: &Link,
    keys: &Keys,
    req: &AcquireRequest,
    period: Period,
) -> StoreResult<Acquisition> {
    let sent_ms = now_ms();
    let window = period.window_at_ms(i64::try_from(sent_ms).unwrap_or(i64::MAX));
    let mine = |held: &Slots| {
        held.records
            .iter()
            .find(|r| r.token == req.token && !r.released && r.live_at(now_ms()) && r.slot == 0)
            .map(|r| {
                let mut lease = r.lease(&req.lock);
                lease.period =
                    Some(period.id_at_ms(i64::try_from(r.acquired_ms).unwrap_or(i64::MAX)));
                lease
            })
    };
    // The ledger's answer, or `None` to go on with the grant (slot 0 free, no run counts).
    let judged = |held: &Slots| {
        let taken = held.lowest_free(1) != Some(0);
        let latest = held.ledger.as_ref().map(Ledger::text);
        match LedgerText::judge(latest.as_ref(), window.from_ms, taken) {
            ClaimVerdict::Ran => Some(held.ledger.as_ref().map_or(Acquisition::Taken(None), |l| {
                Acquisition::AlreadyRan(l.record())
            })),
            ClaimVerdict::Claimed => Some(Acquisition::Taken(None)),
            ClaimVerdict::Free => taken.then_some(Acquisition::Taken(None)),
        }
    };
    let mut held = read_lock(link, keys, &req.lock).await?;
    if let Some(lease) = mine(&held) {
        return Ok(Acquisition::Elected(lease));
    }
    if let Some(answer) = judged(&held) {
        return Ok(answer);
    }
    let mut record = new_grant(link, req, sent_ms, 0).await?;
    let lease_id = record.lease_id;
    let key = keys.slot(&req.lock, 0);
    let ledger_key = keys.ledger(&req.lock);
    // A ledger that keeps changing under us is only ever replaced by other grants (or marked
    // started by their holders); a few rounds settle it (each round either grants, refuses, or
    // sees a newer ledger).
    for _ in 0..4 {
        let claim = Ledger::claim(req, window, sent_ms, held.ledger.as_ref()).encode();
        let ledger_unchanged = match &held.ledger {
            Some(l) => Compare::mod_revision(ledger_key.as_str(), CompareOp::Equal, l.mod_revision),
            None => Compare::create_revision(ledger_key.as_str(), CompareOp::Equal, 0),
        };
        let t = Txn::new()
            .when([
                Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
                ledger_unchanged,
            ])
            .and_then([
                TxnOp::put(
                    key.as_str(),
                    encode(&record),
                    Some(PutOptions::new().with_lease(lease_id)),
                ),
                TxnOp::put(ledger_key.as_str(), claim.as_str(), None),
            ])
            .or_else([TxnOp::get(
                keys.lock(&req.lock),
                Some(GetOptions::new().with_prefix()),
            )]);
        let resp = txn(link, "an acquisition", t).await?;
        if resp.succeeded() {
            record.fence = granted_fence(&resp)?;
            let mut lease = record.lease(&req.lock);
            lease.period = Some(window.id);
            return Ok(Acquisition::Elected(lease));
        }
        held = slots_read_back(keys, resp);
        if let Some(lease) = mine(&held) {
            revoke_quietly(link, lease_id).await;
            return Ok(Acquisition::Elected(lease));
        }
        if let Some(answer) = judged(&held) {
            revoke_quietly(link, lease_id).await;
            return Ok(answer);
        }
    }
    revoke_quietly(link, lease_id).await;
    Ok(Acquisition::Taken(None))
}

/// Marks `lease`'s period claim started: a linearizable read of the lock, then one transaction
/// that rewrites the ledger with *started* only if slot 0's key and the ledger are unchanged
/// since the read (`mod_revision`), after checking that `lease` holds slot 0 (token, fence, not
/// released, not run out by this host's clock) and that the ledger's claim is its token's. A
/// claim already started by this token answers `Started` without a write. The slot key is not
/// written: the lease's expiry and fence stay as they are.
pub(crate) async fn start_period(
    link: &Link,
    keys: &Keys,
    lease: &Lease,
) -> StoreResult<PeriodStart> {
    if lease.slot != 0 {
        return Ok(PeriodStart::NotHeld);
    }
    let key = keys.slot(&lease.lock, 0);
    let ledger_key = keys.ledger(&lease.lock);
    let mut held = read_lock(link, keys, &lease.lock).await?;
    // Only the holder's own extensions (or a takeover, which the next round sees) change what
    // the transaction compares.
    for _ in 0..START_ROUNDS {
        let Some(slot) = held
            .records
            .iter()
            .find(|r| r.slot == 0 && r.is(lease) && r.live_at(now_ms()))
        else {
            return Ok(PeriodStart::NotHeld);
        };
        let Some(ledger) = held
            .ledger
            .as_ref()
            .filter(|l| l.token == Some(lease.token))
        else {
            return Ok(PeriodStart::NotHeld);
        };
        if ledger.started {
            return Ok(PeriodStart::Started);
        }
        let started = ledger.started();
        let t = Txn::new()
            .when([
                Compare::mod_revision(key.as_str(), CompareOp::Equal, slot.mod_revision),
                Compare::mod_revision(ledger_key.as_str(), CompareOp::Equal, ledger.mod_revision),
            ])
            .and_then([TxnOp::put(ledger_key.as_str(), started.encode(), None)])
            .or_else([TxnOp::get(
                keys.lock(&lease.lock),
                Some(GetOptions::new().with_prefix()),
            )]);
        let resp = txn(link, "a period start", t).await?;
        if resp.succeeded() {
            return Ok(PeriodStart::Started);
        }
        held = slots_read_back(keys, resp);
    }
    Err(StoreError::transient(format!(
        "lock {} kept changing while its period claim was marked started; try again",
        lease.lock
    )))
}

/// The lock's ledger record (one linearizable read of the ledger key); `None` for a lock never
/// claimed, or a ledger key this store did not write.
pub(crate) async fn period_record(
    link: &Link,
    keys: &Keys,
    lock: &LockName,
) -> StoreResult<Option<PeriodRecord>> {
    Ok(read_ledger(link, &keys.ledger(lock))
        .await?
        .map(|l| l.record()))
}

/// The ledger at `key` (one linearizable read), with its `mod_revision`; `None` when the key is
/// missing or holds a value this store did not write.
async fn read_ledger(link: &Link, key: &str) -> StoreResult<Option<Ledger>> {
    let resp = link
        .idempotent("a read", |mut c| {
            let key = key.to_owned();
            async move { c.get(key, None).await }
        })
        .await?;
    Ok(resp.kvs().first().and_then(Ledger::decode))
}

/// Deletes the lock's ledger key and returns its record: a linearizable read of the key, then
/// one transaction that deletes it only if it is unchanged since the read (`mod_revision`),
/// re-read if it changed. A key this store did not write is left alone (`None`, as
/// [`period_record`] reads it). The slot keys, and so the leases and their fences (their keys'
/// `create_revision`), are not touched.
pub(crate) async fn clear_period(
    link: &Link,
    keys: &Keys,
    lock: &LockName,
) -> StoreResult<Option<PeriodRecord>> {
    let key = keys.ledger(lock);
    for _ in 0..CLEAR_ROUNDS {
        let Some(ledger) = read_ledger(link, &key).await? else {
            return Ok(None);
        };
        let t = Txn::new()
            .when([Compare::mod_revision(
                key.as_str(),
                CompareOp::Equal,
                ledger.mod_revision,
            )])
            .and_then([TxnOp::delete(key.as_str(), None)]);
        if txn(link, "a clear of the period ledger", t)
            .await?
            .succeeded()
        {
            return Ok(Some(ledger.record()));
        }
    }
    Err(StoreError::transient(format!(
        "the period ledger of lock {lock} kept changing while it was cleared; try again"
    )))
}

/// Extends a lease to `ttl` from now, if it has not run out. With the TTL it was granted for,
/// the etcd lease is kept alive (its TTL restarts); with another TTL, a new etcd lease is granted
/// and the key moved to it. Either way the record's expiry is then updated by a
/// compare-and-swap.
pub(crate) async fn extend(
    link: &Link,
    keys: &Keys,
    lease: &Lease,
    ttl: Duration,
) -> StoreResult<Extension> {
    let sent_ms = now_ms();
    let Some(rec) = read_slot(link, keys, lease)
        .await?
        .filter(|r| r.is(lease) && r.live_at(sent_ms))
    else {
        return Ok(Extension::NotHeld);
    };
    let key = keys.slot(&lease.lock, lease.slot);
    let asked = ttl_secs(ttl);
    let mut next = rec.clone();
    next.asked = asked;
    next.expires_ms = expiry(sent_ms, ttl, rec.granted);
    if asked == rec.asked {
        if !keep_alive(link, rec.lease_id).await? {
            return Ok(Extension::NotHeld);
        }
        if !swap(link, &key, rec.mod_revision, &next, None).await? {
            return Ok(Extension::NotHeld);
        }
    } else {
        let (id, granted) = grant(link, asked).await?;
        next.granted = granted;
        next.expires_ms = expiry(sent_ms, ttl, granted);
        if !swap(link, &key, rec.mod_revision, &next, Some(id)).await? {
            revoke_quietly(link, id).await;
            return Ok(Extension::NotHeld);
        }
        revoke_quietly(link, rec.lease_id).await;
    }
    Ok(Extension::Extended {
        expires_at: time(next.expires_ms),
    })
}

/// Releases a lease. Without linger the key is deleted (compare-and-swap) and its etcd lease
/// revoked. With linger the key is moved to a new etcd lease of the linger (rounded up to whole
/// seconds) — unless that would not end sooner than the lease does, in which case the lease is
/// left to run out — and marked released so it can no longer be extended. A lease that already
/// ran out by this host's clock is deleted all the same (it is ours), but reported `NotHeld`.
pub(crate) async fn release(
    link: &Link,
    keys: &Keys,
    lease: &Lease,
    linger: Duration,
) -> StoreResult<Release> {
    let sent_ms = now_ms();
    let Some(rec) = read_slot(link, keys, lease).await?.filter(|r| r.is(lease)) else {
        return Ok(Release::NotHeld);
    };
    let key = keys.slot(&lease.lock, lease.slot);
    let live = rec.live_at(sent_ms);
    let done = |ok: bool| {
        if ok && live {
            Release::Released
        } else {
            Release::NotHeld
        }
    };
    if linger.is_zero() || !live {
        let t = Txn::new()
            .when([Compare::mod_revision(
                key.as_str(),
                CompareOp::Equal,
                rec.mod_revision,
            )])
            .and_then([TxnOp::delete(key.as_str(), None)]);
        let deleted = txn(link, "a release", t).await?.succeeded();
        if deleted {
            revoke_quietly(link, rec.lease_id).await;
        }
        return Ok(done(deleted));
    }
    let mut next = rec.clone();
    next.released = true;
    let remaining = rec.expires_ms.saturating_sub(sent_ms);
    next.expires_ms = rec.expires_ms.min(sent_ms.saturating_add(ms_ceil(linger)));
    let secs = ttl_secs(linger);
    if secs_ms(secs) < remaining {
        let (id, granted) = grant(link, secs).await?;
        if secs_ms(granted) < remaining {
            next.granted = granted;
            let moved = swap(link, &key, rec.mod_revision, &next, Some(id)).await?;
            revoke_quietly(link, if moved { rec.lease_id } else { id }).await;
            return Ok(done(moved));
        }
        revoke_quietly(link, id).await;
    }
    Ok(done(swap(link, &key, rec.mod_revision, &next, None).await?))
}

/// Deletes every live slot of `lock` among `slots` whatever its token (compare-and-swap on what
/// was read, re-read if the lock changed meanwhile), revokes their etcd leases, and returns the
/// holders as they were.
pub(crate) async fn force_release(
    link: &Link,
    keys: &Keys,
    lock: &LockName,
    slots: u32,
) -> StoreResult<Vec<Holder>> {
    let mut freed = Vec::new();
    for _ in 0..FORCE_ROUNDS {
        let held: Vec<Record> = read_lock(link, keys, lock)
            .await?
            .records
            .into_iter()
            .filter(|r| r.slot < slots)
            .collect();
        if held.is_empty() {
            return Ok(freed);
        }
        let mut changed = false;
        for chunk in held.chunks(FORCE_CHUNK) {
            let compares: Vec<Compare> = chunk
                .iter()
                .map(|r| {
                    Compare::mod_revision(keys.slot(lock, r.slot), CompareOp::Equal, r.mod_revision)
                })
                .collect();
            let deletes: Vec<TxnOp> = chunk
                .iter()
                .map(|r| TxnOp::delete(keys.slot(lock, r.slot), None))
                .collect();
            if txn(
                link,
                "a forced release",
                Txn::new().when(compares).and_then(deletes),
            )
            .await?
            .succeeded()
            {
                for r in chunk {
                    revoke_quietly(link, r.lease_id).await;
                    freed.push(r.holder());
                }
            } else {
                changed = true;
            }
        }
        if !changed {
            return Ok(freed);
        }
    }
    Err(StoreError::transient(format!(
        "lock {lock} kept changing during a forced release; try again"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_whole_seconds() {
        assert_eq!(ttl_secs(Duration::from_millis(1)), 1);
        assert_eq!(ttl_secs(Duration::ZERO), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1000)), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1001)), 2);
        assert_eq!(ttl_secs(Duration::MAX), MAX_TTL_SECS);
    }

    #[test]
    fn expiries_never_pass_the_etcd_lease() {
        assert_eq!(expiry(1000, Duration::from_millis(300), 1), 1300);
        assert_eq!(expiry(1000, Duration::from_millis(2500), 2), 3000);
        assert_eq!(
            expiry(0, Duration::MAX, MAX_TTL_SECS),
            secs_ms(MAX_TTL_SECS)
        );
    }

    #[test]
    fn keys_parse_back_and_foreign_keys_are_ignored() {
        let keys = Keys::new("app/x");
        let lock = LockName::new("tenant:a:job").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(keys.slot(&lock, 7), "app/x/tenant:a:job/7");
        assert_eq!(keys.parse(b"app/x/tenant:a:job/7"), Some((lock, 7)));
        for foreign in [
            "app/x/job/",
            "app/x/job/07",
            "app/x/job/a",
            "app/y/job/1",
            "app/xjob/1",
            "app/x//1",
            "app/x/.fences/job/1",
            "app/x/.fences/1",
        ] {
            assert_eq!(keys.parse(foreign.as_bytes()), None, "{foreign}");
        }
    }

    #[test]
    fn slashes_in_lock_names_are_escaped_so_locks_never_nest() {
        let keys = Keys::new("lh");
        let name = |n: &str| LockName::new(n).unwrap_or_else(|e| panic!("{e}"));
        let (a, ab, a_dot_b, a1) = (name("a"), name("a/b"), name("a.b"), name("a:1"));
        assert_eq!(keys.slot(&ab, 0), "lh/a%2Fb/0");
        assert_eq!(keys.lock(&ab), "lh/a%2Fb/");
        assert_eq!(keys.ledger(&ab), "lh/a%2Fb/ledger");
        assert_eq!(keys.parse(b"lh/a%2Fb/3"), Some((ab.clone(), 3)));
        assert_eq!(keys.parse(b"lh/a.b/0"), Some((a_dot_b.clone(), 0)));
        // No key of one lock is under another's prefix range, nor equal to another's key.
        let all = [&a, &ab, &a_dot_b, &a1];
        for x in all {
            for y in all {
                if x != y {
                    for slot in [0, 1, 10] {
                        assert!(!keys.slot(y, slot).starts_with(&keys.lock(x)), "{x} {y}");
                        assert_ne!(keys.slot(x, slot), keys.slot(y, slot));
                    }
                    assert!(!keys.ledger(y).starts_with(&keys.lock(x)), "{x} {y}");
                }
            }
            // `after` comes after every key of the lock and before the next lock's.
            assert!(keys.after(x) > keys.ledger(x) && keys.after(x) > keys.slot(x, 1023));
            assert!(keys.is_ledger(keys.ledger(x).as_bytes()));
        }
        // Raw slashes are another store's keys (prefix `lh/a`), and `%2f` is not canonical.
        assert_eq!(keys.parse(b"lh/a/b/0"), None);
        assert_eq!(keys.parse(b"lh/a%2fb/0"), None);
        assert!(!keys.is_ledger(b"lh/a/b/ledger"));
        let (start, end) = keys.locks_range();
        for x in [name("0"), name("zzz"), name("Z/z"), ab] {
            assert!(start <= keys.slot(&x, 0) && keys.ledger(&x) < end, "{x}");
            assert_eq!(keys.lock_of(keys.ledger(&x).as_bytes()), Some(x.clone()));
            assert_eq!(keys.lock_of(keys.slot(&x, 7).as_bytes()), Some(x.clone()));
        }
        assert!(keys.fence("x") < start);
        assert_eq!(keys.lock_of(b"lh/a/b/0"), None);
    }

    #[test]
    fn ledgers_round_trip_and_older_ones_read_as_started() {
        let token = Token::random();
        let claim = Ledger {
            period: -3,
            at_ms: 1_500,
            by: "host a (pid 7)".into(),
            window: Some((1_000, 2_000)),
            token: Some(token),
            started: false,
            ran_at_ms: None,
            mod_revision: 9,
        };
        let text = claim.encode();
        let first = text.lines().next().unwrap_or_default();
        assert_eq!(
            first, "leasehold-ledger/1 -3 1500 host a (pid 7)",
            "the first line is an older version's whole value"
        );
        assert_eq!(Ledger::parse(text.as_bytes(), 9), Some(claim.clone()));
        let started = claim.started();
        assert_eq!(started.ran_at_ms, Some(1_500));
        assert_eq!(
            Ledger::parse(started.encode().as_bytes(), 9),
            Some(started.clone())
        );
        let record = started.record();
        assert_eq!(
            (record.from, record.until, record.started),
            (time(1_000), time(2_000), true)
        );
        // Written by an older version: a run, its window unknown.
        let old = Ledger::parse(b"leasehold-ledger/1 7 1500 host b", 4)
            .unwrap_or_else(|| panic!("an older version's ledger must parse"));
        assert_eq!(
            (old.period, old.by.as_str(), old.token, old.started),
            (7, "host b", None, true)
        );
        let record = old.record();
        assert_eq!((record.from, record.until), (time(1_500), time(1_500)));
        assert_eq!(
            Ledger::parse(b"leasehold-ledger/1 7 1500 b\nother", 4),
            None
        );
        assert_eq!(Ledger::parse(b"something else", 4), None);
    }

    #[test]
    fn values_round_trip_with_spaces_in_the_owner() {
        let r = Record {
            slot: 2,
            token: Token::random(),
            owner: "host a (pid 7)".into(),
            acquired_ms: 10,
            expires_ms: 2010,
            asked: 2,
            granted: 2,
            released: true,
            fence: 0,
            mod_revision: 0,
            lease_id: 0,
        };
        let text = encode(&r);
        assert!(text.starts_with("leasehold/1 "), "{text}");
        let mut f = text.splitn(8, ' ').skip(1);
        assert_eq!(f.next().and_then(Token::from_hex), Some(r.token));
        assert_eq!(f.nth(5), Some("host a (pid 7)"));
    }
}
