//! `DynamoDbStore`: one item per `(lock, slot)`, conditional `UpdateItem` for every change.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use leasehold::store::{
    AcquireRequest, Acquisition, ListCursor, LockPage, ReleaseNotifier, ReleaseSignal, StoreResult,
};
use leasehold::{
    Holder, Lease, LeaseStore, LockName,
    store::{Extension, LockState, Release, StoreError},
};

use crate::keys::item_key;
use crate::link::tuned;
use crate::metrics::StoreMetrics;
use crate::options::{DynamoDbOptions, DynamoDbOptionsError};

/// The largest group a [`DynamoDbStore`] serves: the core's limit, [`leasehold::limits::MAX_SLOTS`], as
/// on every store. Every acquisition attempt, state read and forced release of a group reads all
/// its slots' items (one consistent `BatchGetItem` per 100 keys, so at most 11).
pub use leasehold::limits::MAX_SLOTS;

/// A lease store on Amazon DynamoDB (or a compatible emulator).
///
/// * **One item per `(lock, slot)`** with string partition key `lockName` (see
///   [`item_key`](crate::item_key)); attributes are listed in [`expressions`](crate::expressions).
/// * **Acquire is one conditional `UpdateItem`** that returns the new item: it succeeds if the item
///   is missing, free, or its `leaseExpiry` is older than now − clock-skew tolerance, and mints
///   the fence as `if_not_exists(fence, now ms × 1000) + 1` in the same write — so fences stay
///   monotonic across release, expiry, takeover and even TTL deletion of an idle item. A failed
///   condition is contention (`Ok(None)`), unless the item turns out to hold the request's own
///   token (a retried request that had been applied), which returns that lease unchanged.
///   Groups read their slots first (one consistent `BatchGetItem`) and then try the free ones.
/// * **Extend and release are conditioned on the token** and on the lease not having ended;
///   a release with a minimum lease only shortens `leaseExpiry`. Release keeps the item (without
///   token and owner) so its fence survives; DynamoDB TTL on `ttl` (`leaseExpiry` + TTL padding)
///   cleans idle items up and never decides anything.
/// * **Sessions: one write per beat** ([`extend_many`](LeaseStore::extend_many),
///   [`renews_in_batches`](LeaseStore::renews_in_batches)): a grant made while this instance
///   renews its session of the lease length joins it in the same write; an earlier one is
///   attached at its first extension (one `UpdateItem` on its item). From then on one
///   conditional `UpdateItem` of the session item renews every lease attached to it. An attached lease is held until the later of its own term and its session's end;
///   acquisition, state, listing and forced release read the session items the lock items name,
///   and a forced release revokes the lease in its session first, so that the holder's next
///   renewal answers `NotHeld` for it.
/// * **Time is the client clock** (DynamoDB conditions have none): expiry is decided by the
///   writer's clock with a [clock-skew tolerance](DynamoDbOptions::clock_skew_tolerance); leases
///   must be longer than twice that tolerance.
/// * Throttling, 5xx and network failures are transient errors (and retried by the SDK with the
///   store's back-off first); access, validation and missing-table errors are permanent.
/// * `state` and `force_release` read consistently (`GetItem`, or `BatchGetItem` for groups) and
///   count a slot as held while no other client may take it over: its lease has not ended, or
///   ended less than the clock-skew tolerance ago.
/// * DynamoDB has no change notifications: waiters on other clients poll; waiters sharing this
///   store instance are woken on release.
/// * Every request is measured ([`metrics`](crate::metrics)): latency by operation and outcome,
///   throttled attempts, failed conditions, consumed capacity and the clock skew to DynamoDB;
///   with [`stale_refresh`](DynamoDbOptions::stale_refresh), the stale items too.
///
/// The application owns the client; the store derives its own handle from it (same connection
/// pool, credentials and endpoint) with the store's retry and timeout settings.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::Elector;
/// use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};
///
/// let config = aws_config::load_from_env().await;
/// let client = aws_sdk_dynamodb::Client::new(&config);
/// let store = DynamoDbStore::new(client, DynamoDbOptions::default())?;
/// let elector = Elector::new(Arc::new(store));
/// elector.run_if_leader("export", |ctx| async move { ctx.fence() }).await?;
/// # Ok(()) }
/// ```
pub struct DynamoDbStore {
    pub(crate) client: Client,
    pub(crate) options: DynamoDbOptions,
    notifier: ReleaseNotifier,
    description: String,
    pub(crate) metrics: Arc<StoreMetrics>,
    /// The sessions this instance holds leases under.
    pub(crate) sessions: Arc<crate::session::Sessions>,
    /// The stale-item refresher's stop signal: dropping the store stops it.
    refresher: Option<crate::refresh::Refresher>,
}

leasehold::store::store_debug!(DynamoDbStore, "options" => options);

