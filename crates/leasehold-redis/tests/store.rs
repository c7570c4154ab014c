//! Redis-specific behaviour beyond the shared conformance suite: key layout, fences after the
//! idle hash is gone, error classification against a real server, URLs and secrets, and release
//! notifications.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{
    ElectionOptions, Elector, LeaseStore, RetryPolicy,
    store::{OpenError, Release, StoreRegistry, Token},
};
use leasehold_redis::{RedisOpener, RedisStore};
use leasehold_testkit::unique_name;
use redis::AsyncCommands;
use tokio::time::{Instant, sleep};

fn request(lock: &leasehold::LockName, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), 1, "test", Token::random(), ttl)
}

#[tokio::test]
async fn a_lock_is_one_hash_tagged_key_with_a_cleanup_ttl() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("layout");
    let lease = store
        .try_acquire(&request(&lock, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let key = store.key(&lock);
    assert!(key.ends_with(&format!(":{{{lock}}}")), "{key}");
    let mut conn = store.connection().await.unwrap();
    let fence: u64 = conn.hget(&key, "f0").await.unwrap();
    assert_eq!(fence, lease.fence);
    let ttl: i64 = conn.pttl(&key).await.unwrap();
    // lease (5 s) + idle retention (60 s in tests)
    assert!((60_000..=65_000).contains(&ttl), "cleanup TTL {ttl} ms");
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let token: Option<String> = conn.hget(&key, "t0").await.unwrap();
    assert_eq!(token, None, "release clears the holder");
    let kept: u64 = conn.hget(&key, "f0").await.unwrap();
    assert_eq!(kept, lease.fence, "release keeps the fence");
}

/// When the idle hash is gone (expired, evicted, lost in a restart), the next fence is still
/// higher: fences never fall below the server clock in microseconds.
#[tokio::test]
async fn fences_keep_rising_after_the_idle_hash_is_deleted() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("idle");
    let mut last = 0;
    for _ in 0..3 {
        let lease = store
            .try_acquire(&request(&lock, Duration::from_secs(5)))
            .await
            .unwrap()
            .elected()
            .unwrap();
        assert!(lease.fence > last, "{} after {last}", lease.fence);
        last = lease.fence;
        store.release(&lease, Duration::ZERO).await.unwrap();
        let mut conn = store.connection().await.unwrap();
        let _: () = conn.del(store.key(&lock)).await.unwrap();
    }
}

#[tokio::test]
async fn a_foreign_value_under_the_lock_key_is_a_permanent_error() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("wrongtype");
    let mut conn = store.connection().await.unwrap();
    let _: () = conn
        .set_ex(store.key(&lock), "not a hash", 60)
        .await
        .unwrap();
    let err = store
        .try_acquire(&request(&lock, Duration::from_secs(1)))
        .await
        .expect_err("WRONGTYPE");
    assert!(!err.is_transient(), "{err}");
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
}

#[tokio::test]
async fn urls_open_through_the_registry_and_never_show_the_password() {
    let Some(url) = common::url() else { return };
    let registry = StoreRegistry::new().with(RedisOpener::new());
    let store = registry
        .open(&format!("{url}?prefix=lhtest-url"))
        .await
        .unwrap();
    assert!(
        store.describe().starts_with("redis"),
        "{}",
        store.describe()
    );

    // Credentials the server rejects (a user that does not exist): a permanent error that does
    // not print the password.
    let secret = "s3cr3t-value";
    let target = common::target(&url).await;
    let bad = format!("redis://lh-no-such-user:{secret}@{target}");
    let err = registry.open(&bad).await.err().expect("wrong credentials");
    let text = format!("{err} {err:?}");
    println!("wrong credentials: {err}");
    assert!(!text.contains(secret), "{text}");
    match err {
        OpenError::Connect { source, .. } => assert!(!source.is_transient(), "{source}"),
        other => panic!("expected a connect error, got {other}"),
    }

    // Nothing listening: transient.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = registry
        .open(&format!("redis://:{secret}@{closed}"))
        .await
        .err()
        .expect("nothing listens");
    let text = format!("{err} {err:?}");
    println!("nothing listening: {err}");
    assert!(!text.contains(secret), "{text}");
    match err {
        OpenError::Connect { source, .. } => assert!(source.is_transient(), "{source}"),
        other => panic!("expected a connect error, got {other}"),
    }

    let err = registry
        .open("redis://127.0.0.1?notifications=sometimes")
        .await
        .err()
        .expect("bad option");
    assert!(matches!(err, OpenError::Invalid { .. }), "{err}");
}

