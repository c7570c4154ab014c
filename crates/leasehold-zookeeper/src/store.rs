//! `ZooKeeperStore`: leases as persistent ZooKeeper nodes with a store-enforced expiry.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, ClockSource, StoreResult, answer_each, check_slots,
};
use leasehold::store::{OwnWrites, ServerNotifications};
use leasehold::{
    Holder, Lease, LeaseStore, LockName,
    store::{Extension, LockState, OpenError, StoreError, redact_url},
};

use crate::keys::Paths;
use crate::link::{Link, Session};
use crate::options::ZooKeeperOptions;
use crate::protocol::Protocol;
use crate::record::ms_ceil;
use crate::url::parse;
use crate::watch;

leasehold::store::protocol_store! {
    /// A lease store on a ZooKeeper ensemble, through zookeeper-client.
    ///
    /// * Slot `n` of lock `L` is the **persistent** node `<chroot><prefix>/locks/L/slot-n` (a `/`
    ///   inside `L` written `%2F`), holding the token, owner and TTL. Not an ephemeral node: a
    ///   session's life is decided by the ensemble, not by the lease.
    /// * A lease ends at `mtime + ttl` — `mtime` is the clock of the leader that applied the grant or
    ///   extension — and is taken over only once the store's lower bound of the ensemble's time is
    ///   the [clock-skew tolerance](ZooKeeperOptions::clock_skew_tolerance) past that.
    /// * Every change is a compare-and-swap on the node's data version read just before; slot nodes
    ///   are marked free, never deleted, so versions only grow.
    /// * The **fence** is the node's `czxid` plus the data version of its grant: strictly
    ///   increasing per `(lock, slot)` across leader changes and restarts.
    /// * Releases wake local waiters through one persistent recursive watch per store.
    /// * Listing ([`list_locks`](LeaseStore::list_locks)) is one `get_children` of the locks, then
    ///   bounded slot reads (see the `list` module).
    ///
    /// At most two replicas at once (a group: slots `slot-0` and `slot-1`):
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use leasehold::{ElectionOptions, Elector};
    ///
    /// let store = leasehold_zookeeper::ZooKeeperStore::connect(
    ///     "zk://10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/jobs",
    /// )
    /// .await?;
    /// let options = ElectionOptions::builder().max_leaders(2).build()?;
    /// let elector = Elector::with_options(std::sync::Arc::new(store), options);
    /// let ran = elector
    ///     .run_if_leader("reindex", |ctx| async move { (ctx.slot(), ctx.fence()) })
    ///     .await?;
    /// if let Some((slot, fence)) = ran {
    ///     tracing::info!(slot, fence, "reindexed");
    /// }
    /// # Ok(()) }
    /// ```
    pub struct ZooKeeperStore { protocol: Protocol, options: ZooKeeperOptions }
    debug: "prefix" => options.prefix;
}

impl ZooKeeperStore {
    leasehold::store::store_constructors! {
        options: ZooKeeperOptions;
        /// Opens a store for a `zk://host:port[,host:port…]/chroot` URL and checks that the ensemble
        /// answers (opening a session, creating the store's parent nodes if missing and learning the
        /// ensemble's time). `user:password@` authenticates with ZooKeeper's `digest` scheme; store
        /// options can be given as query parameters (see [`ZooKeeperOptions`]).
        ///
        /// ```no_run
        /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
        /// let store = leasehold_zookeeper::ZooKeeperStore::connect("zk://127.0.0.1:2181/billing").await?;
        /// # Ok(()) }
        /// ```
        connect;
        connect_error: "no server answers within the request timeout or the credentials are "
            "rejected";
        cancel: "dropping the future only abandons the connection attempt";
    }