impl DynamoDbStore {
    /// A store on the application's `client`, after checking `options`. It registers its
    /// [metrics](crate::metrics) with the `metrics` recorder in effect, and with
    /// [`stale_refresh`](DynamoDbOptions::stale_refresh) starts the stale-item refresher on the
    /// current tokio runtime.
    ///
    /// # Errors
    ///
    /// A [`DynamoDbOptionsError`] when `options` break a rule ([`DynamoDbOptions::validate`]),
    /// or name `stale_refresh` when it is set and this is not called within a tokio runtime.
    ///
    /// ```
    /// use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    /// use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};
    ///
    /// let config = aws_sdk_dynamodb::Config::builder()
    ///     .behavior_version(BehaviorVersion::latest())
    ///     .region(Region::new("eu-west-1"))
    ///     .credentials_provider(Credentials::for_tests())
    ///     .endpoint_url("http://127.0.0.1:8000")
    ///     .build();
    /// let client = aws_sdk_dynamodb::Client::from_conf(config);
    /// let store = DynamoDbStore::new(client.clone(), DynamoDbOptions::default())?;
    /// assert_eq!(store.table(), "leasehold_leases");
    /// assert!(DynamoDbStore::new(client, DynamoDbOptions::default().with_table("no")).is_err());
    /// # Ok::<(), leasehold_dynamodb::DynamoDbOptionsError>(())
    /// ```
    pub fn new(client: Client, options: DynamoDbOptions) -> Result<Self, DynamoDbOptionsError> {
        options.validate()?;
        let client = tuned(&client, &options);
        let mut description = format!("dynamodb://{}", options.table);
        if let Some(region) = client.config().region() {
            description.push_str(&format!("?region={region}"));
        }
        let mut store = Self {
            client,
            options,
            notifier: ReleaseNotifier::default(),
            description,
            metrics: StoreMetrics::register(),
            sessions: Arc::default(),
            refresher: None,
        };
        store.refresher = crate::refresh::Refresher::start(&store)?;
        Ok(store)
    }

    /// A second handle on the same client, options and metrics, without a refresher: what the
    /// refresher counts with.
    pub(crate) fn sibling(&self) -> Self {
        Self {
            client: self.client.clone(),
            options: self.options.clone(),
            notifier: ReleaseNotifier::default(),
            description: self.description.clone(),
            metrics: Arc::clone(&self.metrics),
            sessions: Arc::default(),
            refresher: None,
        }
    }

    /// Opens a store for a `dynamodb://TABLE?…` URL and checks that the table answers; see
    /// [`DynamoDbOpener`](crate::DynamoDbOpener) for the parameters. Use it where the typed store is
    /// needed (for its client or [`create_table`](Self::create_table)); the opener gives an
    /// `Arc<dyn LeaseStore>`.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`](leasehold::store::OpenError::Invalid) for a malformed URL or option, or
    /// no region; [`OpenError::Connect`](leasehold::store::OpenError::Connect) when the table does not
    /// answer (missing, no permission, unreachable endpoint) or cannot be created.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the half-opened store. With `create_table=true`
    /// a table creation already sent goes on in DynamoDB, which is harmless.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
    /// use leasehold_dynamodb::DynamoDbStore;
    /// let store = DynamoDbStore::connect("dynamodb://leasehold_leases?region=eu-west-1").await?;
    /// assert_eq!(store.table(), "leasehold_leases");
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, leasehold::store::OpenError> {
        crate::opener::open(url).await
    }

