//! Fences checked in etcd, against a real etcd: transactions applied only while the lease is
//! held (`store.fenced(&ctx).txn(..)`), and puts applied only while their fence is the highest
//! (`store.fenced(&ctx).put(..)`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers
#![cfg(feature = "fence")]

mod common;

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use leasehold::fence::{FenceClaim, FenceRefusal};
use leasehold::{Elector, LeaseStore};
use leasehold_etcd::EtcdStore;
use leasehold_etcd::fence::{FencedPutError, FencedTxnError};
use leasehold_testkit::unique_name;

fn store(endpoints: &str) -> EtcdStore {
    EtcdStore::connect_lazy(&common::url(endpoints), common::options()).unwrap()
}

/// A key of the application, unique to this run.
fn data_key(what: &str) -> String {
    format!("lhtest-data/{}", unique_name(what))
}

async fn value(store: &EtcdStore, key: &str) -> Option<String> {
    let got = store.client().await.unwrap().get(key, None).await.unwrap();
    got.kvs()
        .first()
        .map(|kv| kv.value_str().unwrap().to_owned())
}

/// A claim with fence `fence` given by hand (a fenced put compares the fence only).
fn fence(fence: u64) -> FenceClaim {
    FenceClaim::new(leasehold::LockName::new("lhtest-put").unwrap(), 0, fence)
}

