//! The backends the harness measures, their default URLs, and how a new client of one is opened.

use std::sync::Arc;

use leasehold::{LeaseStore, MemoryStore};
use leasehold_dynamodb::DynamoDbStore;
use leasehold_etcd::{EtcdOptions, EtcdStore};
use leasehold_nats::{NatsOptions, NatsStore};
use leasehold_redis::{RedisOptions, RedisStore};
use leasehold_sql::SqlStore;
use leasehold_zookeeper::{ZooKeeperOptions, ZooKeeperStore};

use crate::BoxError;

/// One store backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Memory,
    Sqlite,
    Postgres,
    Mysql,
    Redis,
    DynamoDb,
    Etcd,
    Nats,
    ZooKeeper,
}

impl Backend {
    /// Every backend, in report order.
    pub(crate) const ALL: [Backend; 9] = [
        Backend::Memory,
        Backend::Sqlite,
        Backend::Postgres,
        Backend::Mysql,
        Backend::Redis,
        Backend::DynamoDb,
        Backend::Etcd,
        Backend::Nats,
        Backend::ZooKeeper,
    ];

    /// The name used on the command line and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
            Self::Mysql => "mysql",
            Self::Redis => "redis",
            Self::DynamoDb => "dynamodb",
            Self::Etcd => "etcd",
            Self::Nats => "nats",
            Self::ZooKeeper => "zookeeper",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == text)
            .ok_or_else(|| {
                format!(
                    "unknown backend {text:?}: expected memory, sqlite, postgres, mysql, redis, dynamodb, etcd, nats, zookeeper or all"
                )
            })
    }

    /// True for stores reached over TCP (the ones the fault proxy can sit in front of).
    pub(crate) fn is_networked(self) -> bool {
        !matches!(self, Self::Memory | Self::Sqlite)
    }

    /// The shortest lease the runs that wait for a real expiry use: 300 ms, or etcd's shortest
    /// (1 s, with the test server's 500 ms election timeout).
    pub(crate) fn shortest_lease(self) -> std::time::Duration {
        match self {
            // NATS per-message TTLs are whole seconds, 1 s at least.
            Self::Etcd | Self::Nats => std::time::Duration::from_secs(1),
            _ => std::time::Duration::from_millis(300),
        }
    }

    /// The URL used when none is given: a temp SQLite file, the test servers' variables (etcd:
    /// `$LEASEHOLD_TEST_ETCD_ENDPOINTS`), or the local Redis.
    pub(crate) fn default_url(self) -> Result<String, String> {
        let env = |var: &str| {
            std::env::var(var)
                .map_err(|_| format!("--url or ${var} is required for {}", self.name()))
        };
        Ok(match self {
            Self::Memory => "memory:".to_owned(),
            Self::Sqlite => {
                let file =
                    std::env::temp_dir().join(format!("leasehold-bench-{}.db", std::process::id()));
                format!("sqlite://{}", file.display())
            }
            Self::Postgres => env("LEASEHOLD_TEST_POSTGRES_URL")?,
            Self::Mysql => env("LEASEHOLD_TEST_MYSQL_URL")?,
            Self::Redis => std::env::var("LEASEHOLD_TEST_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned()),
            // Every client of the bench runs on one machine, so one clock: a 50 ms skew
            // tolerance (the default, 2 s, asks for leases over 4 s) lets the scenarios use
            // the same short leases on DynamoDB as elsewhere.
            Self::DynamoDb => format!(
                "dynamodb://leasehold_bench_leases?endpoint={}&create_table=true&skew=50ms",
                env("LEASEHOLD_TEST_DYNAMODB_ENDPOINT")?
            ),
            Self::Etcd => format!("etcd://{}", env("LEASEHOLD_TEST_ETCD_ENDPOINTS")?),
            Self::Nats => env("LEASEHOLD_TEST_NATS_URL")?,
            // One server on this machine, so one clock: a 50 ms skew tolerance lets the
            // scenarios use the same short leases as elsewhere.
            Self::ZooKeeper => format!("{}?skew=50ms", env("LEASEHOLD_TEST_ZOOKEEPER_URL")?),
        })
    }
}

/// Options for benchmark Redis stores: their own key prefix, cleaned up a minute after use.
pub(crate) fn redis_options() -> RedisOptions {
    RedisOptions::default()
        .with_prefix("leasehold-bench")
        .with_idle_retention(std::time::Duration::from_secs(60))
}

/// Options for benchmark etcd stores: their own key prefix (a URL's path or `prefix` overrides it).
pub(crate) fn etcd_options() -> EtcdOptions {
    EtcdOptions::default().with_prefix("leasehold-bench")
}

/// Options for benchmark NATS stores: their own bucket (a URL's path or `bucket` overrides it).
pub(crate) fn nats_options() -> NatsOptions {
    NatsOptions::default().with_bucket("leasehold-bench")
}

/// Options for benchmark ZooKeeper stores: their own prefix (a URL's `prefix` overrides it).
pub(crate) fn zookeeper_options() -> ZooKeeperOptions {
    ZooKeeperOptions::default().with_prefix("/leasehold-bench")
}

/// Opens a new client of `backend` at `url`, with its own connections. The memory store has no
/// clients: every "client" is `shared`, the one instance.
pub(crate) async fn open_client(
    backend: Backend,
    url: &str,
    shared: &Arc<MemoryStore>,
) -> Result<Arc<dyn LeaseStore>, BoxError> {
    Ok(match backend {
        Backend::Memory => shared.clone(),
        Backend::Sqlite | Backend::Postgres | Backend::Mysql => {
            Arc::new(SqlStore::connect(url).await?)
        }
        Backend::Redis => Arc::new(RedisStore::connect_with(url, redis_options()).await?),
        Backend::DynamoDb => Arc::new(DynamoDbStore::connect(url).await?),
        Backend::Etcd => Arc::new(EtcdStore::connect_with(url, etcd_options()).await?),
        Backend::Nats => Arc::new(NatsStore::connect_with(url, nats_options()).await?),
        Backend::ZooKeeper => {
            Arc::new(ZooKeeperStore::connect_with(url, zookeeper_options()).await?)
        }
    })
}
