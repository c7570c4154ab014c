//! The etcd floor: the store's own transactions issued raw with its etcd-client connection, its
//! keys attached to one session lease granted once, as the store attaches its keys to its
//! session — the put-if-absent transaction to acquire, the compare-and-delete transaction to
//! release. (The store keeps its session alive beside an acquisition about once a second, and
//! reads back a lock whose put found the key present.)

use std::time::Duration;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use leasehold::{LockName, store::Token};
use leasehold_etcd::EtcdStore;
use tokio::sync::OnceCell;

use crate::BoxError;

/// The etcd lease id of the floor's session, which its keys are attached to.
pub(super) type EtcdLeaseId = i64;

/// The TTL of the floor's session: longer than any run, so no keep-alive is measured (a crashed
/// bench leaves its keys to expire with it).
const SESSION_TTL_SECS: i64 = 600;

/// The floor's session lease, granted at its first acquisition.
#[derive(Debug, Default)]
pub(crate) struct Session(OnceCell<EtcdLeaseId>);

fn value(token: Token) -> String {
    format!("floor {}", token.to_hex())
}

pub(super) async fn acquire(
    store: &EtcdStore,
    session: &Session,
    lock: &LockName,
    token: Token,
    _ttl: Duration,
) -> Result<Option<EtcdLeaseId>, BoxError> {
    let mut client = store.client().await?;
    let lease = *session
        .0
        .get_or_try_init(|| async {
            let granted = store
                .client()
                .await?
                .lease_grant(SESSION_TTL_SECS, None)
                .await?;
            Ok::<_, BoxError>(granted.id())
        })
        .await?;
    let key = store.key(lock, 0);
    let txn = Txn::new()
        .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key.as_str(),
            value(token),
            Some(PutOptions::new().with_lease(lease)),
        )]);
    Ok(client.txn(txn).await?.succeeded().then_some(lease))
}

pub(super) async fn release(
    store: &EtcdStore,
    lock: &LockName,
    token: Token,
) -> Result<(), BoxError> {
    let mut client = store.client().await?;
    let key = store.key(lock, 0);
    let txn = Txn::new()
        .when([Compare::value(key.as_str(), CompareOp::Equal, value(token))])
        .and_then([TxnOp::delete(key.as_str(), None)]);
    if !client.txn(txn).await?.succeeded() {
        return Err("floor release found the lock not held".into());
    }
    Ok(())
}
