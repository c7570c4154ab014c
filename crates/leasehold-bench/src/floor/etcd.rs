//! The etcd floor: the store's own transactions issued raw with its etcd-client connection — a
//! lease grant and the put-if-absent transaction to acquire; the compare-and-delete transaction
//! and the lease revocation to release. (The store adds a linearizable read before each, to find
//! the lowest free slot and its own earlier grants.)

use std::time::Duration;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use leasehold::{LockName, store::Token};
use leasehold_etcd::EtcdStore;

use crate::BoxError;

/// The etcd lease id of a granted floor lock, for its release.
pub(super) type EtcdLeaseId = i64;

fn value(token: Token) -> String {
    format!("floor {}", token.to_hex())
}

pub(super) async fn acquire(
    store: &EtcdStore,
    lock: &LockName,
    token: Token,
    ttl: Duration,
) -> Result<Option<EtcdLeaseId>, BoxError> {
    let mut client = store.client().await?;
    let secs = i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX);
    let lease = client.lease_grant(secs, None).await?.id();
    let key = store.key(lock, 0);
    let txn = Txn::new()
        .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key.as_str(),
            value(token),
            Some(PutOptions::new().with_lease(lease)),
        )]);
    if client.txn(txn).await?.succeeded() {
        Ok(Some(lease))
    } else {
        client.lease_revoke(lease).await?;
        Ok(None)
    }
}

pub(super) async fn release(
    store: &EtcdStore,
    lock: &LockName,
    token: Token,
    lease: EtcdLeaseId,
) -> Result<(), BoxError> {
    let mut client = store.client().await?;
    let key = store.key(lock, 0);
    let txn = Txn::new()
        .when([Compare::value(key.as_str(), CompareOp::Equal, value(token))])
        .and_then([TxnOp::delete(key.as_str(), None)]);
    let deleted = client.txn(txn).await?.succeeded();
    client.lease_revoke(lease).await?;
    if !deleted {
        return Err("floor release found the lock not held".into());
    }
    Ok(())
}
