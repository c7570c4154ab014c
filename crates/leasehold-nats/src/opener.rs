//! `nats://` URLs through the core's store registry.

use async_trait::async_trait;
use leasehold::store::{OpenError, UrlOpener, UrlStore};

use crate::store::NatsStore;

/// Opens [`NatsStore`]s for the `nats` scheme. The path is the KV bucket, and store options go
/// in the query string (see [`NatsOptions`](crate::NatsOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_nats::NatsOpener::new());
/// let store = registry.open("nats://app:secret@10.0.0.1:4222/jobs").await?;
/// assert_eq!(store.describe(), "nats://app:***@10.0.0.1:4222/jobs");
/// # Ok(()) }
/// ```
pub type NatsOpener = UrlOpener<NatsStore>;

#[async_trait]
impl UrlStore for NatsStore {
    const SCHEMES: &'static [&'static str] = &["nats"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        NatsStore::connect(url).await
    }
}
