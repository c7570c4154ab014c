//! The floor: the same acquire and release a store performs, issued raw with the same client.

use std::sync::Arc;
use std::time::Duration;

use leasehold::{AcquireRequest, LeaseStore, LockName, MemoryStore, Token};
use leasehold_dynamodb::DynamoDbStore;
use leasehold_sql::{SqlPool, SqlStore};

type BoxError = Box<dyn std::error::Error>;

/// What the floor runs on.
pub(crate) enum Floor {
    /// The memory store's own acquire and release, without the elector around them.
    Memory(Arc<MemoryStore>),
    /// The store's SQL statements, bound and executed directly on its pool.
    Sql(Arc<SqlStore>),
    /// The store's two conditional `UpdateItem` requests, sent with its client.
    DynamoDb(Arc<DynamoDbStore>),
}

pub(crate) async fn open(
    backend: &str,
    url: &str,
) -> Result<(Arc<dyn LeaseStore>, Floor), BoxError> {
    Ok(match backend {
        "memory" => {
            let store = Arc::new(MemoryStore::new());
            (store.clone(), Floor::Memory(store))
        }
        "sqlite" | "postgres" | "mysql" => {
            let store = Arc::new(SqlStore::connect(url).await?);
            (store.clone(), Floor::Sql(store))
        }
        "dynamodb" => {
            let store = Arc::new(DynamoDbStore::connect(url).await?);
            (store.clone(), Floor::DynamoDb(store))
        }
        other => return Err(format!("unknown backend {other:?}").into()),
    })
}

impl Floor {
    /// One acquire and one release.
    pub(crate) async fn round_trip(&self, lock: &LockName) -> Result<(), BoxError> {
        match self {
            Self::Memory(store) => {
                let req = AcquireRequest {
                    lock: lock.clone(),
                    slots: 1,
                    owner: "floor".into(),
                    token: Token::random(),
                    ttl: Duration::from_secs(30),
                };
                let lease = store.try_acquire(&req).await?.ok_or("floor lock busy")?;
                store.release(&lease, Duration::ZERO).await?;
            }
            Self::Sql(store) => sql_round_trip(store, lock).await?,
            Self::DynamoDb(store) => crate::dynamodb::round_trip(store, lock).await?,
        }
        Ok(())
    }
}

async fn sql_round_trip(store: &SqlStore, lock: &LockName) -> Result<(), BoxError> {
    let sql = store.statements();
    let token = Token::random().to_hex();
    let lock = lock.as_str();
    // The acquire statement with the parameters the store binds: (lock, slot, owner, token, ttl).
    macro_rules! acquire {
        () => {
            sqlx::query(&sql.acquire)
                .bind(lock)
                .bind(0i32)
                .bind("floor")
                .bind(&token)
                .bind(30_000i64)
        };
    }
    // The release statement: (lock, slot, token), plus the channel on PostgreSQL.
    macro_rules! release {
        () => {
            sqlx::query(&sql.release).bind(lock).bind(0i32).bind(&token)
        };
    }
    match store.pool() {
        SqlPool::Postgres(p) => {
            acquire!()
                .fetch_optional(p)
                .await?
                .ok_or("floor lock busy")?;
            release!().bind(store.notify_channel()).fetch_all(p).await?;
        }
        SqlPool::Sqlite(p) => {
            acquire!()
                .fetch_optional(p)
                .await?
                .ok_or("floor lock busy")?;
            release!().execute(p).await?;
        }
        SqlPool::MySql(p) => {
            acquire!().execute(p).await?;
            sqlx::query(&sql.read_own)
                .bind(lock)
                .bind(0i32)
                .bind(&token)
                .fetch_optional(p)
                .await?
                .ok_or("floor lock busy")?;
            release!().execute(p).await?;
        }
    }
    Ok(())
}
