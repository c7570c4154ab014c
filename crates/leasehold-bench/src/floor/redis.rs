//! The Redis floor: the store's own acquire and release scripts, invoked raw on its connection.

use std::time::Duration;

use leasehold::{LockName, store::Token};
use leasehold_redis::RedisStore;

use crate::BoxError;

/// How long an idle lock's keys are kept (the bench stores' retention).
const IDLE_RETENTION_MS: u64 = 60_000;

pub(super) async fn acquire(
    store: &RedisStore,
    lock: &LockName,
    token: Token,
    ttl: Duration,
) -> Result<bool, BoxError> {
    let mut conn = store.connection().await?;
    // Reply: {slot, fence, acquired, expires, '', …} (the script's reply has grown fields
    // before, so only its presence is read), or nil when held; no period is claimed (the two
    // period arguments are empty), so the ledger's refusal {-1, …} cannot come back.
    let granted: Option<Vec<redis::Value>> = store
        .scripts()
        .acquire()
        .key(store.key(lock))
        .arg(token.to_hex())
        .arg("floor")
        .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
        .arg(1)
        .arg(IDLE_RETENTION_MS)
        .arg("")
        .arg("")
        .invoke_async(&mut conn)
        .await?;
    Ok(granted.is_some())
}

pub(super) async fn release(
    store: &RedisStore,
    lock: &LockName,
    token: Token,
) -> Result<(), BoxError> {
    let mut conn = store.connection().await?;
    let released: u8 = store
        .scripts()
        .release()
        .key(store.key(lock))
        .arg(0)
        .arg(token.to_hex())
        .arg(0)
        .arg(store.channel())
        .arg(lock.as_str())
        .invoke_async(&mut conn)
        .await?;
    if released != 1 {
        return Err("floor release found the lock not held".into());
    }
    Ok(())
}