fn put(key: &str, value: &str) -> Txn {
    Txn::new().and_then([TxnOp::put(key, value, None)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_txn_applies_while_held_and_is_refused_after_a_forced_release() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = Arc::new(store(&endpoints));
    let lock = unique_name("fenced-txn");
    let key = data_key("txn");
    let elector = Elector::new(Arc::clone(&store) as Arc<dyn LeaseStore>);
    let paused = elector
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");

    let applied = store.fenced(&paused).txn(put(&key, "a")).await.unwrap();
    assert!(applied.txn.succeeded());
    assert!(applied.revision > i64::try_from(paused.fence()).unwrap());
    assert_eq!(value(&store, &key).await.as_deref(), Some("a"));

    store.force_release(&lock, 1).await.unwrap();
    let err = store
        .fenced(&paused)
        .txn(put(&key, "lost"))
        .await
        .unwrap_err();
    let lost = err.lease_lost().expect("lease lost");
    assert_eq!((lost.fence, lost.holder_fence), (paused.fence(), None));
    assert!(err.to_string().contains("nothing was applied"), "{err}");

    let successor = elector
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    store.fenced(&successor).txn(put(&key, "b")).await.unwrap();
    let err = store
        .fenced(&paused)
        .txn(put(&key, "late"))
        .await
        .unwrap_err();
    assert_eq!(
        err.lease_lost().map(|l| l.holder_fence),
        Some(Some(successor.fence())),
        "{err}"
    );
    assert_eq!(value(&store, &key).await.as_deref(), Some("b"));

    // After a release, the holder's writes are refused too.
    let claim = FenceClaim::of(&successor);
    successor.release().await.unwrap();
    let err = store
        .fenced_by_claim(&claim)
        .txn(put(&key, "after release"))
        .await
        .unwrap_err();
    assert!(matches!(err, FencedTxnError::LeaseLost(_)), "{err}");
    assert_eq!(value(&store, &key).await.as_deref(), Some("b"));
}

/// The application's transaction keeps its own comparisons and both branches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applications_own_comparisons_decide_its_branch() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = Arc::new(store(&endpoints));
    let lock = unique_name("fenced-cmp");
    let key = data_key("cmp");
    let elector = Elector::new(Arc::clone(&store) as Arc<dyn LeaseStore>);
    let holder = elector
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let claim = FenceClaim::of(&holder);
    let create_once = || {
        Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.as_str(), "first", None)])
            .or_else([TxnOp::get(key.as_str(), None)])
    };
    let first = store
        .fenced_by_claim(&claim)
        .txn(create_once())
        .await
        .unwrap();
    assert!(first.txn.succeeded());
    let second = store
        .fenced_by_claim(&claim)
        .txn(create_once())
        .await
        .unwrap();
    assert!(
        !second.txn.succeeded(),
        "the key exists: the failure branch ran"
    );
    let read = second.txn.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(g) => Some(g.kvs()[0].value_str().unwrap().to_owned()),
        _ => None,
    });
    assert_eq!(read.as_deref(), Some("first"));
    holder.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fence_no_revision_can_have_is_refused_without_a_request() {
    // Nothing answers here: the refusal must come before any request.
    let store = EtcdStore::connect_lazy("etcd://127.0.0.1:1", common::options()).unwrap();
    let claim = FenceClaim::new(unique_name("huge"), 0, u64::MAX);
    let err = store
        .fenced_by_claim(&claim)
        .txn(put("k", "v"))
        .await
        .unwrap_err();
    assert_eq!(err.lease_lost().map(|l| l.fence), Some(u64::MAX), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_put_refuses_a_lower_fence_and_accepts_an_equal_one() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = store(&endpoints);
    let key = data_key("put");
    assert_eq!(
        store
            .fenced_by_claim(&fence(10))
            .put(&key, "ten")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .fenced_by_claim(&fence(10))
            .put(&key, "ten again")
            .await
            .unwrap(),
        Some(10),
        "an equal fence is the same holder"
    );
    let err = store
        .fenced_by_claim(&fence(9))
        .put(&key, "nine")
        .await
        .unwrap_err();
    let stale = err.stale().expect("stale");
    assert_eq!(
        (stale.fence, stale.highest, stale.resource.as_str()),
        (9, 10, key.as_str())
    );
    assert_eq!(value(&store, &key).await.as_deref(), Some("ten again"));
    assert_eq!(
        store
            .fenced_by_claim(&fence(11))
            .put(&key, "eleven")
            .await
            .unwrap(),
        Some(10)
    );
    assert_eq!(
        value(&store, &store.fence_key(&key)).await.as_deref(),
        Some("00000000000000000011")
    );

    // Exact over the whole u64 range.
    let big = (1u64 << 53) + 1;
    store
        .fenced_by_claim(&fence(big))
        .put(&key, "big")
        .await
        .unwrap();
    assert!(
        store
            .fenced_by_claim(&fence(big - 1))
            .put(&key, "x")
            .await
            .unwrap_err()
            .stale()
            .is_some()
    );
    store
        .fenced_by_claim(&fence(u64::MAX))
        .put(&key, "max")
        .await
        .unwrap();
    assert!(
        store
            .fenced_by_claim(&fence(u64::MAX - 1))
            .put(&key, "x")
            .await
            .unwrap_err()
            .stale()
            .is_some()
    );
    assert_eq!(value(&store, &key).await.as_deref(), Some("max"));

    for bad in ["", "a\nb"] {
        let err = store
            .fenced_by_claim(&fence(1))
            .put(bad, "v")
            .await
            .unwrap_err();
        assert!(matches!(err, FencedPutError::Key(_)), "{bad:?}: {err}");
    }
}

/// Fence keys never look like a lock's keys: a lock's state and its forced release ignore them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_keys_never_meet_a_locks_keys() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = store(&endpoints);
    let lock = unique_name("beside");
    // The application's key has the shape of the lock's slot key, relative to the fence area.
    let key = format!("{lock}/0");
    store
        .fenced_by_claim(&fence(3))
        .put(&key, "v")
        .await
        .unwrap();
    assert!(store.fence_key(&key).contains("/.fences/"));
    let state = store.state(&lock, 1).await.unwrap();
    assert!(state.holders.is_empty(), "{state:?}");
    let lease = store
        .try_acquire(&leasehold::store::AcquireRequest::new(
            lock.clone(),
            1,
            "n",
            leasehold::store::Token::random(),
            std::time::Duration::from_secs(5),
        ))
        .await
        .unwrap()
        .elected()
        .expect("slot 0 is free");
    assert_eq!(lease.slot, 0);
    store
        .release(&lease, std::time::Duration::ZERO)
        .await
        .unwrap();
}
