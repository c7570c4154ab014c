//! `nats://` URLs through the core's store registry.

use std::sync::Arc;

use async_trait::async_trait;
use leasehold::store::StoreOpener;
use leasehold::{LeaseStore, store::OpenError};

use crate::store::NatsStore;

/// Opens [`NatsStore`]s for the `nats` scheme. The path is the KV bucket, and store options go
/// in the query string (see [`NatsOptions`](crate::NatsOptions)).
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_nats::NatsOpener);
/// let store = registry.open("nats://app:secret@10.0.0.1:4222/jobs").await?;
/// assert_eq!(store.describe(), "nats://app:***@10.0.0.1:4222/jobs");
/// # Ok(()) }
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct NatsOpener;

#[async_trait]
impl StoreOpener for NatsOpener {
    fn schemes(&self) -> &'static [&'static str] {
        &["nats"]
    }

    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        Ok(Arc::new(NatsStore::connect(url).await?))
    }
}
