//! `EtcdStore`: leases as etcd keys attached to etcd leases, fenced by revisions.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Client, ConnectOptions, GetOptions};
use leasehold::store::{AcquireRequest, Acquisition, StoreResult, check_slots};
use leasehold::store::{ServerNotifications, holders_below};
use leasehold::{
    Lease, LeaseStore, LockName,
    store::{Extension, LockState, OpenError, redact_url},
};

use crate::keys::Keys;
use crate::link::{Link, install_tls_provider, tls_options};
use crate::options::EtcdOptions;
use crate::protocol::Protocol;
use crate::session::Sessions;
use crate::url::parse;
use crate::watch;

leasehold::store::protocol_store! {
    /// A lease store on an etcd v3 cluster, through etcd-client.
    ///
    /// * Slot `n` of lock `L` is the key `<prefix>/L/n` (a `/` inside `L` written `%2F`, so one
    ///   lock's keys never nest under another's), attached to the store's **session** for the
    ///   lease's TTL: one etcd lease per TTL (rounded **up** to whole seconds) that all the store's
    ///   keys of that TTL share. etcd deletes them when it runs out, by its own (leader's) clock.
    /// * Acquiring a single-slot lock is one transaction: *if slot 0's key is absent, put it on the
    ///   session* (else read the lock back, where a retried request finds its own grant). A group
    ///   reads its slots first to find the lowest free one.
    /// * The **fence** is the key's `create_revision`: etcd's cluster-wide revision only grows,
    ///   across leader changes, member restarts and compaction, so fences strictly increase per
    ///   `(lock, slot)`. They are large numbers (the cluster's write count), not 1, 2, 3.
    /// * Renewing every lease of one TTL ([`extend_many`](LeaseStore::extend_many), what the
    ///   elector's heartbeat sends) is one keep-alive of the session and one read of the keys still
    ///   on it, whatever their number; release is one delete conditioned on the grant's revision.
    ///   A stale holder changes nothing.
    /// * Expiries are this host's clock when the request was sent plus the TTL etcd granted, so
    ///   they never come after etcd's own expiry.
    /// * Releases wake local waiters through one etcd watch per store.
    /// * Listing ([`list_locks`](LeaseStore::list_locks)) is a range read over the lock keys with a
    ///   limit, in key order (see the `list` module).
    /// * Every request has a deadline ([`EtcdOptions::request_timeout`]); requests an endpoint
    ///   refused are sent again, to another endpoint, within it.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use leasehold::Elector;
    /// use leasehold_etcd::EtcdStore;
    ///
    /// let store = EtcdStore::connect("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/jobs").await?;
    /// let elector = Elector::new(Arc::new(store));
    /// if let Some(fence) = elector.run_if_leader("nightly-report", |ctx| async move { ctx.fence() }).await? {
    ///     tracing::info!(fence, "ran as leader");
    /// }
    /// # Ok(()) }
    /// ```
    pub struct EtcdStore { protocol: Protocol, options: EtcdOptions }
    debug: "prefix" => options.prefix;
}

impl EtcdStore {
    leasehold::store::store_constructors! {
        options: EtcdOptions;
        /// Opens a store for an `etcd://host:port[,host:port…]/prefix` or `etcds://…` (TLS) URL and
        /// checks that the cluster answers. `user:password@` authenticates; store options can be
        /// given as query parameters (see [`EtcdOptions`]).
        ///
        /// ```no_run
        /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
        /// let store = leasehold_etcd::EtcdStore::connect("etcd://app:secret@127.0.0.1:2379/billing").await?;
        /// # Ok(()) }
        /// ```
        connect;
        connect_error: "no endpoint answers within the request timeout or the credentials are "
            "rejected";
        cancel: "dropping the future only abandons the connection attempt";
        ///
        /// ```no_run
        /// # async fn demo() -> Result<(), leasehold::store::OpenError> {
        /// use leasehold_etcd::{EtcdOptions, EtcdStore};
        /// let store = EtcdStore::connect_with("etcd://127.0.0.1:2379", EtcdOptions::default().with_prefix("jobs")).await?;
        /// # Ok(()) }
        /// ```
        connect_with;
    }

