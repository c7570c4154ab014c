//! `redis://` and `rediss://` URLs through the core's store registry.

use std::sync::Arc;

use async_trait::async_trait;
use leasehold::store::StoreOpener;
use leasehold::{LeaseStore, store::OpenError};

use crate::store::RedisStore;

/// Opens [`RedisStore`]s for the `redis`, `rediss` (TLS), `valkey`, `valkeys` and `redis+unix`
/// schemes. Store options go in the query string (see [`RedisOptions`](crate::RedisOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_redis::RedisOpener);
/// let store = registry.open("rediss://:secret@cache.internal:6380/0?prefix=jobs").await?;
/// assert_eq!(store.describe(), "rediss://:***@cache.internal:6380/0?prefix=jobs");
/// # Ok(()) }
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct RedisOpener;

#[async_trait]
impl StoreOpener for RedisOpener {
    fn schemes(&self) -> &'static [&'static str] {
        &["redis", "rediss", "valkey", "valkeys", "redis+unix"]
    }

    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        Ok(Arc::new(RedisStore::connect(url).await?))
    }
}
