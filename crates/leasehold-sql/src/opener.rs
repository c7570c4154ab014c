//! `sqlite:`, `postgres://` and `mysql://` URLs through the core's store registry.

use async_trait::async_trait;
use leasehold::store::{OpenError, UrlOpener, UrlStore};

use crate::store::SqlStore;

/// Opens [`SqlStore`]s for the `sqlite`, `postgres`, `postgresql`, `mysql` and `mariadb` schemes.
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_sql::SqlOpener::new());
/// let store = registry.open("sqlite:///var/lib/app/leases.db").await?;
/// # Ok(()) }
/// ```
pub type SqlOpener = UrlOpener<SqlStore>;

#[async_trait]
impl UrlStore for SqlStore {
    const SCHEMES: &'static [&'static str] =
        &["sqlite", "postgres", "postgresql", "mysql", "mariadb"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        SqlStore::connect(url).await
    }
}
