//! `NatsStore`: leases as keys of a JetStream KV bucket, written by compare-and-set with
//! per-key TTLs, fenced by stream sequences.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{AcquireRequest, Acquisition, StoreResult, check_slots};
use leasehold::store::{ServerNotifications, holders_below};
use leasehold::{
    Lease, LeaseStore, LockName,
    store::{Extension, LockState, OpenError, StoreError, redact_url},
};

use crate::keys::Keys;
use crate::link::Link;
use crate::options::NatsOptions;
use crate::protocol::{Protocol, Sessions};
use crate::url::parse;
use crate::watch;
use crate::written::Written;

leasehold::store::protocol_store! {
    /// A lease store on a NATS JetStream KV bucket, through async-nats (nats-server 2.12 or later).
    ///
    /// * Slot `n` of lock `L` is the key `<L>.s<n>` of the bucket (`.` and `:` inside `L` written
    ///   `=2E` and `=3A`, so a lock is one key token and no lock's keys match another's filter).
    /// * Acquisition reads the lock (the latest message of each key, and the session records they
    ///   name) and writes the lowest free slot with one publish conditioned on the key's last
    ///   sequence (`Nats-Expected-Last-Subject-Sequence`) and carrying a per-message TTL
    ///   (`Nats-TTL`, the lease rounded **up** to whole seconds): the server removes the lease when
    ///   it runs out.
    /// * Extended leases are held under **sessions**: one session record per store and lease
    ///   length, the key `=session.<id>`, written with a `Nats-TTL` of the lease, which the server
    ///   removes when nobody renews it. A lease's first extension attaches its lock record to the
    ///   session (one write: the record names the session in a header and loses its own TTL); from
    ///   then on it is held while its session record is there and has not revoked it.
    /// * The **fence** is the stream sequence of the granting message: it only grows in a bucket,
    ///   so fences strictly increase per `(lock, slot)`; later writes keep it in the value.
    /// * [`extend_many`](LeaseStore::extend_many) renews every lease attached to one session with
    ///   one conditional write of the session record; release is a delete marker conditioned on the
    ///   sequence of the holder's own write; a forced release revokes the lease in its session
    ///   record before deleting it, so its holder's next renewal answers `NotHeld` for it alone.
    /// * Expiries are this host's clock when the session write was sent plus the lease: never
    ///   later than the server's removal, which counts a TTL at least as long from when it stored
    ///   the message.
    /// * Releases wake local waiters through one KV watch per store.
    /// * Listing ([`list_locks`](LeaseStore::list_locks)) is a batch read of the bucket's messages
    ///   in stream order, with a limit (see the `list` module).
    ///
    /// Holding a lock across several steps, with the guard:
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = leasehold_nats::NatsStore::connect("nats://127.0.0.1:4222/jobs").await?;
    /// let elector = leasehold::Elector::new(std::sync::Arc::new(store));
    /// if let Some(guard) = elector.try_acquire("compact-archive").await?.elected() {
    ///     // Renewed in the background (one session write a beat for all of this process's
    ///     // leases) until released; `guard.lost()` fires if it cannot be kept.
    ///     tracing::info!(fence = guard.fence(), "compacting");
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub struct NatsStore { protocol: Protocol, options: NatsOptions }
    debug: "bucket" => options.bucket;
}

impl NatsStore {
    leasehold::store::store_constructors! {
        options: NatsOptions;
        /// Opens a store for a `nats://host:port/bucket` URL, creates the bucket when absent and
        /// checks an existing one. `user:password@` or `token@` authenticates; store options can be
        /// given as query parameters (see [`NatsOptions`]).
        ///
        /// ```no_run
        /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
        /// let store = leasehold_nats::NatsStore::connect("nats://app:secret@127.0.0.1:4222/billing").await?;
        /// # Ok(()) }
        /// ```
        connect;
        connect_error: "the server does not answer within the timeouts, rejects the credentials, "
            "has no JetStream, or holds a bucket of that name that cannot keep leases";
        cancel: "dropping the future abandons the connection attempt (a bucket created "
            "meanwhile stays, and is used by the next connection)";
        ///
        /// ```no_run
        /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
        /// use leasehold_nats::{NatsOptions, NatsStore};
        /// let store = NatsStore::connect_with("nats://127.0.0.1:4222", NatsOptions::default().with_bucket("jobs")).await?;
        /// # Ok(()) }
        /// ```
        connect_with;
    }

