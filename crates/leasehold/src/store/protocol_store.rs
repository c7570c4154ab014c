//! `protocol_store!`, `protocol_store_methods!` and `period_ledger!`: the struct of a store built
//! on a protocol object, and the [`LeaseStore`](crate::LeaseStore) methods that stores answer by
//! handing the call on, written once for every store that does.
//!
//! Both macros write their methods inside a store's `#[async_trait] impl LeaseStore` block, in
//! the form `#[async_trait]` gives the trait's methods (a boxed `Send` future), because that
//! attribute has already run when they expand.

/// Declares the struct of a store built on a protocol object, with the fields
/// [`protocol_store_methods!`](crate::store::protocol_store_methods) hands calls on to:
/// `protocol` (the store's requests; visible in its crate), `options` (as opened),
/// `notifications` (its [`ServerNotifications`](crate::store::ServerNotifications)) and
/// `description` (the redacted URL [`describe`](crate::LeaseStore::describe) answers); and its
/// `Debug`, by [`store_debug!`](crate::store::store_debug) with the one field named after
/// `debug:`. The docs given before `pub struct` are the type's.
///
/// ```
/// use leasehold::store::ServerNotifications;
///
/// pub struct Protocol;
/// #[derive(Default)]
/// pub struct KvOptions { pub prefix: String }
///
/// leasehold::store::protocol_store! {
///     /// A store on a key-value service.
///     pub struct KvStore { protocol: Protocol, options: KvOptions }
///     debug: "prefix" => options.prefix;
/// }
///
/// let store = KvStore {
///     protocol: Protocol,
///     options: KvOptions { prefix: "jobs".into() },
///     notifications: ServerNotifications::new(false),
///     description: "kv://app:***@h".into(),
/// };
/// assert_eq!(format!("{store:?}"), r#"KvStore { store: "kv://app:***@h", prefix: "jobs", .. }"#);
/// # let _ = (&store.protocol, &store.notifications);
/// ```
#[macro_export]
macro_rules! protocol_store {
    (
        $(#[$doc:meta])*
        pub struct $store:ident { protocol: $protocol:ty, options: $options:ty $(,)? }
        debug: $name:literal => $($field:ident).+;
    ) => {
        $(#[$doc])*
        pub struct $store {
            pub(crate) protocol: $protocol,
            options: $options,
            notifications: $crate::store::ServerNotifications,
            description: ::std::string::String,
        }

        $crate::store_debug!($store, $name => $($field).+);
    };
}

/// Writes the [`LeaseStore`](crate::LeaseStore) methods of a store built, like the etcd, NATS
/// and ZooKeeper stores, on a protocol object: a store type with the fields
/// `protocol` (the protocol), `notifications` (its
/// [`ServerNotifications`](crate::store::ServerNotifications)) and `description` (what
/// [`describe`](crate::LeaseStore::describe) answers), whose protocol answers
/// `release(lease, linger)`, implements [`ForceRound`](crate::store::ForceRound) (the rounds of
/// a forced release, driven by [`forced_release`](crate::store::forced_release)) and has a
/// `link` (an `Arc` of its connection).
///
/// It writes, for `$watch, $keys; $list` (`$watch(Arc::clone(&protocol.link),
/// protocol.$keys.clone(), notifier)` being the future of the store's release listener and
/// `$list(&protocol, &description, after)` one page of its listing):
///
/// * `renews_in_batches`: true (such a store's `extend_many` renews many leases at once);
/// * `release`: the protocol's; with `waking` first, this process's waiters are woken at once
///   ([`ServerNotifications::after_release`](crate::store::ServerNotifications::after_release)),
///   without waiting for the listener to report it;
/// * `force_release`: the slot count checked, then the protocol's rounds; with `waking`, this
///   process's waiters are woken for the holders freed;
/// * `list_locks`, `release_signal` (the listener started on the first subscription) and
///   `describe`.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use leasehold::store::{
///     AcquireRequest, Acquisition, Extension, ForceRound, ForcedRound, LeaseStore, ListCursor,
///     LockPage, LockState, PeriodRecord, PeriodStart, Release, ReleaseNotifier,
///     ServerNotifications, StoreError, StoreResult, async_trait,
/// };
/// use leasehold::{Lease, LockName};
///
/// struct Protocol { link: Arc<()>, keys: String }
/// impl Protocol {
///     async fn release(&self, _lease: &Lease, _linger: Duration) -> StoreResult<Release> {
///         Ok(Release::NotHeld)
///     }
/// }
/// #[async_trait]
/// impl ForceRound for Protocol {
///     async fn force_round(&self, _lock: &LockName, _slots: u32) -> StoreResult<ForcedRound> {
///         Ok(ForcedRound::default())
///     }
/// }
/// async fn watch(_link: Arc<()>, _keys: String, _notifier: Arc<ReleaseNotifier>) {}
/// async fn list(_: &Protocol, _store: &str, _after: Option<&ListCursor>) -> StoreResult<LockPage> {
///     Ok(LockPage::new(Vec::new(), None))
/// }
///
/// struct KvStore { protocol: Protocol, notifications: ServerNotifications, description: String }
///
/// #[async_trait]
/// impl LeaseStore for KvStore {
///     async fn try_acquire(&self, _req: &AcquireRequest) -> StoreResult<Acquisition> {
///         Err(StoreError::permanent("not in this example"))
///     }
///     async fn extend(&self, _lease: &Lease, _ttl: Duration) -> StoreResult<Extension> {
///         Err(StoreError::permanent("not in this example"))
///     }
///     async fn start_period(&self, _lease: &Lease) -> StoreResult<PeriodStart> {
///         Ok(PeriodStart::NotHeld)
///     }
///     async fn period_record(&self, _lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
///         Ok(None)
///     }
///     async fn clear_period_ledger(&self, _lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
///         Ok(None)
///     }
///     async fn state(&self, _lock: &LockName, _slots: u32) -> StoreResult<LockState> {
///         Err(StoreError::permanent("not in this example"))
///     }
///     leasehold::store::protocol_store_methods!(waking watch, keys; list);
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = KvStore {
///     protocol: Protocol { link: Arc::new(()), keys: "kv/".into() },
///     notifications: ServerNotifications::new(false),
///     description: "kv://h".into(),
/// };
/// let lock = LockName::new("report")?;
/// assert!(store.force_release(&lock, 1).await?.is_empty());
/// assert!(store.list_locks(None).await?.locks.is_empty());
/// assert!(store.release_signal(&lock).is_none(), "notifications are off");
/// assert!(store.renews_in_batches());
/// assert_eq!(store.describe(), "kv://h");
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! protocol_store_methods {
    (waking $watch:path, $keys:ident; $list:path) => {
        $crate::protocol_store_methods!(@common $watch, $keys; $list);

        $crate::boxed_store_method! {
            fn release(&self, lease: &'life1 $crate::store::Lease, linger: ::std::time::Duration)
                -> $crate::store::StoreResult<$crate::store::Release>
            {
                let released = self.protocol.release(lease, linger).await?;
                // The listener reports it too; waking this process's waiters now saves its round
                // trip.
                Ok(self
                    .notifications
                    .after_release(&lease.lock, linger, released))
            }
        }

        $crate::boxed_store_method! {
            fn force_release(&self, lock: &'life1 $crate::store::LockName, slots: u32)
                -> $crate::store::StoreResult<Vec<$crate::store::Holder>>
            {
                let freed = $crate::protocol_store_methods!(@force self, lock, slots)?;
                Ok(self.notifications.after_forced_release(lock, freed))
            }
        }
    };
    ($watch:path, $keys:ident; $list:path) => {
        $crate::protocol_store_methods!(@common $watch, $keys; $list);

        $crate::boxed_store_method! {
            fn release(&self, lease: &'life1 $crate::store::Lease, linger: ::std::time::Duration)
                -> $crate::store::StoreResult<$crate::store::Release>
            {
                self.protocol.release(lease, linger).await
            }
        }

        $crate::boxed_store_method! {
            fn force_release(&self, lock: &'life1 $crate::store::LockName, slots: u32)
                -> $crate::store::StoreResult<Vec<$crate::store::Holder>>
            {
                $crate::protocol_store_methods!(@force self, lock, slots)
            }
        }
    };
    (@force $self:ident, $lock:ident, $slots:ident) => {
        async {
            $crate::store::check_slots($slots)?;
            let protocol = &$self.protocol;
            $crate::store::forced_release($lock, || {
                $crate::store::ForceRound::force_round(protocol, $lock, $slots)
            })
            .await
        }
        .await
    };
    (@common $watch:path, $keys:ident; $list:path) => {
        fn renews_in_batches(&self) -> bool {
            true
        }

        $crate::boxed_store_method! {
            fn list_locks(&self, after: Option<&'life1 $crate::store::ListCursor>)
                -> $crate::store::StoreResult<$crate::store::LockPage>
            {
                $list(&self.protocol, &self.description, after).await
            }
        }

        fn release_signal(
            &self,
            lock: &$crate::store::LockName,
        ) -> Option<$crate::store::ReleaseSignal> {
            self.notifications.signal(lock, |notifier| {
                $watch(
                    ::std::sync::Arc::clone(&self.protocol.link),
                    self.protocol.$keys.clone(),
                    notifier,
                )
            })
        }

        fn describe(&self) -> String {
            self.description.clone()
        }
    };
}

/// Writes a store's three period-ledger methods of [`LeaseStore`](crate::LeaseStore)
/// (`start_period`, `period_record`, `clear_period_ledger`), each handing the call to the method
/// at the path given after it (a path from `self`: `protocol.start_period`, or `start_claim` for
/// a method of the store itself), documented by the docs given before it.
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::{
///     AcquireRequest, Acquisition, Extension, LeaseStore, LockState, PeriodRecord, PeriodStart,
///     Release, StoreError, StoreResult, async_trait,
/// };
/// use leasehold::{Lease, LockName};
///
/// struct Ledger;
/// impl Ledger {
///     async fn start(&self, _lease: &Lease) -> StoreResult<PeriodStart> {
///         Ok(PeriodStart::NotHeld)
///     }
///     async fn record(&self, _lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
///         Ok(None)
///     }
///     async fn clear(&self, _lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
///         Err(StoreError::transient("the ledger is busy"))
///     }
/// }
/// struct KvStore { ledger: Ledger }
///
/// #[async_trait]
/// impl LeaseStore for KvStore {
///     async fn try_acquire(&self, _req: &AcquireRequest) -> StoreResult<Acquisition> {
///         Err(StoreError::permanent("not in this example"))
///     }
///     async fn extend(&self, _lease: &Lease, _ttl: Duration) -> StoreResult<Extension> {
///         Err(StoreError::permanent("not in this example"))
///     }
///     async fn release(&self, _lease: &Lease, _linger: Duration) -> StoreResult<Release> {
///         Ok(Release::NotHeld)
///     }
///     async fn state(&self, _lock: &LockName, _slots: u32) -> StoreResult<LockState> {
///         Err(StoreError::permanent("not in this example"))
///     }
///     fn describe(&self) -> String {
///         "kv://h".into()
///     }
///     leasehold::store::period_ledger! {
///         /// One read of the lock, then one write of the ledger.
///         start_period => ledger.start;
///         period_record => ledger.record;
///         /// One read of the ledger, then one delete.
///         clear_period_ledger => ledger.clear;
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (store, lock) = (KvStore { ledger: Ledger }, LockName::new("report")?);
/// assert!(store.period_record(&lock).await?.is_none());
/// assert!(store.clear_period_ledger(&lock).await.is_err_and(|e| e.is_transient()));
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! period_ledger {
    (
        $(#[$start_doc:meta])*
        start_period => $($start:ident).+;
        $(#[$record_doc:meta])*
        period_record => $($record:ident).+;
        $(#[$clear_doc:meta])*
        clear_period_ledger => $($clear:ident).+;
    ) => {
        $crate::boxed_store_method! {
            $(#[$start_doc])*
            fn start_period(&self, lease: &'life1 $crate::store::Lease)
                -> $crate::store::StoreResult<$crate::store::PeriodStart>
            {
                self.$($start).+(lease).await
            }
        }

        $crate::boxed_store_method! {
            $(#[$record_doc])*
            fn period_record(&self, lock: &'life1 $crate::store::LockName)
                -> $crate::store::StoreResult<Option<$crate::store::PeriodRecord>>
            {
                self.$($record).+(lock).await
            }
        }

        $crate::boxed_store_method! {
            $(#[$clear_doc])*
            fn clear_period_ledger(&self, lock: &'life1 $crate::store::LockName)
                -> $crate::store::StoreResult<Option<$crate::store::PeriodRecord>>
            {
                self.$($clear).+(lock).await
            }
        }
    };
}

/// Writes one async method of [`LeaseStore`](crate::LeaseStore) with one borrowed argument
/// (its lifetime written `'life1`) in the form `#[async_trait]` gives the trait's methods: the
/// body, an `async` block, boxed as a `Send` future. For the macros above, which write methods
/// into a store's `#[async_trait] impl` after that attribute has run.
#[doc(hidden)]
#[macro_export]
macro_rules! boxed_store_method {
    (
        $(#[$doc:meta])*
        fn $name:ident(&$self:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $out:ty $body:block
    ) => {
        $(#[$doc])*
        fn $name<'life0, 'life1, 'async_trait>(
            &'life0 $self
            $(, $arg: $ty)*
        ) -> ::core::pin::Pin<
            Box<dyn ::core::future::Future<Output = $out> + ::core::marker::Send + 'async_trait>,
        >
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async move $body)
        }
    };
}
