//! The floor: the same acquire and release a store performs — its fewest raw round trips —
//! issued with the same client, without the elector around them.

mod dynamodb;
mod etcd;
mod nats;
mod redis;
mod sql;
mod zookeeper;

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::AcquireRequest;
use leasehold::{Lease, LeaseStore, LockName, MemoryStore, store::Token};
use leasehold_dynamodb::DynamoDbStore;
use leasehold_etcd::EtcdStore;
use leasehold_nats::NatsStore;
use leasehold_redis::RedisStore;
use leasehold_sql::SqlStore;
use leasehold_zookeeper::ZooKeeperStore;

use crate::BoxError;
use crate::backend::{Backend, etcd_options, nats_options, redis_options, zookeeper_options};

/// What the floor runs on: the concrete client the measured store also uses.
pub(crate) enum Floor {
    /// The memory store's own acquire and release, without the elector around them.
    Memory(Arc<MemoryStore>),
    /// The store's SQL statements, bound and executed directly on its pool.
    Sql(Arc<SqlStore>),
    /// The store's Lua scripts, invoked raw on its connection.
    Redis(Arc<RedisStore>),
    /// The store's two conditional `UpdateItem` requests, sent with its client.
    DynamoDb(Arc<DynamoDbStore>),
    /// The store's transactions, sent raw with its etcd-client connection, on a session lease
    /// of the floor's own, granted once.
    Etcd(Arc<EtcdStore>, etcd::Session),
    /// The store's direct get and compare-and-set publishes, sent raw with its async-nats client.
    Nats(Arc<NatsStore>),
    /// The store's `get_data` and versioned `create`/`set_data`, sent raw with its session.
    ZooKeeper(Arc<ZooKeeperStore>),
}

/// A lease the floor holds: what its release needs.
pub(crate) struct FloorLease {
    lock: LockName,
    token: Token,
    /// The memory store releases by lease.
    lease: Option<Lease>,
    /// The NATS floor releases with the grant's stream sequence.
    nats_seq: Option<u64>,
    /// The ZooKeeper floor releases at the grant's data version.
    zk_version: Option<i32>,
}

/// Opens the store to measure and its floor on the same client.
pub(crate) async fn open(
    backend: Backend,
    url: &str,
    memory: &Arc<MemoryStore>,
) -> Result<(Arc<dyn LeaseStore>, Floor), BoxError> {
    Ok(match backend {
        Backend::Memory => (memory.clone(), Floor::Memory(memory.clone())),
        Backend::Sqlite | Backend::Postgres | Backend::Mysql => {
            let store = Arc::new(SqlStore::connect(url).await?);
            (store.clone(), Floor::Sql(store))
        }
        Backend::Redis => {
            let store = Arc::new(RedisStore::connect_with(url, redis_options()).await?);
            (store.clone(), Floor::Redis(store))
        }
        Backend::DynamoDb => {
            let store = Arc::new(DynamoDbStore::connect(url).await?);
            (store.clone(), Floor::DynamoDb(store))
        }
        Backend::Etcd => {
            let store = Arc::new(EtcdStore::connect_with(url, etcd_options()).await?);
            (store.clone(), Floor::Etcd(store, etcd::Session::default()))
        }
        Backend::Nats => {
            let store = Arc::new(NatsStore::connect_with(url, nats_options()).await?);
            (store.clone(), Floor::Nats(store))
        }
        Backend::ZooKeeper => {
            let store = Arc::new(ZooKeeperStore::connect_with(url, zookeeper_options()).await?);
            (store.clone(), Floor::ZooKeeper(store))
        }
    })
}

impl Floor {
    /// One acquire of `lock` for `ttl`: `None` when it is held.
    pub(crate) async fn acquire(
        &self,
        lock: &LockName,
        ttl: Duration,
    ) -> Result<Option<FloorLease>, BoxError> {
        let token = Token::random();
        let granted = match self {
            Self::Memory(store) => {
                let req = AcquireRequest::new(lock.clone(), 1, "floor", token, ttl);
                return Ok(store
                    .try_acquire(&req)
                    .await?
                    .elected()
                    .map(|lease| FloorLease {
                        lock: lock.clone(),
                        token,
                        lease: Some(lease),
                        nats_seq: None,
                        zk_version: None,
                    }));
            }
            Self::Etcd(store, session) => {
                return Ok(etcd::acquire(store, session, lock, token, ttl).await?.map(
                    |_session| FloorLease {
                        lock: lock.clone(),
                        token,
                        lease: None,
                        nats_seq: None,
                        zk_version: None,
                    },
                ));
            }
            Self::Nats(store) => {
                return Ok(nats::acquire(store, lock, token, ttl)
                    .await?
                    .map(|seq| FloorLease {
                        lock: lock.clone(),
                        token,
                        lease: None,
                        nats_seq: Some(seq),
                        zk_version: None,
                    }));
            }
            Self::ZooKeeper(store) => {
                return Ok(zookeeper::acquire(store, lock, token, ttl)
                    .await?
                    .map(|version| FloorLease {
                        lock: lock.clone(),
                        token,
                        lease: None,
                        nats_seq: None,
                        zk_version: Some(version),
                    }));
            }
            Self::Sql(store) => sql::acquire(store, lock, token, ttl).await?,
            Self::Redis(store) => redis::acquire(store, lock, token, ttl).await?,
            Self::DynamoDb(store) => dynamodb::acquire(store, lock, token, ttl).await?,
        };
        Ok(granted.then(|| FloorLease {
            lock: lock.clone(),
            token,
            lease: None,
            nats_seq: None,
            zk_version: None,
        }))
    }

    /// Releases what [`acquire`](Self::acquire) granted.
    pub(crate) async fn release(&self, held: FloorLease) -> Result<(), BoxError> {
        match self {
            Self::Memory(store) => {
                let lease = held.lease.ok_or("memory floor lease without its lease")?;
                store.release(&lease, Duration::ZERO).await?;
            }
            Self::Sql(store) => sql::release(store, &held.lock, held.token).await?,
            Self::Redis(store) => redis::release(store, &held.lock, held.token).await?,
            Self::DynamoDb(store) => dynamodb::release(store, &held.lock, held.token).await?,
            Self::Etcd(store, _) => {
                etcd::release(store, &held.lock, held.token).await?;
            }
            Self::Nats(store) => {
                let seq = held
                    .nats_seq
                    .ok_or("NATS floor lease without its sequence")?;
                nats::release(store, &held.lock, seq).await?;
            }
            Self::ZooKeeper(store) => {
                let version = held
                    .zk_version
                    .ok_or("ZooKeeper floor lease without its version")?;
                zookeeper::release(store, &held.lock, version).await?;
            }
        }
        Ok(())
    }

    /// One acquire and one release of a lock nobody else uses.
    pub(crate) async fn round_trip(&self, lock: &LockName) -> Result<(), BoxError> {
        let held = self
            .acquire(lock, Duration::from_secs(30))
            .await?
            .ok_or("floor lock busy")?;
        self.release(held).await
    }

    /// Takes the first free lock of `slots` (trying them in order, and again every millisecond
    /// while all are busy — the simplest raw contender), holds it for `section`, releases it.
    pub(crate) async fn section(
        &self,
        slots: &[LockName],
        section: Duration,
    ) -> Result<bool, BoxError> {
        loop {
            for lock in slots {
                if let Some(held) = self.acquire(lock, Duration::from_secs(30)).await? {
                    tokio::time::sleep(section).await;
                    self.release(held).await?;
                    return Ok(true);
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}
