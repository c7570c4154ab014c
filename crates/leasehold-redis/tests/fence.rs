//! Fences checked in Redis, against a real server: fenced writes to the application's own keys
//! (`FencedKeys`) and the store-backed register (`RedisFences`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers
#![cfg(feature = "fence")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::fence::{Admission, FenceRefusal, FenceRegister, ResourceName};
use leasehold::{Elector, LeaseStore};
use leasehold_redis::fence::{FencedWriteError, key_slot};
use leasehold_redis::{FencedKeys, RedisFences, RedisStore};
use leasehold_testkit::unique_name;
use redis::{AsyncCommands, Value};

fn store(url: &str) -> RedisStore {
    RedisStore::connect_lazy(url, common::options()).unwrap()
}

/// A key unique to this run, with or without a hash tag.
fn key(what: &str, tagged: bool) -> String {
    let name = unique_name(what);
    if tagged {
        format!("lhtest:{{{name}}}:value")
    } else {
        format!("lhtest:{name}")
    }
}

fn stale(err: &FencedWriteError) -> (u64, u64) {
    let stale = err.stale().unwrap_or_else(|| panic!("not stale: {err}"));
    (stale.fence, stale.highest)
}

#[tokio::test]
async fn a_fenced_set_refuses_a_lower_fence_and_accepts_an_equal_one() {
    let Some(url) = common::url() else { return };
    let store = store(&url);
    let keys = store.fenced_keys();
    let mut conn = store.connection().await.unwrap();
    for tagged in [false, true] {
        let k = key("set", tagged);
        let first = keys.fenced_by_fence(10).set(&k, "ten", None).await.unwrap();
        assert_eq!((first.previous, first.reply), (None, Value::Okay));
        let again = keys
            .fenced_by_fence(10)
            .set(&k, "ten again", None)
            .await
            .unwrap();
        assert_eq!(
            again.previous,
            Some(10),
            "an equal fence is the same holder"
        );
        let err = keys
            .fenced_by_fence(9)
            .set(&k, "nine", None)
            .await
            .unwrap_err();
        assert_eq!(stale(&err), (9, 10));
        assert_eq!(err.stale().unwrap().resource.as_str(), k);
        assert!(err.to_string().contains("stale fence 9"), "{err}");
        let value: String = conn.get(&k).await.unwrap();
        assert_eq!(value, "ten again", "the stale write changed nothing");
        let higher = keys
            .fenced_by_fence(11)
            .set(&k, "eleven", None)
            .await
            .unwrap();
        assert_eq!(higher.previous, Some(10));
        assert_eq!(keys.highest(&k).await.unwrap(), Some(11));

        // The fence lives in the companion key, in the key's cluster slot.
        let fence_key = keys.fence_key(&k).unwrap();
        assert_eq!(key_slot(fence_key.as_bytes()), key_slot(k.as_bytes()));
        let recorded: String = conn.get(&fence_key).await.unwrap();
        assert_eq!(recorded, "11");
        let ttl: i64 = conn.pttl(&fence_key).await.unwrap();
        assert_eq!(ttl, -1, "fence keys do not expire");
    }
}

#[tokio::test]
async fn an_expiry_is_set_and_a_delete_keeps_the_fence() {
    let Some(url) = common::url() else { return };
    let store = store(&url);
    let keys = store.fenced_keys();
    let mut conn = store.connection().await.unwrap();
    let k = key("expiry", false);
    let writer = keys.fenced_by_fence(5);
    writer
        .set(&k, 42u64, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    let ttl: i64 = conn.pttl(&k).await.unwrap();
    assert!((1..=60_000).contains(&ttl), "PTTL {ttl}");
    let err = writer
        .set(&k, 1u64, Some(Duration::ZERO))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FencedWriteError::Command { .. }) && err.to_string().contains("1 ms"),
        "{err}"
    );

    let deleted = writer.del(&k).await.unwrap();
    assert_eq!(deleted.reply, Value::Int(1));
    let exists: bool = conn.exists(&k).await.unwrap();
    assert!(!exists);
    let err = keys
        .fenced_by_fence(4)
        .set(&k, 0u64, None)
        .await
        .unwrap_err();
    assert_eq!(
        stale(&err),
        (4, 5),
        "a stale holder cannot re-create a deleted key"
    );
    let exists: bool = conn.exists(&k).await.unwrap();
    assert!(!exists);
}

