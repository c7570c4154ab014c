//! `sqlite:`, `postgres://` and `mysql://` URLs through the core's store registry.

use std::sync::Arc;

use async_trait::async_trait;
use leasehold::store::StoreOpener;
use leasehold::{LeaseStore, store::OpenError};

use crate::store::SqlStore;

/// Opens [`SqlStore`]s for the `sqlite`, `postgres`, `postgresql`, `mysql` and `mariadb` schemes.
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_sql::SqlOpener);
/// let store = registry.open("sqlite:///var/lib/app/leases.db").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SqlOpener;

#[async_trait]
impl StoreOpener for SqlOpener {
    fn schemes(&self) -> &'static [&'static str] {
        &["sqlite", "postgres", "postgresql", "mysql", "mariadb"]
    }

    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        Ok(Arc::new(SqlStore::connect(url).await?))
    }
}
