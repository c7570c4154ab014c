//! `zk://` URLs through the core's store registry.

use async_trait::async_trait;
use leasehold::store::{OpenError, UrlOpener, UrlStore};

use crate::store::ZooKeeperStore;

/// Opens [`ZooKeeperStore`]s for the `zk` scheme. Servers are comma-separated, the path is the
/// chroot, and store options go in the query string (see
/// [`ZooKeeperOptions`](crate::ZooKeeperOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_zookeeper::ZooKeeperOpener::new());
/// let store = registry.open("zk://10.0.0.1:2181,10.0.0.2:2181/apps").await?;
/// assert_eq!(store.describe(), "zk://10.0.0.1:2181,10.0.0.2:2181/apps");
/// # Ok(()) }
/// ```
pub type ZooKeeperOpener = UrlOpener<ZooKeeperStore>;

#[async_trait]
impl UrlStore for ZooKeeperStore {
    const SCHEMES: &'static [&'static str] = &["zk"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        ZooKeeperStore::connect(url).await
    }
}