#[tokio::test]
async fn any_single_write_command_can_be_fenced() {
    let Some(url) = common::url() else { return };
    let store = store(&url);
    let keys = store.fenced_keys();
    let mut conn = store.connection().await.unwrap();
    let k = key("hash", true);
    let hset = keys
        .fenced_by_fence(3)
        .command(&k, "hset", ("status", "sent", "total", "7"))
        .await
        .unwrap();
    assert_eq!(hset.reply, Value::Int(2));
    let incr = keys
        .fenced_by_fence(3)
        .command(&k, "HINCRBY", ("total", 5))
        .await
        .unwrap();
    assert_eq!(incr.reply, Value::Int(12));
    let err = keys
        .fenced_by_fence(2)
        .command(&k, "HSET", ("status", "lost"))
        .await
        .unwrap_err();
    assert_eq!(stale(&err), (2, 3));
    let status: String = conn.hget(&k, "status").await.unwrap();
    assert_eq!(status, "sent");

    // Commands that cannot be a fenced write are refused before anything runs.
    let other = key("other", true);
    let cases: [(&str, Vec<&str>, &str); 6] = [
        ("GET", vec![], "not a write command"),
        ("DEL", vec![other.as_str()], "is a key too"),
        ("RENAME", vec![other.as_str()], "is a key too"),
        ("HSET", vec!["status"], "at least 2"),
        ("NOSUCHCOMMAND", vec![], "does not know"),
        ("SET x", vec![], "command name"),
    ];
    for (command, args, reason) in cases {
        let err = keys
            .fenced_by_fence(9)
            .command(&k, command, args)
            .await
            .unwrap_err();
        assert!(
            matches!(err, FencedWriteError::Command { .. }) && err.to_string().contains(reason),
            "{command}: {err}"
        );
    }
    assert_eq!(keys.highest(&k).await.unwrap(), Some(3), "nothing ran");
    let too_many: Vec<String> = (0..=leasehold_redis::fence::MAX_COMMAND_ARGS)
        .map(|i| i.to_string())
        .collect();
    let err = keys
        .fenced_by_fence(9)
        .command(&k, "RPUSH", too_many)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at most 4096"), "{err}");

    // A command Redis refuses records no fence.
    let err = keys
        .fenced_by_fence(8)
        .command(&k, "INCRBY", 1)
        .await
        .unwrap_err();
    match err {
        FencedWriteError::Store(e) => assert!(!e.is_transient(), "{e}"),
        other => panic!("expected WRONGTYPE as a store error, got {other}"),
    }
    assert_eq!(keys.highest(&k).await.unwrap(), Some(3));
}

#[tokio::test]
async fn bad_keys_are_typed_errors_and_nothing_is_sent() {
    // No server needed: every case is refused before a connection is made.
    let store = RedisStore::connect_lazy("redis://127.0.0.1:1", common::options()).unwrap();
    let keys = store.fenced_keys();
    let writer = keys.fenced_by_fence(1);
    for (bad, expected) in [
        ("", "must not be empty"),
        ("a\nb", "control character"),
        ("a}b", "hash tag"),
        ("{}x", "hash tag"),
    ] {
        let err = writer.set(bad, "v", None).await.unwrap_err();
        assert!(err.to_string().contains(expected), "{bad:?}: {err}");
        assert!(!err.is_stale());
    }
    let long = "k".repeat(256);
    assert!(matches!(
        writer.del(&long).await.unwrap_err(),
        FencedWriteError::Key(_)
    ));
}

#[tokio::test]
async fn a_fence_key_holding_something_else_is_a_permanent_error() {
    let Some(url) = common::url() else { return };
    let store = store(&url);
    let keys = store.fenced_keys();
    let mut conn = store.connection().await.unwrap();
    let k = key("foreign", false);
    let _: () = conn.set(keys.fence_key(&k).unwrap(), "x7").await.unwrap();
    let err = keys
        .fenced_by_fence(1)
        .set(&k, "v", None)
        .await
        .unwrap_err();
    match err {
        FencedWriteError::Store(e) => assert!(!e.is_transient(), "{e}"),
        other => panic!("{other}"),
    }
    assert!(keys.highest(&k).await.is_err());
    let exists: bool = conn.exists(&k).await.unwrap();
    assert!(!exists, "nothing was written");
}

