//! `zk://` URLs through the core's store registry.

use std::sync::Arc;

use async_trait::async_trait;
use leasehold::store::StoreOpener;
use leasehold::{LeaseStore, store::OpenError};

use crate::store::ZooKeeperStore;

/// Opens [`ZooKeeperStore`]s for the `zk` scheme. Servers are comma-separated, the path is the
/// chroot, and store options go in the query string (see
/// [`ZooKeeperOptions`](crate::ZooKeeperOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_zookeeper::ZooKeeperOpener);
/// let store = registry.open("zk://10.0.0.1:2181,10.0.0.2:2181/apps").await?;
/// assert_eq!(store.describe(), "zk://10.0.0.1:2181,10.0.0.2:2181/apps");
/// # Ok(()) }
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct ZooKeeperOpener;

#[async_trait]
impl StoreOpener for ZooKeeperOpener {
    fn schemes(&self) -> &'static [&'static str] {
        &["zk"]
    }

    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        Ok(Arc::new(ZooKeeperStore::connect(url).await?))
    }
}