    /// Builds a store without contacting the ensemble; the first operation connects.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL or option.
    ///
    /// ```
    /// use leasehold_zookeeper::{ZooKeeperOptions, ZooKeeperStore};
    /// let store = ZooKeeperStore::connect_lazy("zk://app:hunter2@127.0.0.1:2181,127.0.0.2:2181/jobs", ZooKeeperOptions::default())?;
    /// assert_eq!(leasehold::LeaseStore::describe(&store), "zk://app:***@127.0.0.1:2181,127.0.0.2:2181/jobs");
    /// assert_eq!(store.options().prefix(), "/leasehold");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn connect_lazy(url: &str, options: ZooKeeperOptions) -> Result<Self, OpenError> {
        let target = parse(url, options).map_err(|e| e.into_open_error(url))?;
        let paths = Paths::new(&target.chroot, &target.options.prefix);
        let session = Session {
            servers: target.servers,
            auth: target.user,
            session_timeout: target.options.session_timeout,
        };
        let link = Link::new(session, paths.clone(), target.options.request_timeout);
        Ok(Self {
            protocol: Protocol {
                link: Arc::new(link),
                paths,
                tolerance_ms: ms_ceil(target.options.clock_skew_tolerance),
                written: OwnWrites::default(),
            },
            notifications: ServerNotifications::new(target.options.notifications),
            description: redact_url(url),
            options: target.options,
        })
    }

    /// The options in effect.
    ///
    /// ```
    /// # let store = leasehold_zookeeper::ZooKeeperStore::connect_lazy("zk://h?prefix=/x", Default::default())?;
    /// assert_eq!(store.options().prefix(), "/x");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn options(&self) -> &ZooKeeperOptions {
        &self.options
    }

    /// The node of one slot of a lock: `<chroot><prefix>/locks/<lock>/slot-<n>`, with a `/`
    /// inside the lock name written `%2F`.
    ///
    /// ```
    /// # let store = leasehold_zookeeper::ZooKeeperStore::connect_lazy("zk://h/apps", Default::default())?;
    /// let lock = leasehold::LockName::new("reports/daily")?;
    /// assert_eq!(store.slot_path(&lock, 2), "/apps/leasehold/locks/reports%2Fdaily/slot-2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slot_path(&self, lock: &LockName, slot: u32) -> String {
        self.protocol.paths.slot(lock, slot)
    }

    /// The ZooKeeper client the store's requests use (a cheap clone), e.g. to make a write that
    /// commits only while a lease is held: a `multi` that checks the slot node's version.
    ///
    /// # Errors
    ///
    /// A transient error when no session can be opened in time.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn client(&self) -> StoreResult<zookeeper_client::Client> {
        self.protocol.link.client().await
    }

    /// Checks that the ensemble answers a read (opening a session if there is none).
    ///
    /// # Errors
    ///
    /// The classified error of the connection or the read.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it changes nothing but the store's clock node.
    pub async fn ping(&self) -> StoreResult<()> {
        let root = self.protocol.paths.locks();
        self.protocol
            .link
            .read("a read", |c| {
                let root = root.clone();
                async move { c.check_stat(&root).await }
            })
            .await
            .map(drop)
    }

    /// Rejects leases that the clock-skew tolerance cannot protect.
    fn check_ttl(&self, ttl: Duration) -> StoreResult<()> {
        let floor = self.options.lease_floor();
        if ttl <= floor {
            return Err(StoreError::permanent(format!(
                "a {ttl:?} lease is too short for this ZooKeeper store: leases must be longer \
                 than twice the clock-skew tolerance ({:?}), i.e. more than {floor:?}; use a \
                 longer lease or a smaller tolerance (ZooKeeperOptions::clock_skew_tolerance, \
                 or the `skew` URL parameter) if the ensemble's clocks are that close",
                self.options.clock_skew_tolerance
            )));
        }
        Ok(())
    }
}

#[async_trait]
impl LeaseStore for ZooKeeperStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        req.check()?;
        req.check_owner()?;
        self.check_ttl(req.ttl)?;
        if let Some(period) = req.period {
            // Boxed: the period claim's future is large and rare, and every acquisition's
            // future (boxed and moved whole by `async_trait`) would otherwise be as large.
            return Box::pin(self.protocol.acquire_period(req, period)).await;
        }
        Ok(self.protocol.acquire(req).await?.into())
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.check_ttl(ttl)?;
        self.protocol.extend(lease, ttl).await
    }

    /// One multi-read and one `multi` for every lease (see `protocol/renew.rs`).
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        if leases.iter().any(|(_, ttl)| self.check_ttl(*ttl).is_err()) {
            // Each entry judged alone, the bad TTLs refused as `extend` refuses them.
            let mut answers = Vec::with_capacity(leases.len());
            for (lease, ttl) in leases {
                answers.push(self.extend(lease, *ttl).await);
            }
            return answers;
        }
        answer_each(self.protocol.extend_many(leases).await, leases.len())
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        let all: Vec<u32> = (0..slots).collect();
        Ok(LockState::new(
            lock.clone(),
            slots,
            self.protocol.holders(lock, &all).await?,
        ))
    }

    /// One multi-read of the named locks' slot nodes per 1,000 nodes (`Protocol::holders_many`).
    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        check_slots(slots)?;
        let holders = self.protocol.holders_many(locks, slots).await?;
        Ok(LockState::each(locks, slots, holders))
    }

    fn reads_in_batches(&self) -> bool {
        true
    }

    /// The lock node's children (one `get_children`), then a multi-read of its slot nodes.
    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        let slots = self.protocol.slots_of(lock).await?;
        if slots.is_empty() {
            return Ok(Vec::new());
        }
        self.protocol.holders(lock, &slots).await
    }

    fn clock_source(&self) -> ClockSource {
        ClockSource::Server
    }

    /// The clock-skew tolerance: a lease is taken over only this long after it ended.
    fn expiry_tolerance(&self) -> Duration {
        self.options.clock_skew_tolerance
    }

    leasehold::store::protocol_store_methods!(waking watch::run, paths; crate::list::list);

    leasehold::store::period_ledger! {
        /// A multi-read of slot 0 and the ledger, then one `multi` (see the `protocol` module).
        start_period => protocol.start_period;
        /// One read of the ledger node `<prefix>/locks/<lock>/ledger`.
        period_record => protocol.period_record;
        /// A read of the ledger node, then one `set_data` emptying it at the version read (see the
        /// `protocol` module).
        clear_period_ledger => protocol.clear_period;
    }
}