    /// Builds a store without contacting the cluster; the first operation connects.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL or option, or unreadable TLS files.
    ///
    /// ```
    /// use leasehold_etcd::{EtcdOptions, EtcdStore};
    /// let store = EtcdStore::connect_lazy("etcd://app:hunter2@127.0.0.1:2379,127.0.0.2:2379/jobs", EtcdOptions::default())?;
    /// assert_eq!(leasehold::LeaseStore::describe(&store), "etcd://app:***@127.0.0.1:2379,127.0.0.2:2379/jobs");
    /// assert_eq!(store.options().prefix(), "jobs");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn connect_lazy(url: &str, options: EtcdOptions) -> Result<Self, OpenError> {
        let target = parse(url, options).map_err(|e| e.into_open_error(url))?;
        let mut connect = ConnectOptions::new();
        if let Some((user, password)) = &target.user {
            connect = connect
                .with_user(user.clone(), password.expose())
                .with_auto_token_refresh(true);
        }
        if target.tls {
            install_tls_provider();
            connect = connect
                .with_tls(tls_options(&target.options).map_err(|r| OpenError::invalid(url, r))?);
        } else if target.options.has_tls_files() {
            return Err(OpenError::invalid(url, "TLS files need an etcds:// URL"));
        }
        let link = Link::new(
            target.endpoints,
            connect,
            target.options.request_timeout(),
            target.options.connect_timeout(),
        );
        Ok(Self::build(link, target.options, redact_url(url)))
    }

    /// Uses an etcd-client [`Client`] the application configured (its own TLS, credentials,
    /// interceptors, …). Options other than the prefix, the request timeout and notifications
    /// do not apply.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for invalid options.
    ///
    /// # Cancel safety
    ///
    /// Not async; nothing to cancel.
    pub fn from_client(client: Client, options: EtcdOptions) -> Result<Self, OpenError> {
        let description = "etcd client".to_owned();
        options
            .validate()
            .map_err(|reason| OpenError::invalid(&description, reason))?;
        let link = Link::from_client(client, options.request_timeout());
        Ok(Self::build(link, options, description))
    }

    fn build(link: Link, options: EtcdOptions, description: String) -> Self {
        Self {
            protocol: Protocol {
                link: Arc::new(link),
                keys: Keys::new(&options.prefix),
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
    /// # let store = leasehold_etcd::EtcdStore::connect_lazy("etcd://h?prefix=x", Default::default())?;
    /// assert_eq!(store.options().prefix(), "x");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn options(&self) -> &EtcdOptions {
        &self.options
    }

    /// The key of one slot of a lock: `<prefix>/<lock>/<slot>`, with a `/` inside the lock name
    /// written `%2F`.
    ///
    /// ```
    /// # let store = leasehold_etcd::EtcdStore::connect_lazy("etcd://h", Default::default())?;
    /// let lock = leasehold::LockName::new("tenant:a:report")?;
    /// assert_eq!(store.key(&lock, 0), "leasehold/tenant:a:report/0");
    /// let lock = leasehold::LockName::new("reports/daily")?;
    /// assert_eq!(store.key(&lock, 2), "leasehold/reports%2Fdaily/2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self, lock: &LockName, slot: u32) -> String {
        self.protocol.keys.slot(lock, slot)
    }

    /// The etcd client the store's requests use (a cheap clone), e.g. to make a write that
    /// commits only while a lease is held (compare the slot key's `create_revision` with the
    /// fence in your own transaction).
    ///
    /// # Errors
    ///
    /// A transient error when the client cannot connect (or authenticate) in time.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn client(&self) -> StoreResult<Client> {
        self.protocol.link.client().await
    }

    /// Checks that the cluster answers a linearizable read.
    ///
    /// # Errors
    ///
    /// The classified error of the read.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a read changes nothing.
    pub async fn ping(&self) -> StoreResult<()> {
        let root = self.protocol.keys.root();
        self.protocol
            .link
            .idempotent("a read", |mut c| {
                let root = root.clone();
                async move {
                    c.get(
                        root,
                        Some(GetOptions::new().with_prefix().with_count_only()),
                    )
                    .await
                }
            })
            .await
            .map(drop)
    }
}

#[async_trait]
impl LeaseStore for EtcdStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        req.check()?;
        req.check_owner()?;
        self.protocol.try_acquire(req).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.protocol.extend(lease, ttl).await
    }

    /// The leases this store holds on one session: one keep-alive and one read of the session's
    /// keys per session, whatever their number (see the `protocol` module).
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        self.protocol.extend_many(leases).await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        let mut held = self.protocol.read_lock(lock).await?;
        self.protocol.session_expiries(&mut held.records).await?;
        Ok(LockState::new(
            lock.clone(),
            slots,
            holders_below(held.records.iter().map(|r| &r.held), slots),
        ))
    }

    leasehold::store::protocol_store_methods!(watch::run, keys; crate::list::list);

    leasehold::store::period_ledger! {
        /// A read of the lock, then one transaction that marks the ledger's claim started if slot
        /// 0 and the ledger are as read (see the `protocol` module).
        start_period => protocol.start_period;
        /// One read of the ledger key `<prefix>/<lock>/ledger`.
        period_record => protocol.period_record;
        /// A read of the ledger key, then one transaction deleting it if it is unchanged since
        /// (`mod_revision`; see the `protocol` module).
        clear_period_ledger => protocol.clear_period;
    }
}
