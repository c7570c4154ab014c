//! The [`FencedSink`] adapter of this crate's fenced writes, so that one scenario (the testkit's
//! paused stale holder, the benchmark's fenced-sinks safety runs) can drive them against a real
//! Redis.

use async_trait::async_trait;
use leasehold::LeaderContext;
use leasehold::fence::{
    FenceRefusal, FencedSink, ResourceName, SinkAnswer, SinkError, sink_answer,
};

use super::{FencedKeys, FencedWriteError};

/// The fenced `SET` ([`FencedKeys`]) as a [`FencedSink`]: resource `r` is the key
/// `<key_prefix><r>`, written with the holder's fence and read back with `GET`.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::LeaseStore;
/// use leasehold_redis::{RedisOptions, RedisStore};
/// use leasehold_redis::fence::sinks::FencedSetSink;
/// use leasehold_testkit::stale_holder::{self, StaleHolderConfig};
///
/// let url = "redis://127.0.0.1:6379";
/// let sink = FencedSetSink::new(RedisStore::connect(url).await?.fenced_keys(), "bench:");
/// let factory = move || Arc::new(RedisStore::connect_lazy(url, RedisOptions::default()).unwrap()) as Arc<dyn LeaseStore>;
/// let report = stale_holder::run(&factory, &sink, &StaleHolderConfig::default()).await;
/// assert!(report.passed(), "{report}");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FencedSetSink {
    keys: FencedKeys,
    key_prefix: String,
}

impl FencedSetSink {
    /// A sink writing the keys `<key_prefix><resource>` through `keys`.
    pub fn new(keys: FencedKeys, key_prefix: impl Into<String>) -> Self {
        Self {
            keys,
            key_prefix: key_prefix.into(),
        }
    }

    /// The key that holds `resource`'s value.
    pub fn key(&self, resource: &ResourceName) -> String {
        format!("{}{resource}", self.key_prefix)
    }
}

#[async_trait]
impl FencedSink for FencedSetSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let key = self.key(resource);
        let written = self.keys.fenced(ctx).set(&key, value, None).await;
        sink_answer(written, FencedWriteError::is_stale)
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        let mut get = redis::cmd("GET");
        get.arg(self.key(resource));
        Ok(self.keys.query(&get).await?)
    }

    fn describe(&self) -> String {
        "redis fenced SET".to_owned()
    }
}
