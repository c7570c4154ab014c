//! `RedisStore`: leases in one hash per lock, changed only by Lua scripts timed by `TIME`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, HandOff, ListCursor, LockPage, ReleaseNotifier, ReleaseSignal,
    ReleasedTo, StoreResult, answer_each, check_slots,
};
use leasehold::{
    Holder, Lease, LeaseStore, LockName,
    store::{Extension, LockState, OpenError, Release, redact_url},
};
use redis::Client;
use redis::aio::ConnectionManager;

#[cfg(feature = "fence")]
use crate::fence::{FencedKeys, RedisFences};
use crate::keys::lock_key;
use crate::link::Link;
use crate::options::RedisOptions;
use crate::protocol::Scripts;
use crate::url::split_options;
use crate::watch::{Subscriber, Subscription};

/// A lease store on Redis (or Valkey), through redis-rs.
///
/// * A lock is one hash, `<prefix>:{<lock>}`: the braces are a hash tag, so everything about a
///   lock lives in one cluster slot. Each slot of a group has its token, owner, fence, acquisition
///   and expiry fields in it (see [`Scripts`] for the layout).
/// * Acquire, extend, release, state and forced release are each one Lua script (`EVALSHA`,
///   loaded on `NOSCRIPT`), so every operation is atomic and takes one round trip. Expiry is
///   decided by the **server clock** (`TIME`), never the client's.
/// * Fences are minted in the acquire script as `max(last + 1, server time in µs)`: strictly
///   increasing per `(lock, slot)` across release, expiry, takeover, cleanup of idle hashes and
///   restarts without persistence.
/// * Release publishes the lock name on `<prefix>:released`; one subscriber connection per store
///   wakes the local waiters of that lock within about a round trip.
/// * Commands run on an auto-reconnecting [`ConnectionManager`] with a response timeout; after a
///   timeout the connection is replaced, so a silently dead connection cannot hang the store.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::Elector;
/// use leasehold_redis::RedisStore;
///
/// let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let elector = Elector::new(Arc::new(store));
/// if let Some(fence) = elector.run_if_leader("nightly-report", |ctx| async move { ctx.fence() }).await? {
///     tracing::info!(fence, "ran as leader");
/// }
/// # Ok(()) }
/// ```
pub struct RedisStore {
    link: Arc<Link>,
    scripts: Scripts,
    options: RedisOptions,
    channel: String,
    notifier: Arc<ReleaseNotifier>,
    subscriber: Mutex<Option<Subscriber>>,
    description: String,
}

leasehold::store::store_debug!(RedisStore, "prefix" => options.prefix);