fn waiter(store: Arc<dyn LeaseStore>) -> Elector {
    let options = ElectionOptions::builder()
        .node_id("waiter")
        .wait(Duration::from_secs(5))
        .lease(Duration::from_secs(10))
        // Polling alone would take 1 s: only a notification explains a fast hand-off.
        .retry(RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(1), 0.0).unwrap())
        .build()
        .unwrap();
    Elector::with_options(store, options)
}

/// Time from a release (or forced release) on one store until a waiter on another store holds
/// the lock.
async fn handoff(holder: Arc<RedisStore>, waiter_store: Arc<RedisStore>, force: bool) -> Duration {
    let lock = unique_name("notify");
    let lease = holder
        .try_acquire(&request(&lock, Duration::from_secs(30)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let elector = waiter(waiter_store);
    let name = lock.clone();
    let waiting = tokio::spawn(async move {
        let guard = elector.try_acquire(&name).await.unwrap().elected();
        (Instant::now(), guard)
    });
    sleep(Duration::from_millis(150)).await;
    let released = Instant::now();
    if force {
        assert_eq!(holder.force_release(&lock, 1).await.unwrap().len(), 1);
    } else {
        holder.release(&lease, Duration::ZERO).await.unwrap();
    }
    let (at, guard) = waiting.await.unwrap();
    guard
        .expect("the waiter takes over")
        .release()
        .await
        .unwrap();
    at - released
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_and_forced_release_wake_waiters_on_other_stores_within_milliseconds() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let holder = Arc::new(RedisStore::connect_lazy(&url, options.clone()).unwrap());
    let waiting = Arc::new(RedisStore::connect_lazy(&url, options.clone()).unwrap());
    // The first wait starts the subscriber; measure the ones after.
    handoff(holder.clone(), waiting.clone(), false).await;
    let mut times = Vec::new();
    for _ in 0..5 {
        times.push(handoff(holder.clone(), waiting.clone(), false).await);
    }
    times.sort();
    println!("hand-off after release: {times:?}");
    assert!(
        times[2] < Duration::from_millis(50),
        "median {:?}",
        times[2]
    );
    let forced = handoff(holder.clone(), waiting.clone(), true).await;
    println!("hand-off after forced release: {forced:?}");
    assert!(forced < Duration::from_millis(200), "{forced:?}");

    // With notifications off the waiter polls, here once a second.
    let polling =
        Arc::new(RedisStore::connect_lazy(&url, options.with_notifications(false)).unwrap());
    let slow = handoff(holder, polling, false).await;
    println!("hand-off by polling: {slow:?}");
    assert!(slow >= Duration::from_millis(500), "{slow:?}");
}

/// `rediss://` against a plain-text port fails cleanly and in bounded time: no panic over the
/// choice of TLS crypto provider, whatever TLS features the build enabled. (Redis waits for a
/// line end that the TLS hello never sends, so this surfaces as a timeout.)
#[tokio::test]
async fn tls_against_a_plain_text_port_fails_cleanly() {
    let Some(url) = common::url() else { return };
    let target = common::target(&url).await;
    let started = Instant::now();
    let err = RedisStore::connect(&format!("rediss://{target}?connect_timeout=500ms"))
        .await
        .expect_err("no TLS on this port");
    println!("rediss to a plain port: {err}");
    assert!(matches!(err, OpenError::Connect { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A release publishes only when a contender failed since the last release: an uncontended
/// lock costs no notification, a contended one always wakes its waiters.
#[tokio::test]
async fn release_publishes_only_after_a_failed_acquire() {
    use futures::StreamExt;
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("publish");
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe(store.channel()).await.unwrap();
    let mut conn = store.connection().await.unwrap();
    let key = store.key(&lock);

    // Uncontended: acquire and release, no `w` field, no message.
    let lease = store
        .try_acquire(&request(&lock, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );

    // Contended: a failed acquire marks the lock, the release publishes and clears the mark.
    let lease = store
        .try_acquire(&request(&lock, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let failed = store
        .try_acquire(&request(&lock, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected();
    assert!(failed.is_none());
    let mark: Option<String> = conn.hget(&key, "w").await.unwrap();
    assert_eq!(
        mark.as_deref(),
        Some("1"),
        "a failed acquire leaves a waiter mark"
    );
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let mark: Option<String> = conn.hget(&key, "w").await.unwrap();
    assert_eq!(mark, None, "the release clears the mark");

    // A sentinel published last: every notification before it was sent by the steps above.
    let _: i64 = conn.publish(store.channel(), "sentinel").await.unwrap();
    let mut stream = pubsub.on_message();
    let mut seen = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("the sentinel arrives")
            .expect("the subscription stays open");
        let payload: String = msg.get_payload().unwrap();
        if payload == "sentinel" {
            break;
        }
        seen.push(payload);
    }
    assert_eq!(
        seen,
        vec![lock.to_string()],
        "one notification, for the contended release"
    );
}

/// A one-slot acquire on a hash that also holds a group's slot 1 must not cut the cleanup TTL
/// below that slot's lease: the lean one-slot path recognises such a hash (`f1`) and leaves it to
/// the full script, which sets the TTL from every live slot.
#[tokio::test]
async fn a_one_slot_acquire_keeps_a_longer_group_lease_in_the_cleanup_ttl() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("mixed-slots");
    let group = |ttl| AcquireRequest::new(lock.clone(), 2, "group", Token::random(), ttl);
    let first = store
        .try_acquire(&group(Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let second = store
        .try_acquire(&group(Duration::from_secs(600)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!((first.slot, second.slot), (0, 1));
    store.release(&first, Duration::ZERO).await.unwrap();

    let single = store
        .try_acquire(&request(&lock, Duration::from_secs(1)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(single.slot, 0);
    assert!(single.fence > first.fence);
    let mut conn = store.connection().await.unwrap();
    let ttl: i64 = conn.pttl(store.key(&lock)).await.unwrap();
    // slot 1's lease (600 s) + idle retention (60 s in tests), not the one-slot lease's 1 s + 60 s
    assert!(ttl > 600_000, "cleanup TTL {ttl} ms");
}

/// The lean one-slot path answers a retried request (same token) with the same lease, and a
/// contender's failure marks the lock for the release's notification.
#[tokio::test]
async fn a_one_slot_retry_gets_the_same_lease_back() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("one-slot-retry");
    let req = request(&lock, Duration::from_secs(30));
    let lease = store.try_acquire(&req).await.unwrap().elected().unwrap();
    let again = store.try_acquire(&req).await.unwrap().elected().unwrap();
    assert_eq!(
        (again.slot, again.fence, again.acquired_at, again.expires_at),
        (lease.slot, lease.fence, lease.acquired_at, lease.expires_at)
    );
    let mut conn = store.connection().await.unwrap();
    let key = store.key(&lock);
    let owner: String = conn.hget(&key, "o0").await.unwrap();
    assert_eq!(owner, "test");
    let ttl: i64 = conn.pttl(&key).await.unwrap();
    assert!((85_000..=90_000).contains(&ttl), "cleanup TTL {ttl} ms");
}

/// A grant without a period on a lock whose ledger records a period must not shorten the hash's
/// cleanup TTL below the period's end: the ledger would vanish and the period could run twice.
#[tokio::test]
async fn a_grant_without_a_period_keeps_the_ledger_until_its_period_ends() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("ledger-ttl");
    // An hourly period whose offset puts the current period's end half an hour from now.
    let now_ms = leasehold::store::epoch_ms(std::time::SystemTime::now());
    let offset = Duration::from_millis(((now_ms + 1_800_000) % 3_600_000).unsigned_abs());
    let period = leasehold::Period::every(Duration::from_secs(3600))
        .unwrap()
        .offset(offset)
        .unwrap();
    let claim = request(&lock, Duration::from_secs(1)).with_period(period);
    let claimed = store.try_acquire(&claim).await.unwrap().elected().unwrap();
    assert!(claimed.period.is_some());
    assert_eq!(
        store.start_period(&claimed).await.unwrap(),
        leasehold::store::PeriodStart::Started
    );
    store.release(&claimed, Duration::ZERO).await.unwrap();
    let mut conn = store.connection().await.unwrap();
    let before: i64 = conn.pttl(store.key(&lock)).await.unwrap();

    let plain = store
        .try_acquire(&request(&lock, Duration::from_secs(1)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    store.release(&plain, Duration::ZERO).await.unwrap();
    let after: i64 = conn.pttl(store.key(&lock)).await.unwrap();
    // About half an hour (the period's end) + retention before and after, not 1 s + retention.
    assert!(
        before > 1_700_000,
        "cleanup TTL after the claim: {before} ms"
    );
    assert!(
        after > before - 60_000,
        "cleanup TTL went from {before} ms to {after} ms"
    );
    let again = store.try_acquire(&claim).await.unwrap();
    assert!(matches!(again, Acquisition::AlreadyRan(_)), "{again:?}");
}

/// A clear deletes the eight ledger fields and nothing else: the slot's fields (its fence, and
/// its holder while held) stay, and so does a waiter's `w`.
#[tokio::test]
async fn a_clear_deletes_the_ledger_fields_only() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("ledger-clear");
    let hourly = leasehold::Period::every(Duration::from_secs(3600)).unwrap();
    let claim = request(&lock, Duration::from_secs(30)).with_period(hourly);
    let lease = store.try_acquire(&claim).await.unwrap().elected().unwrap();
    assert_eq!(
        store.start_period(&lease).await.unwrap(),
        leasehold::store::PeriodStart::Started
    );
    // A refused plain acquire marks the lock as waited for (`w`).
    let refused = store
        .try_acquire(&request(&lock, Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(matches!(refused, Acquisition::Taken(_)), "{refused:?}");
    let key = store.key(&lock);
    let mut conn = store.connection().await.unwrap();
    let before: std::collections::HashMap<String, String> = conn.hgetall(&key).await.unwrap();
    let ledger = ["lp", "lf", "lu", "la", "lb", "ls", "lt", "lr"];
    assert!(ledger.iter().all(|f| before.contains_key(*f)), "{before:?}");

    let cleared = store.clear_period_ledger(&lock).await.unwrap().unwrap();
    assert!(cleared.started && cleared.by == "test", "{cleared:?}");
    let after: std::collections::HashMap<String, String> = conn.hgetall(&key).await.unwrap();
    let mut kept = before.clone();
    kept.retain(|field, _| !ledger.contains(&field.as_str()));
    assert_eq!(after, kept, "only the ledger's fields go");
    assert_eq!(after.get("f0"), Some(&lease.fence.to_string()));
    assert_eq!(after.get("t0"), Some(&lease.token.to_hex()));
    assert!(after.contains_key("w"), "{after:?}");
    assert_eq!(store.clear_period_ledger(&lock).await.unwrap(), None);
    store.release(&lease, Duration::ZERO).await.unwrap();
}

/// The store's line of waiting electors is bounded: however many electors are refused, the
/// lock's hash holds at most `MAX_WAITERS` fields (its own included), and the round's last
/// release still finds the longest waiter among those recorded.
#[tokio::test]
async fn the_line_of_waiters_in_the_hash_is_bounded() {
    use leasehold::store::{HandOff, MAX_WAITERS, WaiterId};
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("line-bound");
    let me = WaiterId::random();
    let held = store
        .try_acquire(&request(&lock, Duration::from_secs(30)).waiting_as(me))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let first = WaiterId::random();
    let refused = store
        .try_acquire(&request(&lock, Duration::from_secs(30)).waiting_as(first))
        .await
        .unwrap();
    assert!(refused.is_taken(), "{:?}", refused);
    for _ in 0..MAX_WAITERS * 2 {
        let req = request(&lock, Duration::from_secs(30)).waiting_as(WaiterId::random());
        assert!(store.try_acquire(&req).await.unwrap().is_taken());
    }
    let mut conn = store.connection().await.unwrap();
    let fields: usize = conn.hlen(store.key(&lock)).await.unwrap();
    assert!(fields <= MAX_WAITERS, "{fields} fields in the hash");
    let recorded: Option<String> = conn
        .hget(store.key(&lock), format!("q{}", first.to_hex()))
        .await
        .unwrap();
    assert!(recorded.is_some(), "the first waiter is recorded");
    let answer = store
        .release_to(&held, Duration::ZERO, HandOff::Longest(me))
        .await
        .unwrap();
    assert!(answer.kept_for_another);
    let kept: Option<String> = conn.hget(store.key(&lock), "n").await.unwrap();
    assert_eq!(kept, Some(first.to_hex()), "kept for the first one refused");
}

/// A lock whose hash has a period ledger takes the full acquire script, which hands off by
/// the same rules: a lock kept for one elector is refused to another, period claim or not.
#[tokio::test]
async fn a_hash_with_a_ledger_hands_off_too() {
    use leasehold::Period;
    use leasehold::store::{HandOff, WaiterId};
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("line-ledger");
    let (a, b, c) = (WaiterId::random(), WaiterId::random(), WaiterId::random());
    let hourly = Period::every(Duration::from_secs(3600)).unwrap();
    let claim = request(&lock, Duration::from_secs(30))
        .with_period(hourly)
        .waiting_as(a);
    let held = store.try_acquire(&claim).await.unwrap().elected().unwrap();
    let refused = store
        .try_acquire(&request(&lock, Duration::from_secs(30)).waiting_as(b))
        .await
        .unwrap();
    assert!(refused.is_taken(), "{:?}", refused);
    let answer = store
        .release_to(&held, Duration::ZERO, HandOff::Longest(a))
        .await
        .unwrap();
    assert!(answer.kept_for_another, "b waits");
    let by_c = store
        .try_acquire(&request(&lock, Duration::from_secs(30)).waiting_as(c))
        .await
        .unwrap();
    assert!(by_c.is_taken(), "kept for b, not c");
    let by_b = store
        .try_acquire(&request(&lock, Duration::from_secs(30)).waiting_as(b))
        .await
        .unwrap();
    assert!(by_b.elected().is_some(), "b takes the lock kept for it");
}
