//! `redis://` and `rediss://` URLs through the core's store registry.

use async_trait::async_trait;
use leasehold::store::{OpenError, UrlOpener, UrlStore};

use crate::store::RedisStore;

/// Opens [`RedisStore`]s for the `redis`, `rediss` (TLS), `valkey`, `valkeys` and `redis+unix`
/// schemes. Store options go in the query string (see [`RedisOptions`](crate::RedisOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_redis::RedisOpener::new());
/// let store = registry.open("rediss://:secret@cache.internal:6380/0?prefix=jobs").await?;
/// assert_eq!(store.describe(), "rediss://:***@cache.internal:6380/0?prefix=jobs");
/// # Ok(()) }
/// ```
pub type RedisOpener = UrlOpener<RedisStore>;

#[async_trait]
impl UrlStore for RedisStore {
    const SCHEMES: &'static [&'static str] =
        &["redis", "rediss", "valkey", "valkeys", "redis+unix"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        RedisStore::connect(url).await
    }
}