impl RedisStore {
    /// Opens a store for a `redis://`, `rediss://`, `valkey://`, `valkeys://` or
    /// `redis+unix://` URL and checks that the server answers. Store options can be given as query
    /// parameters (see [`RedisOptions`]).
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL or option (the message says what is allowed);
    /// [`OpenError::Connect`] when the server does not answer `PING` within the timeouts or
    /// refuses the credentials.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the half-opened store; nothing is held.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
    /// let store = leasehold_redis::RedisStore::connect("redis://:secret@cache.internal:6379/2?prefix=billing").await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, OpenError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Like [`connect`](Self::connect), starting from `options` (URL parameters override them).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`connect`](Self::connect).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
    /// use leasehold_redis::{RedisOptions, RedisStore};
    /// let store = RedisStore::connect_with("redis://127.0.0.1", RedisOptions::default().with_prefix("jobs")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self, OpenError> {
        let store = Self::connect_lazy(url, options)?;
        store
            .ping()
            .await
            .map_err(|source| OpenError::connect(url, source))?;
        store.check_eviction_policy().await;
        Ok(store)
    }

    /// Builds a store without contacting the server; the first operation connects.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL or option.
    ///
    /// ```
    /// use leasehold_redis::{RedisOptions, RedisStore};
    /// let store = RedisStore::connect_lazy("redis://:hunter2@127.0.0.1:6379", RedisOptions::default())?;
    /// assert_eq!(leasehold::LeaseStore::describe(&store), "redis://:***@127.0.0.1:6379");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn connect_lazy(url: &str, options: RedisOptions) -> Result<Self, OpenError> {
        let (redis_url, options) =
            split_options(url, options).map_err(|r| OpenError::invalid(url, r))?;
        let client = Client::open(redis_url.as_str()).map_err(|e| OpenError::invalid(url, e))?;
        Self::build(client, options, redact_url(url)).map_err(|r| OpenError::invalid(url, r))
    }

    /// Uses a `redis::Client` the application configured (TLS certificates, credentials, …).
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for invalid options.
    ///
    /// ```
    /// use leasehold_redis::{RedisOptions, RedisStore};
    /// let client = redis::Client::open("redis://127.0.0.1:6379")?;
    /// let store = RedisStore::from_client(client, RedisOptions::default())?;
    /// assert_eq!(store.key(&leasehold::LockName::new("job")?), "leasehold:{job}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_client(client: Client, options: RedisOptions) -> Result<Self, OpenError> {
        let description = format!("redis client {}", client.get_connection_info().addr());
        Self::build(client, options, description.clone()).map_err(|reason| OpenError::Invalid {
            url: description,
            reason,
        })
    }

    fn build(client: Client, options: RedisOptions, description: String) -> Result<Self, String> {
        options.validate().map_err(|e| e.to_string())?;
        Ok(Self {
            link: Arc::new(Link::for_client(client, &options)),
            scripts: Scripts::new(),
            channel: format!("{}:released", options.prefix),
            notifier: Arc::new(ReleaseNotifier::default()),
            subscriber: Mutex::new(None),
            description,
            options,
        })
    }

    /// The options in effect.
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h?prefix=x", Default::default())?;
    /// assert_eq!(store.options().prefix(), "x");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// The hash that holds `lock`: `<prefix>:{<lock>}`.
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h", Default::default())?;
    /// let lock = leasehold::LockName::new("tenant:a:report")?;
    /// assert_eq!(store.key(&lock), "leasehold:{tenant:a:report}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self, lock: &LockName) -> String {
        lock_key(&self.options.prefix, lock)
    }

    /// The pub/sub channel releases are published on: `<prefix>:released`, with the lock name as
    /// the message.
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h", Default::default())?;
    /// assert_eq!(store.channel(), "leasehold:released");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The scripts this store runs.
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h", Default::default())?;
    /// assert_eq!(store.scripts().release().get_hash().len(), 40);
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn scripts(&self) -> &Scripts {
        &self.scripts
    }

    /// The connection the store's commands use (a cheap clone), e.g. to issue the same scripts by
    /// hand. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// A permanent error outside a tokio runtime; the classified error when the (lazily
    /// connecting) connection cannot be set up.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it does not wait on the server.
    ///
    /// ```no_run
    /// # async fn demo(store: &leasehold_redis::RedisStore) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut conn = store.connection().await?;
    /// let pong: String = redis::cmd("PING").query_async(&mut conn).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connection(&self) -> StoreResult<ConnectionManager> {
        self.link.manager().map(|(_, manager)| manager)
    }

    /// Fenced writes to the application's own keys on this store's server, with fence keys under
    /// this store's prefix (see [`FencedKeys`]).
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h", Default::default())?;
    /// assert_eq!(store.fenced_keys().fence_key("orders:42")?, "leasehold:fence:{orders:42}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "fence")]
    pub fn fenced_keys(&self) -> FencedKeys {
        FencedKeys::new(Arc::clone(&self.link), &self.options.prefix)
    }

    /// The store-backed fence register on this store's server, under this store's prefix (see
    /// [`RedisFences`]): what a receiving service checks fences against.
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h", Default::default())?;
    /// let orders = leasehold::fence::ResourceName::new("orders/42")?;
    /// assert_eq!(store.fences().key(&orders), "leasehold:fences:orders/42");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "fence")]
    pub fn fences(&self) -> RedisFences {
        RedisFences::new(
            Arc::clone(&self.link),
            &self.options.prefix,
            &self.description,
        )
    }

    /// The connection the store's commands go through.
    pub(crate) fn link(&self) -> &Link {
        &self.link
    }
}

#[async_trait]
impl LeaseStore for RedisStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        let slots = req.check()?.max(1);
        self.acquire_slot(req, slots).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let mut answers = self.extend_leases(&[(lease.clone(), ttl)]).await?;
        Ok(answers.pop().unwrap_or(Extension::NotHeld))
    }

    /// One script for every lease (see [`ScriptKind::Extend`](crate::ScriptKind::Extend)).
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        answer_each(self.extend_leases(leases).await, leases.len())
    }

    fn renews_in_batches(&self) -> bool {
        true
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        Ok(self
            .release_to(lease, linger, HandOff::Anyone)
            .await?
            .release)
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        self.release_lease(lease, linger, to).await
    }

    fn hands_off(&self) -> bool {
        true
    }

    leasehold::store::period_ledger! {
        start_period => start_claim;
        period_record => ledger_record;
        /// One script: the ledger's fields read and deleted (`HMGET`, `HDEL`); the slots, their
        /// fences and the hash's TTL stay.
        clear_period_ledger => clear_ledger;
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        Ok(LockState::new(
            lock.clone(),
            slots,
            self.live_holders(lock, slots).await?,
        ))
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        check_slots(slots)?;
        self.force_slots(lock, slots).await
    }

    /// `SCAN` over the lock hashes, a bounded step at a time (see the `list` module).
    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.list_page(after).await
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        if !self.options.notifications {
            return None;
        }
        let signal = self.notifier.subscribe(lock);
        let mut subscriber = self.subscriber.lock().unwrap_or_else(|p| p.into_inner());
        if subscriber.is_none() {
            *subscriber = Subscriber::start(Subscription {
                client: self.link.client().clone(),
                channel: self.channel.clone(),
                notifier: Arc::clone(&self.notifier),
                connect_timeout: self.options.connect_timeout,
                response_timeout: self.options.response_timeout,
            });
        }
        // Server-side notifications wake waiters in every process, once the subscriber runs.
        Some(signal.reaching_every_client_if(subscriber.is_some()))
    }

    /// The scripts read the server's `TIME`.
    fn clock_source(&self) -> leasehold::store::ClockSource {
        leasehold::store::ClockSource::Server
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
