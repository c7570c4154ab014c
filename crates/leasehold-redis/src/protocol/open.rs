//! Opening: the requests that prove a new store's server answers and warn about its eviction
//! policy.

use leasehold::store::StoreResult;
use tracing::{debug, warn};

use crate::store::RedisStore;

impl RedisStore {
    /// Checks that the server answers (`PING`).
    ///
    /// # Errors
    ///
    /// The classified error of the command: transient when the server cannot be reached or does
    /// not answer within the response timeout.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: `PING` changes nothing.
    ///
    /// ```no_run
    /// # async fn demo(store: &leasehold_redis::RedisStore) -> leasehold::store::StoreResult<()> {
    /// store.ping().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self) -> StoreResult<()> {
        let _: redis::Value = self.link().query(&redis::cmd("PING")).await?;
        Ok(())
    }

    /// Warns if the server may evict keys under memory pressure: an evicted lease is a lock
    /// silently handed to someone else. Servers that forbid `CONFIG` are not checked.
    pub(crate) async fn check_eviction_policy(&self) {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("maxmemory-policy");
        match self.link().query::<Vec<String>>(&cmd).await {
            Ok(reply) => {
                if let Some(policy) = reply.get(1)
                    && policy != "noeviction"
                {
                    warn!(store = %leasehold::LeaseStore::describe(self), %policy,
                        "Redis may evict keys under memory pressure (maxmemory-policy is not noeviction); an evicted lease lets a second holder in");
                }
            }
            Err(e) => debug!(error = %e, "cannot read maxmemory-policy"),
        }
    }
}