/// The writer's fence comes from its leader context; after its lease is forcibly handed on, its
/// writes are refused once the successor wrote.
#[tokio::test]
async fn a_holder_whose_lease_was_handed_on_is_refused() {
    let Some(url) = common::url() else { return };
    let store: Arc<dyn LeaseStore> = Arc::new(store(&url));
    let redis_store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let keys: FencedKeys = redis_store.fenced_keys();
    let lock = unique_name("holder");
    let k = key("holder", false);
    let elector = Elector::new(Arc::clone(&store));
    let paused = elector
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    keys.fenced(&paused).set(&k, "first", None).await.unwrap();
    store.force_release(&lock, 1).await.unwrap();
    let successor = elector
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    assert!(successor.fence() > paused.fence());
    keys.fenced(&successor)
        .set(&k, "second", None)
        .await
        .unwrap();
    let err = keys
        .fenced(&paused)
        .set(&k, "late", None)
        .await
        .unwrap_err();
    assert_eq!(stale(&err), (paused.fence(), successor.fence()));
    successor.release().await.unwrap();
}

#[tokio::test]
async fn the_register_admits_refuses_and_accepts_an_equal_fence() {
    let Some(url) = common::url() else { return };
    let store = store(&url);
    let fences: RedisFences = store.fences();
    let r = ResourceName::new(format!("orders/{}", unique_name("reg"))).unwrap();
    assert_eq!(fences.highest(&r).await.unwrap(), None);
    assert_eq!(
        fences.admit(&r, 7).await.unwrap(),
        Admission::Admitted { previous: None }
    );
    assert_eq!(
        fences.admit(&r, 7).await.unwrap(),
        Admission::Admitted { previous: Some(7) },
        "equal fences are the same holder again"
    );
    let Admission::Stale(refused) = fences.admit(&r, 6).await.unwrap() else {
        panic!("6 < 7 must be stale")
    };
    assert_eq!(
        (refused.fence, refused.highest, refused.resource),
        (6, 7, r.clone())
    );
    assert_eq!(fences.highest(&r).await.unwrap(), Some(7));
    assert_eq!(
        fences.admit(&r, 8).await.unwrap(),
        Admission::Admitted { previous: Some(7) }
    );
    // Other resources are independent.
    let other = ResourceName::new(format!("orders/{}", unique_name("reg"))).unwrap();
    assert!(fences.admit(&other, 1).await.unwrap().is_admitted());
    assert!(
        fences.describe().contains(":fences:*"),
        "{}",
        fences.describe()
    );
}

/// Fences compare exactly beyond 2^53, where Lua's numbers (doubles) would round.
#[tokio::test]
async fn fences_compare_exactly_over_the_whole_u64_range() {
    let Some(url) = common::url() else { return };
    let store = store(&url);
    let fences = store.fences();
    let r = ResourceName::new(unique_name("wide").as_str()).unwrap();
    let big = (1u64 << 53) + 1;
    assert!(fences.admit(&r, big).await.unwrap().is_admitted());
    assert!(!fences.admit(&r, big - 1).await.unwrap().is_admitted());
    assert!(fences.admit(&r, u64::MAX).await.unwrap().is_admitted());
    assert!(!fences.admit(&r, u64::MAX - 1).await.unwrap().is_admitted());
    assert_eq!(fences.highest(&r).await.unwrap(), Some(u64::MAX));
    let keys = store.fenced_keys();
    let k = key("wide", false);
    keys.fenced_by_fence(big).set(&k, "a", None).await.unwrap();
    let err = keys
        .fenced_by_fence(big - 1)
        .set(&k, "b", None)
        .await
        .unwrap_err();
    assert_eq!(stale(&err), (big - 1, big));
    let err = keys
        .fenced_by_fence(9)
        .set(&k, "c", None)
        .await
        .unwrap_err();
    assert_eq!(stale(&err), (9, big), "a shorter number is a lower fence");
}
