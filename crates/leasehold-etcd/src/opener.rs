//! `etcd://` and `etcds://` URLs through the core's store registry.

use async_trait::async_trait;
use leasehold::store::{OpenError, UrlOpener, UrlStore};

use crate::store::EtcdStore;

/// Opens [`EtcdStore`]s for the `etcd` and `etcds` (TLS) schemes. Endpoints are comma-separated,
/// the path is the key prefix, and store options go in the query string (see
/// [`EtcdOptions`](crate::EtcdOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_etcd::EtcdOpener::new());
/// let store = registry.open("etcd://app:secret@10.0.0.1:2379,10.0.0.2:2379/jobs").await?;
/// assert_eq!(store.describe(), "etcd://app:***@10.0.0.1:2379,10.0.0.2:2379/jobs");
/// # Ok(()) }
/// ```
pub type EtcdOpener = UrlOpener<EtcdStore>;

#[async_trait]
impl UrlStore for EtcdStore {
    const SCHEMES: &'static [&'static str] = &["etcd", "etcds"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        EtcdStore::connect(url).await
    }
}
