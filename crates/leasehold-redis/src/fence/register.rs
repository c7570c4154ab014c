//! `RedisFences`: the highest fence per resource in Redis, a store-backed `FenceRegister`.

use std::sync::Arc;

use async_trait::async_trait;
use leasehold::fence::{Admission, FenceRegister, ResourceName, StaleFence};
use leasehold::store::StoreResult;
use redis::{Client, Value};

use super::lua::FenceScripts;
use super::reply::{Outcome, outcome, read_fence};
use crate::link::Link;
use crate::options::{RedisOptions, RedisOptionsError};

/// A [`FenceRegister`] in Redis: the highest fence admitted per resource, in the key
/// `<prefix>:fences:<resource>`, admitted and recorded by one Lua script (`EVALSHA`, loaded on
/// `NOSCRIPT`), so every replica of a receiving service, and its restarts, share it.
///
/// It admits by the one rule of [`Admission`]. Fences compare exactly over the whole `u64`
/// range. Keys have no expiry (forgetting a resource would let a stale write through).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use leasehold::fence::{FenceRegister, ResourceName};
/// use leasehold_redis::RedisStore;
///
/// let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let fences = store.fences();
/// let orders = ResourceName::new("orders/42")?;
/// assert!(fences.admit(&orders, 7).await?.is_admitted());
/// assert!(!fences.admit(&orders, 6).await?.is_admitted());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisFences {
    link: Arc<Link>,
    prefix: Arc<str>,
    scripts: FenceScripts,
    description: String,
}

impl std::fmt::Debug for RedisFences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFences")
            .field("register", &self.description)
            .finish_non_exhaustive()
    }
}

impl RedisFences {
    pub(crate) fn new(link: Arc<Link>, prefix: &str, server: &str) -> Self {
        Self {
            link,
            prefix: prefix.into(),
            scripts: FenceScripts::new(),
            description: format!("redis fence register {prefix}:fences:* on {server}"),
        }
    }

    /// A register on the server of `client`, under `options`' prefix and with its timeouts.
    /// Nothing is contacted until the first admission.
    ///
    /// # Errors
    ///
    /// [`RedisOptionsError`] for invalid options.
    ///
    /// ```
    /// use leasehold::fence::{FenceRegister, ResourceName};
    /// use leasehold_redis::{RedisFences, RedisOptions};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1:6379")?;
    /// let fences = RedisFences::from_client(client, RedisOptions::default().with_prefix("api"))?;
    /// assert_eq!(fences.key(&ResourceName::new("GET /reports")?), "api:fences:GET /reports");
    /// assert!(fences.describe().starts_with("redis fence register api:fences:*"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_client(client: Client, options: RedisOptions) -> Result<Self, RedisOptionsError> {
        options.validate()?;
        let server = format!("redis client {}", client.get_connection_info().addr());
        let link = Link::for_client(client, &options);
        Ok(Self::new(Arc::new(link), &options.prefix, &server))
    }

    /// The key that keeps `resource`'s highest fence: `<prefix>:fences:<resource>`.
    pub fn key(&self, resource: &ResourceName) -> String {
        format!("{}:fences:{}", self.prefix, resource.as_str())
    }
}

#[async_trait]
impl FenceRegister for RedisFences {
    async fn admit(&self, resource: &ResourceName, fence: u64) -> StoreResult<Admission> {
        let key = self.key(resource);
        let mut call = self.scripts.register.key(&key);
        call.arg(fence.to_string());
        let reply: Vec<Value> = self.link.invoke(&call).await?;
        Ok(match outcome(reply)? {
            Outcome::Admitted { previous, .. } => Admission::Admitted { previous },
            Outcome::Stale { highest } => Admission::Stale(StaleFence {
                resource: resource.clone(),
                fence,
                highest,
            }),
        })
    }

    async fn highest(&self, resource: &ResourceName) -> StoreResult<Option<u64>> {
        read_fence(&self.link, &self.key(resource)).await
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
