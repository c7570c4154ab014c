//! The [`FencedSink`] adapter of this crate's fenced writes, so that one scenario (the testkit's
//! paused stale holder, the benchmark's fenced-sinks safety runs) can drive them against a real
//! etcd.
//!
//! [`FencedEtcdSink`] writes resource `r` to the key `<key_prefix><r>` and reads it back with a
//! linearizable get.

use std::sync::Arc;

use async_trait::async_trait;
use etcd_client::{Txn, TxnOp};
use leasehold::LeaderContext;
use leasehold::fence::{
    FenceRefusal, FencedSink, ResourceName, SinkAnswer, SinkError, sink_answer,
};

use super::{FencedPutError, FencedTxnError};
use crate::store::EtcdStore;

/// The value of `key` as a number (`None` when absent), read linearizably.
async fn read(store: &EtcdStore, key: String) -> Result<Option<u64>, SinkError> {
    let resp = store
        .protocol
        .link
        .idempotent("a read", |mut c| {
            let key = key.clone();
            async move { c.get(key, None).await }
        })
        .await?;
    match resp.kvs().first() {
        None => Ok(None),
        Some(kv) => Ok(Some(kv.value_str()?.parse()?)),
    }
}

/// A fenced etcd write as a [`FencedSink`]: [`txn`](Self::txn) for the fenced transaction
/// ([`FencedWriter::txn`](super::FencedWriter::txn): a put applied only while the writer's lease
/// key in this store is still its own), [`put`](Self::put) for the fenced put
/// ([`FencedWriter::put`](super::FencedWriter::put): a put applied only if no higher fence put
/// the key before).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::LeaseStore;
/// use leasehold_etcd::{EtcdOptions, EtcdStore};
/// use leasehold_etcd::fence::sinks::FencedEtcdSink;
/// use leasehold_testkit::stale_holder::{self, StaleHolderConfig};
///
/// let url = "etcd://127.0.0.1:2379";
/// let sink = FencedEtcdSink::txn(Arc::new(EtcdStore::connect(url).await?), "bench/data/");
/// let factory = move || Arc::new(EtcdStore::connect_lazy(url, EtcdOptions::default()).unwrap()) as Arc<dyn LeaseStore>;
/// let report = stale_holder::run(&factory, &sink, &StaleHolderConfig::default()).await;
/// assert!(report.passed(), "{report}");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FencedEtcdSink {
    store: Arc<EtcdStore>,
    key_prefix: String,
    fenced_put: bool,
}

impl FencedEtcdSink {
    /// The fenced transaction, writing the keys `<key_prefix><resource>` through `store`, which
    /// must be a client of the store the locks are taken in (its condition is the lease's key).
    pub fn txn(store: Arc<EtcdStore>, key_prefix: impl Into<String>) -> Self {
        Self {
            store,
            key_prefix: key_prefix.into(),
            fenced_put: false,
        }
    }

    /// The fenced put, writing the keys `<key_prefix><resource>` through `store` (the fences may
    /// come from any store).
    pub fn put(store: Arc<EtcdStore>, key_prefix: impl Into<String>) -> Self {
        Self {
            fenced_put: true,
            ..Self::txn(store, key_prefix)
        }
    }

    /// The key that holds `resource`'s value.
    pub fn key(&self, resource: &ResourceName) -> String {
        format!("{}{resource}", self.key_prefix)
    }
}

#[async_trait]
impl FencedSink for FencedEtcdSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let (key, value) = (self.key(resource), value.to_string());
        let fenced = self.store.fenced(ctx);
        if self.fenced_put {
            return sink_answer(fenced.put(&key, value).await, FencedPutError::is_stale);
        }
        let put = Txn::new().and_then([TxnOp::put(key, value, None)]);
        let lost = |e: &FencedTxnError| e.lease_lost().is_some();
        sink_answer(fenced.txn(put).await, lost)
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        read(&self.store, self.key(resource)).await
    }

    fn describe(&self) -> String {
        if self.fenced_put {
            "etcd fenced put"
        } else {
            "etcd fenced transaction"
        }
        .to_owned()
    }
}
