//! `StoreFactory`: how a test obtains clients of the store under test.

use std::sync::Arc;

use leasehold::LeaseStore;

/// Makes clients of the store under test.
///
/// Each call returns a new *client* of the same backend: for an in-process store, another handle to
/// the same shared instance (see [`SharedStore`]); for a networked store, a new connection pool to
/// the same server. Tests that simulate two nodes call it twice, so each node has its own client.
///
/// Closures `Fn() -> Arc<dyn LeaseStore>` are factories too.
///
/// ```
/// use std::sync::Arc;
/// use leasehold::{LeaseStore, MemoryStore};
/// use leasehold_testkit::StoreFactory;
///
/// let shared: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
/// let factory = move || Arc::clone(&shared);
/// assert_eq!(factory.make().describe(), "memory");
/// ```
pub trait StoreFactory: Send + Sync {
    /// A new client of the store under test.
    fn make(&self) -> Arc<dyn LeaseStore>;
}

impl<F> StoreFactory for F
where
    F: Fn() -> Arc<dyn LeaseStore> + Send + Sync,
{
    fn make(&self) -> Arc<dyn LeaseStore> {
        self()
    }
}

/// A factory whose clients are all the same shared store instance: the right factory for
/// in-process stores such as [`MemoryStore`](leasehold::MemoryStore), whose state is the instance.
///
/// ```
/// use std::sync::Arc;
/// use leasehold::MemoryStore;
/// use leasehold_testkit::{SharedStore, StoreFactory};
///
/// let factory = SharedStore::new(Arc::new(MemoryStore::new()));
/// assert!(Arc::ptr_eq(&factory.make(), &factory.make()));
/// ```
#[derive(Clone)]
pub struct SharedStore(Arc<dyn LeaseStore>);

impl SharedStore {
    /// A factory handing out clones of `store`.
    pub fn new(store: Arc<dyn LeaseStore>) -> Self {
        Self(store)
    }
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedStore")
            .field(&self.0.describe())
            .finish()
    }
}

impl StoreFactory for SharedStore {
    fn make(&self) -> Arc<dyn LeaseStore> {
        Arc::clone(&self.0)
    }
}