    /// Builds a store without contacting the server; the first operation connects (and creates
    /// or checks the bucket).
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL or option.
    ///
    /// ```
    /// use leasehold_nats::{NatsOptions, NatsStore};
    /// let store = NatsStore::connect_lazy("nats://app:hunter2@127.0.0.1:4222/jobs", NatsOptions::default())?;
    /// assert_eq!(leasehold::LeaseStore::describe(&store), "nats://app:***@127.0.0.1:4222/jobs");
    /// assert_eq!(store.options().bucket(), "jobs");
    /// // A token goes in the query string, where it is redacted; before the host it is refused.
    /// let e = NatsStore::connect_lazy("nats://s3cr3t@127.0.0.1", NatsOptions::default()).unwrap_err();
    /// assert!(!e.to_string().contains("s3cr3t"), "{e}");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn connect_lazy(url: &str, options: NatsOptions) -> Result<Self, OpenError> {
        let shown = redact_url(url);
        let target = parse(url, options).map_err(|e| e.into_open_error(&shown))?;
        let keys = Keys::new(&target.options.bucket);
        let link = Link::new(
            target.server,
            target.credentials,
            keys.clone(),
            target.options.request_timeout(),
            target.options.connect_timeout(),
        );
        Ok(Self::build(link, keys, target.options, shown))
    }

    /// Uses an async-nats [`Client`](async_nats::Client) the application connected (its own TLS,
    /// credentials, …). The bucket is created or checked on first use. The connect timeout does
    /// not apply.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for invalid options.
    ///
    /// # Cancel safety
    ///
    /// Not async; nothing to cancel.
    pub fn from_client(
        client: async_nats::Client,
        options: NatsOptions,
    ) -> Result<Self, OpenError> {
        let description = "NATS client".to_owned();
        options
            .validate()
            .map_err(|reason| OpenError::invalid(&description, reason))?;
        let keys = Keys::new(&options.bucket);
        let link = Link::from_client(client, keys.clone(), options.request_timeout());
        Ok(Self::build(link, keys, options, description))
    }

    fn build(link: Link, keys: Keys, options: NatsOptions, description: String) -> Self {
        Self {
            protocol: Protocol {
                link: Arc::new(link),
                keys,
                written: Written::default(),
                sessions: Sessions::default(),
            },
            notifications: ServerNotifications::new(options.notifications()),
            description,
            options,
        }
    }

    /// The options in effect.
    ///
    /// ```
    /// # let store = leasehold_nats::NatsStore::connect_lazy("nats://h?bucket=x", Default::default())?;
    /// assert_eq!(store.options().bucket(), "x");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn options(&self) -> &NatsOptions {
        &self.options
    }

    /// The KV key of one slot of a lock: `<lock>.s<slot>`, with `.` and `:` inside the lock name
    /// written `=2E` and `=3A`.
    ///
    /// ```
    /// # let store = leasehold_nats::NatsStore::connect_lazy("nats://h", Default::default())?;
    /// let lock = leasehold::LockName::new("tenant:a:report")?;
    /// assert_eq!(store.key(&lock, 0), "tenant=3Aa=3Areport.s0");
    /// let lock = leasehold::LockName::new("reports/daily.v2")?;
    /// assert_eq!(store.key(&lock, 2), "reports/daily=2Ev2.s2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self, lock: &LockName, slot: u32) -> String {
        self.protocol.keys.slot_key(lock, slot)
    }

    /// The async-nats client the store's requests use (a cheap clone), connecting on first use,
    /// e.g. to write fenced data in the same server.
    ///
    /// # Errors
    ///
    /// The classified error of the connection or of the bucket check.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn client(&self) -> StoreResult<async_nats::Client> {
        Ok(self.protocol.link.conn().await?.client.clone())
    }

    /// Connects (once), creates or checks the bucket, and reads one key.
    ///
    /// # Errors
    ///
    /// The classified error of the connection, the bucket check or the read.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a read changes nothing.
    pub async fn ping(&self) -> StoreResult<()> {
        let lock =
            LockName::new("leasehold-ping").map_err(|e| StoreError::permanent(e.to_string()))?;
        self.protocol.read_lock(&lock).await.map(drop)
    }
}

#[async_trait]
impl LeaseStore for NatsStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        req.check()?;
        req.check_owner()?;
        self.protocol.try_acquire(req).await
    }

    /// A renewal of the lease's session record (see [`extend_many`](Self::extend_many)).
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let entry = [(lease.clone(), ttl)];
        self.extend_many(&entry)
            .await
            .pop()
            .unwrap_or_else(|| Err(StoreError::permanent("an extension was not answered")))
    }

    /// One conditional write of the session record per lease length, however many leases (see
    /// the `protocol` module); a lease's first extension, or one with another length than its
    /// session's, also attaches its lock record to the session of that length (one write), and
    /// a lease this store did not grant is extended alone.
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        self.protocol.extend_many(leases).await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        let held = self.protocol.read_lock(lock).await?;
        Ok(LockState::new(
            lock.clone(),
            slots,
            holders_below(held.records.iter().map(|r| &r.held), slots),
        ))
    }

    /// One batch direct get of the keys of up to 256 locks at a time, then of the session
    /// records they name (`Protocol::holders_many`).
    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        check_slots(slots)?;
        let holders = self.protocol.holders_many(locks, slots).await?;
        Ok(LockState::each(locks, slots, holders))
    }

    fn reads_in_batches(&self) -> bool {
        true
    }

    leasehold::store::protocol_store_methods!(waking watch::run, keys; crate::list::list);

    leasehold::store::period_ledger! {
        /// A read of the lock, then one publish of the ledger conditioned on the whole lock (see
        /// the `protocol` module).
        start_period => protocol.start_period;
        /// One direct get of the ledger key `<lock>.ledger`.
        period_record => protocol.period_record;
        /// A direct get of the ledger key, then one delete marker expecting the sequence read
        /// (see the `protocol` module).
        clear_period_ledger => protocol.clear_period;
    }
}