    /// A store on a client configured from the environment (`AWS_REGION`, `AWS_PROFILE`,
    /// credentials chain, `AWS_ENDPOINT_URL`), as `aws_config::load_from_env` does.
    ///
    /// # Errors
    ///
    /// A [`DynamoDbOptionsError`] when `options` break a rule.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads the environment's configuration.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), leasehold_dynamodb::DynamoDbOptionsError> {
    /// use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};
    /// let store = DynamoDbStore::from_env(DynamoDbOptions::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn from_env(options: DynamoDbOptions) -> Result<Self, DynamoDbOptionsError> {
        let config = aws_config::load_from_env().await;
        Self::new(Client::new(&config), options)
    }

    /// The client the store uses (the application's, with the store's retry and timeouts).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The options.
    pub fn options(&self) -> &DynamoDbOptions {
        &self.options
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.options.table
    }

    /// The partition key of `(lock, slot)` in this store (with its key prefix).
    ///
    /// ```
    /// # use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    /// # let client = aws_sdk_dynamodb::Client::from_conf(aws_sdk_dynamodb::Config::builder()
    /// #     .behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1"))
    /// #     .credentials_provider(Credentials::for_tests()).build());
    /// use leasehold::LockName;
    /// use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};
    ///
    /// let store = DynamoDbStore::new(client, DynamoDbOptions::default().with_key_prefix("billing"))?;
    /// assert_eq!(store.key(&LockName::new("export")?, 1), "billing/export#slot-1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self, lock: &LockName, slot: u32) -> String {
        item_key(&self.options.key_prefix, lock, slot)
    }

    /// Creates the table if it is missing (on-demand capacity, TTL on `ttl`) and waits until it
    /// is active: for development and tests; keep production tables in infrastructure code. See
    /// [`create_table`](crate::create_table).
    ///
    /// # Errors
    ///
    /// The classified error of the request; an existing table with another key schema is a
    /// permanent error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a creation already sent goes on in DynamoDB, and the next call finds the
    /// table and waits until it is active.
    ///
    /// ```no_run
    /// # async fn demo(store: leasehold_dynamodb::DynamoDbStore) -> leasehold::store::StoreResult<()> {
    /// store.create_table().await?; // idempotent
    /// store.check().await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_table(&self) -> StoreResult<()> {
        crate::create_table(&self.client, &self.options.table).await
    }

    /// Checks that the table answers a consistent read with these credentials: a missing table,
    /// missing permissions or an unreachable endpoint give the classified error at once.
    ///
    /// # Errors
    ///
    /// The classified error of the read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a read changes nothing.
    pub async fn check(&self) -> StoreResult<()> {
        let probe = LockName::new("leasehold-probe")
            .map_err(|e| StoreError::permanent(format!("probe name: {e}")))?;
        self.read_item(&self.key(&probe, 0)).await.map(|_| ())
    }

    /// The core's shared check ([`leasehold::store::check_slots`]); 0 counts as 1.
    fn check_slots(slots: u32) -> StoreResult<u32> {
        Ok(leasehold::store::check_slots(slots)?.max(1))
    }
}

#[async_trait]
impl LeaseStore for DynamoDbStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.check_ttl(req.ttl)?;
        req.check()?;
        let slots = Self::check_slots(req.slots)?;
        if let Some(period) = req.period {
            self.check_period(period)?;
            return self.acquire_period(req, period).await;
        }
        if slots == 1 {
            return self.acquire_slot(req, 0).await;
        }
        Ok(self.acquire_group(req, slots).await?.into())
    }

    /// A lease of one of this instance's sessions renews its session (see `extend_many`);
    /// any other lease its own item.
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        if self.sessions.member(lease.token).is_none() {
            return self.extend_lease(lease, ttl).await;
        }
        let mut answers = self.extend_all(&[(lease.clone(), ttl)]).await;
        answers
            .pop()
            .unwrap_or_else(|| Err(StoreError::transient("the renewal gave no answer")))
    }

    /// One conditional `UpdateItem` per session of this instance the entries' leases were
    /// granted under, whatever their number; entries of other leases renew alone.
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        self.extend_all(leases).await
    }

    fn renews_in_batches(&self) -> bool {
        true
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        if let Some(member) = self.sessions.member(lease.token) {
            let released = self.release_member(lease, &member, linger).await?;
            return Ok(self.notifier.after_release(&lease.lock, linger, released));
        }
        let released = if linger.is_zero() {
            self.free_lease(lease).await?
        } else {
            self.shorten_lease(lease, linger).await?
        };
        Ok(self.notifier.after_release(&lease.lock, linger, released))
    }

    leasehold::store::period_ledger! {
        start_period => start_claim;
        period_record => ledger_record;
        /// One conditional `UpdateItem` removing the ledger's attributes from slot 0's item and
        /// returning them as they were (see the `protocol` module).
        clear_period_ledger => clear_ledger;
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        let slots = Self::check_slots(slots)?;
        Ok(LockState::new(
            lock.clone(),
            slots,
            self.live_holders(lock, slots).await?,
        ))
    }

    /// Every item asked for in consistent `BatchGetItem`s of 100 keys (then the session items
    /// they name): a few requests, whatever else the table holds.
    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        let slots = Self::check_slots(slots)?;
        let holders = self.live_holders_many(locks, slots).await?;
        Ok(LockState::each(locks, slots, holders))
    }

    fn reads_in_batches(&self) -> bool {
        true
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        let slots = Self::check_slots(slots)?;
        let freed = self.force_slots(lock, slots).await?;
        Ok(self.notifier.after_forced_release(lock, freed))
    }

    /// One `Scan` of at most [`MAX_LIST_SCAN`](leasehold::store::MAX_LIST_SCAN) items per page;
    /// a group lock may come in several pages (see the `list` module).
    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.list_page(after).await
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        Some(self.notifier.subscribe(lock))
    }

    /// The clock-skew tolerance: a lease is taken over only this long after it ended.
    fn expiry_tolerance(&self) -> Duration {
        self.options.clock_skew_tolerance
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
