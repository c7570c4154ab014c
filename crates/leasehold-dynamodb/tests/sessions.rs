//! Sessions: a store instance's leases are kept alive by one write per session per beat. The
//! requests are counted on the client (an SDK interceptor on every attempt sent: dynalite keeps
//! no statistics of its own).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::{StreamExt, TryStreamExt};
use leasehold::store::{AcquireRequest, Acquisition, Extension, Release, Token};
use leasehold::{Lease, LeaseStore, LockName};
use leasehold_dynamodb::{DynamoDbStore, expressions as x, session_key};

/// Counts every attempt the client sends, by its `X-Amz-Target` (`DynamoDB_20120810.UpdateItem`
/// → `UpdateItem`).
#[derive(Debug, Default, Clone)]
struct Counter {
    sent: Arc<AtomicU64>,
    by_operation: Arc<std::sync::Mutex<HashMap<String, u64>>>,
}

impl Intercept for Counter {
    fn name(&self) -> &'static str {
        "sessions-test-counter"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("?")
            .to_owned();
        *self.by_operation.lock().unwrap().entry(target).or_default() += 1;
        Ok(())
    }
}

impl Counter {
    fn take(&self) -> (u64, HashMap<String, u64>) {
        let sent = self.sent.swap(0, Ordering::SeqCst);
        (
            sent,
            std::mem::take(&mut *self.by_operation.lock().unwrap()),
        )
    }
}

/// A store whose client counts its requests.
fn counted_store(endpoint: &str) -> (DynamoDbStore, Counter) {
    let counter = Counter::default();
    let config = common::client(endpoint)
        .config()
        .to_builder()
        .interceptor(counter.clone())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    (
        DynamoDbStore::new(client, common::options()).expect("valid options"),
        counter,
    )
}

fn lock(tag: &str) -> LockName {
    LockName::new(format!("{tag}-{}", Token::random().to_hex())).unwrap()
}

async fn grant(store: &DynamoDbStore, lock: &LockName, ttl: Duration) -> Lease {
    let req = AcquireRequest::new(lock.clone(), 1, "node-s", Token::random(), ttl);
    match store.try_acquire(&req).await.unwrap() {
        Acquisition::Elected(lease) => lease,
        other => panic!("{lock}: expected a grant, got {other:?}"),
    }
}

async fn try_grant(store: &DynamoDbStore, lock: &LockName, ttl: Duration) -> Option<Lease> {
    let req = AcquireRequest::new(lock.clone(), 1, "node-t", Token::random(), ttl);
    match store.try_acquire(&req).await.unwrap() {
        Acquisition::Elected(lease) => Some(lease),
        _ => None,
    }
}

/// `n` leases of `ttl`, acquired 32 at a time.
async fn grant_many(store: &DynamoDbStore, tag: &str, n: usize, ttl: Duration) -> Vec<Lease> {
    let tag = format!("{tag}-{}", Token::random().to_hex());
    futures::stream::iter(0..n)
        .map(|i| {
            let lock = LockName::new(format!("{tag}-{i}")).unwrap();
            async move { Ok::<_, leasehold::store::StoreError>(grant(store, &lock, ttl).await) }
        })
        .buffer_unordered(32)
        .try_collect()
        .await
        .unwrap()
}

fn entries(leases: &[Lease], ttl: Duration) -> Vec<(Lease, Duration)> {
    leases.iter().map(|l| (l.clone(), ttl)).collect()
}

fn extended(answers: &[leasehold::store::StoreResult<Extension>]) -> usize {
    answers
        .iter()
        .filter(|a| matches!(a, Ok(Extension::Extended { .. })))
        .count()
}

async fn raw(store: &DynamoDbStore, key: &str) -> Option<HashMap<String, AttributeValue>> {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, AttributeValue::S(key.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

/// The session a lease's item names.
async fn session_of(store: &DynamoDbStore, lease: &Lease) -> String {
    let item = raw(store, &store.key(&lease.lock, lease.slot))
        .await
        .unwrap();
    match item.get(x::SESSION) {
        Some(AttributeValue::S(id)) => id.clone(),
        other => panic!("{}: no session: {other:?}", lease.lock),
    }
}

/// The largest N the renewal test holds: 10,000 (set `LEASEHOLD_TEST_SESSION_LEASES` lower on
/// a slow emulator).
fn largest() -> usize {
    std::env::var("LEASEHOLD_TEST_SESSION_LEASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

/// Holding N leases costs one write per beat whatever N: after the first beat (which attaches
/// each lease to the session, one write each), every `extend_many` of all N leases is exactly
/// one request, at N = 1, 100 and 10,000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_of_many_leases_are_one_request_per_beat() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    // Long enough to outlast granting 10,000 leases: that took 80 s on dynalite at a load of 7,
    // and the first grants had run out before the first beat with a 60 s lease.
    const TTL: Duration = Duration::from_secs(600);
    const BEATS: u64 = 3;
    let mut per_beat = Vec::new();
    for n in [1, 100, largest()] {
        let (store, counter) = counted_store(&endpoint);
        let started = Instant::now();
        let leases = grant_many(&store, "many", n, TTL).await;
        let granted = started.elapsed();
        let (acquired, _) = counter.take();
        let first = store.extend_many(&entries(&leases, TTL)).await;
        assert_eq!(extended(&first), n, "the first beat extends every lease");
        let (attached, _) = counter.take();
        let started = Instant::now();
        for beat in 0..BEATS {
            let answers = store.extend_many(&entries(&leases, TTL)).await;
            assert_eq!(
                extended(&answers),
                n,
                "beat {beat}: every lease is extended"
            );
        }
        let renewing = started.elapsed() / u32::try_from(BEATS).unwrap();
        let (sent, by_operation) = counter.take();
        println!(
            "N = {n}: {acquired} requests to acquire ({granted:?}), {attached} for the first \
             beat, then {sent} for {BEATS} beats ({renewing:?} a beat): {by_operation:?}"
        );
        assert_eq!(
            sent, BEATS,
            "N = {n}: one request per beat, whatever N: {by_operation:?}"
        );
        assert_eq!(by_operation.get("UpdateItem"), Some(&BEATS));
        assert!(
            attached <= u64::try_from(n).unwrap() + 2,
            "N = {n}: the first beat attaches each lease once ({attached} requests)"
        );
        per_beat.push(sent);
        let state = store.state(&leases[0].lock, 1).await.unwrap();
        assert!(
            state.holders[0].expires_at > SystemTime::now() + TTL - Duration::from_secs(10),
            "the store shows the session's end as the lease's"
        );
        futures::stream::iter(&leases)
            .map(|l| store.release(l, Duration::ZERO))
            .buffer_unordered(32)
            .try_collect::<Vec<_>>()
            .await
            .unwrap();
    }
    assert!(
        per_beat.iter().all(|&s| s == per_beat[0]),
        "flat in N: {per_beat:?}"
    );
}

/// A session whose renewals stop loses every lease under it: other clients are refused until
/// the leases' ends (never earlier), then granted each lock with a higher fence; the holder's
/// next renewal answers `NotHeld` for all of them, and its next extension of a new lease opens
/// a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_lost_while_holding_many_leases_loses_them_all_no_earlier_than_their_end() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    // Long enough for the 20 refused grants below to fit in one session term on a loaded
    // machine (at 1.5 s, the last of them came after the session's end).
    const TTL: Duration = Duration::from_secs(4);
    const N: usize = 20;
    let holder = common::store(&endpoint);
    let other = common::store(&endpoint);
    let leases = grant_many(&holder, "lost", N, TTL).await;
    let answers = holder.extend_many(&entries(&leases, TTL)).await;
    assert_eq!(extended(&answers), N);
    let renewed = SystemTime::now();
    let session = session_of(&holder, &leases[0]).await;
    for lease in &leases {
        assert_eq!(session_of(&holder, lease).await, session, "one session");
    }
    // Its own term passes first, the session keeps them.
    tokio::time::sleep(TTL / 2).await;
    let answers = holder.extend_many(&entries(&leases, TTL)).await;
    assert_eq!(extended(&answers), N);
    let last_renewal = SystemTime::now();
    for lease in &leases {
        assert!(
            try_grant(&other, &lease.lock, TTL).await.is_none(),
            "{}: held while the session lives",
            lease.lock
        );
    }
    // The holder stops renewing: until the session's end (+ the skew tolerance) nobody gets in.
    let end = last_renewal + TTL;
    while SystemTime::now() + Duration::from_millis(150) < end {
        assert!(
            try_grant(&other, &leases[N - 1].lock, TTL).await.is_none(),
            "granted before the session's end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(
        end.duration_since(SystemTime::now()).unwrap_or_default() + common::SKEW * 2,
    )
    .await;
    assert!(SystemTime::now() > renewed + TTL);
    for lease in &leases {
        let taken = try_grant(&other, &lease.lock, TTL)
            .await
            .unwrap_or_else(|| panic!("{}: free once its session ended", lease.lock));
        assert!(taken.fence > lease.fence, "the fence rises");
    }
    let answers = holder.extend_many(&entries(&leases, TTL)).await;
    assert!(
        answers.iter().all(|a| matches!(a, Ok(Extension::NotHeld))),
        "every lease of the lost session answers NotHeld: {answers:?}"
    );
    let fresh = grant(&holder, &lock("lost-new"), TTL).await;
    assert_eq!(
        extended(
            &holder
                .extend_many(&entries(std::slice::from_ref(&fresh), TTL))
                .await
        ),
        1
    );
    assert_ne!(
        session_of(&holder, &fresh).await,
        session,
        "a new session, never the old one"
    );
}

/// An operator forces one lease of a live session out: its lock is free at once, the holder's
/// next renewal answers `NotHeld` for it alone, and the renewal after forgets the revocation
/// (the session item's `revoked` set is empty again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_release_of_one_lease_of_a_live_session_loses_only_that_lease() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(20);
    let holder = common::store(&endpoint);
    let operator = common::store(&endpoint);
    let leases = grant_many(&holder, "forced", 5, TTL).await;
    assert_eq!(
        extended(&holder.extend_many(&entries(&leases, TTL)).await),
        5
    );
    let session = session_of(&holder, &leases[2]).await;
    let freed = operator.force_release(&leases[2].lock, 1).await.unwrap();
    assert_eq!(freed.len(), 1, "the live holder is reported");
    let taken = try_grant(&operator, &leases[2].lock, TTL)
        .await
        .expect("free at once after a forced release");
    let item = raw(&holder, &session_key("", &session)).await.unwrap();
    assert!(
        matches!(item.get(x::REVOKED), Some(AttributeValue::Ss(t)) if t.contains(&leases[2].token.to_hex())),
        "the token is revoked in the session item: {item:?}"
    );
    let answers = holder.extend_many(&entries(&leases, TTL)).await;
    for (i, answer) in answers.iter().enumerate() {
        match (i, answer) {
            (2, Ok(Extension::NotHeld)) => {}
            (2, other) => panic!("the forced lease: {other:?}"),
            (_, Ok(Extension::Extended { .. })) => {}
            (_, other) => panic!("lease {i}: {other:?}"),
        }
    }
    let rest: Vec<Lease> = leases
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| l.clone())
        .collect();
    assert_eq!(extended(&holder.extend_many(&entries(&rest, TTL)).await), 4);
    let item = raw(&holder, &session_key("", &session)).await.unwrap();
    assert_eq!(
        item.get(x::REVOKED),
        None,
        "the revocation is forgotten: {item:?}"
    );
    assert_eq!(
        operator.state(&taken.lock, 1).await.unwrap().holders[0].fence,
        taken.fence,
        "the new holder keeps the lock"
    );
    for lease in &rest {
        assert_eq!(
            holder.release(lease, Duration::ZERO).await.unwrap(),
            Release::Released
        );
    }
}

/// A forcer that revoked a lease in its session and stopped before freeing the lock item leaves
/// nothing stuck: an acquirer treats the revoked lease as free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_lease_whose_item_was_not_freed_is_free() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(20);
    let holder = common::store(&endpoint);
    let other = common::store(&endpoint);
    let lease = grant(&holder, &lock("halfway"), TTL).await;
    assert_eq!(
        extended(
            &holder
                .extend_many(&entries(std::slice::from_ref(&lease), TTL))
                .await
        ),
        1
    );
    let session = session_of(&holder, &lease).await;
    assert!(try_grant(&other, &lease.lock, TTL).await.is_none());
    other
        .client()
        .update_item()
        .table_name(other.table())
        .key(x::LOCK_NAME, AttributeValue::S(session_key("", &session)))
        .update_expression("ADD #rv :t")
        .expression_attribute_names("#rv", x::REVOKED)
        .expression_attribute_values(":t", AttributeValue::Ss(vec![lease.token.to_hex()]))
        .send()
        .await
        .unwrap();
    let taken = try_grant(&other, &lease.lock, TTL)
        .await
        .expect("a revoked lease is free");
    assert!(taken.fence > lease.fence);
    let answers = holder
        .extend_many(&entries(std::slice::from_ref(&lease), TTL))
        .await;
    assert!(matches!(answers[0], Ok(Extension::NotHeld)), "{answers:?}");
    assert_eq!(
        other.state(&lease.lock, 1).await.unwrap().holders[0].fence,
        taken.fence,
        "the holder's renewal does not free the new holder's item"
    );
}

/// A lease released while its session is being renewed: the release frees its lock at once,
/// every other lease is extended, and the released one is never extended again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_renewed_while_one_of_its_leases_is_released() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(20);
    let holder = common::store(&endpoint);
    let other = common::store(&endpoint);
    let leases = grant_many(&holder, "racing", 6, TTL).await;
    assert_eq!(
        extended(&holder.extend_many(&entries(&leases, TTL)).await),
        6
    );
    let all = entries(&leases, TTL);
    let (answers, released) = tokio::join!(
        holder.extend_many(&all),
        holder.release(&leases[3], Duration::ZERO)
    );
    assert_eq!(released.unwrap(), Release::Released);
    for (i, answer) in answers.iter().enumerate() {
        match (i, answer) {
            (3, Ok(_)) => {}
            (_, Ok(Extension::Extended { .. })) => {}
            (_, other) => panic!("lease {i}: {other:?}"),
        }
    }
    let taken = try_grant(&other, &leases[3].lock, TTL)
        .await
        .expect("a released lease's lock is free at once");
    let answers = holder.extend_many(&all).await;
    assert!(matches!(answers[3], Ok(Extension::NotHeld)), "{answers:?}");
    assert_eq!(extended(&answers), 5);
    assert_eq!(
        other.state(&taken.lock, 1).await.unwrap().holders[0].fence,
        taken.fence
    );
    let state = holder.state(&leases[0].lock, 1).await.unwrap();
    assert_eq!(state.holders.len(), 1, "the others stay held");
}

/// A lease attached to a session keeps no `ttl` (DynamoDB TTL must not delete it while its
/// session lives), is listed and shown with its session's end after its own term passed, and
/// its release writes the `ttl` back; the session item is never listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_of_a_session_is_listed_shown_and_kept_from_ttl_deletion() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(3);
    // A table of its own: a listing is a scan of the whole table, and the shared one holds the
    // other tests' thousands of leases (scanning them took longer than this lease).
    let table = format!("listed-{}", Token::random().to_hex());
    let store = DynamoDbStore::new(
        common::client(&endpoint),
        common::options().with_table(&table),
    )
    .unwrap();
    store.create_table().await.unwrap();
    let lease = grant(&store, &lock("listed"), TTL).await;
    let key = store.key(&lease.lock, 0);
    assert!(
        raw(&store, &key).await.unwrap().contains_key(x::TTL),
        "a grant has a ttl"
    );
    for _ in 0..4 {
        assert_eq!(
            extended(
                &store
                    .extend_many(&entries(std::slice::from_ref(&lease), TTL))
                    .await
            ),
            1
        );
        tokio::time::sleep(TTL / 3).await;
    }
    let item = raw(&store, &key).await.unwrap();
    assert!(
        !item.contains_key(x::TTL),
        "no ttl while attached: {item:?}"
    );
    let one = entries(std::slice::from_ref(&lease), TTL);
    assert_eq!(extended(&store.extend_many(&one).await), 1);
    let listed = list_all(&store).await;
    assert_eq!(
        listed,
        vec![lease.lock.clone()],
        "the lock and no session item"
    );
    assert_eq!(extended(&store.extend_many(&one).await), 1);
    let own: u64 = match item.get(x::LEASE_EXPIRY) {
        Some(AttributeValue::N(n)) => n.parse().unwrap(),
        other => panic!("{other:?}"),
    };
    let shown = store.state(&lease.lock, 1).await.unwrap().holders[0].expires_at;
    assert!(
        shown > leasehold::store::time_at_ms(own),
        "the state shows the session's end, past the lease's own term"
    );
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    assert!(
        raw(&store, &key).await.unwrap().contains_key(x::TTL),
        "the ttl is back"
    );
    assert!(list_all(&store).await.is_empty());
}

/// Every lock the store lists, page after page.
async fn list_all(store: &DynamoDbStore) -> Vec<LockName> {
    let mut locks = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list_locks(cursor.as_ref()).await.unwrap();
        locks.extend(page.locks.into_iter().map(|l| l.lock));
        match page.next {
            Some(next) => cursor = Some(next),
            None => return locks,
        }
    }
}

/// While a store instance renews its session, a new grant of the same lease length joins it at
/// once (its item names the session and has no `ttl`), so its first extension costs nothing
/// more: one request renews it with the others. A grant made while no session is renewed stays
/// on its own until its first extension attaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_joins_the_session_being_renewed_at_once() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(20);
    let (store, counter) = counted_store(&endpoint);
    let first = grant(&store, &lock("join-first"), TTL).await;
    let key = store.key(&first.lock, 0);
    assert!(
        !raw(&store, &key).await.unwrap().contains_key(x::SESSION),
        "alone at first"
    );
    for _ in 0..2 {
        let answers = store
            .extend_many(std::slice::from_ref(&(first.clone(), TTL)))
            .await;
        assert_eq!(extended(&answers), 1);
    }
    let session = session_of(&store, &first).await;
    let joined = grant(&store, &lock("join-later"), TTL).await;
    let item = raw(&store, &store.key(&joined.lock, 0)).await.unwrap();
    assert_eq!(
        item.get(x::SESSION),
        Some(&AttributeValue::S(session.clone())),
        "joined at its grant"
    );
    assert!(
        !item.contains_key(x::TTL),
        "no ttl under a session: {item:?}"
    );
    counter.take();
    let both = entries(&[first.clone(), joined.clone()], TTL);
    assert_eq!(extended(&store.extend_many(&both).await), 2);
    let (sent, by_operation) = counter.take();
    assert_eq!(sent, 1, "one request renews both: {by_operation:?}");
    for lease in [&first, &joined] {
        assert_eq!(
            store.release(lease, Duration::ZERO).await.unwrap(),
            Release::Released
        );
    }
}

/// `state_many` reads exactly the items it names, by key, and the session they name: for 150
/// leases of one session and 10 locks never used (160 keys), two `BatchGetItem`s and one read of
/// the session, never a `Scan`, however many other items the shared table holds. Each answer is
/// what `state` shows: the holder and fence of a held lock, nothing for the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_many_reads_the_named_items_and_their_session_by_key() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(30);
    let (store, counter) = counted_store(&endpoint);
    assert!(store.reads_in_batches());
    let leases = grant_many(&store, "many-read", 150, TTL).await;
    let first = store.extend_many(&entries(&leases, TTL)).await;
    assert_eq!(extended(&first), 150, "attached to the session");
    let mut locks: Vec<LockName> = leases.iter().map(|l| l.lock.clone()).collect();
    locks.extend((0..10).map(|i| lock(&format!("never-{i}"))));
    counter.take();
    let states = store.state_many(&locks, 1).await.unwrap();
    let (sent, by_operation) = counter.take();
    assert_eq!(
        (by_operation.get("BatchGetItem"), by_operation.get("Scan")),
        (Some(&2), None),
        "160 keys: two BatchGetItems and no Scan: {by_operation:?}"
    );
    assert_eq!(sent, 3, "and one read of the session: {by_operation:?}");
    assert_eq!(states.len(), locks.len());
    for (state, lease) in states.iter().zip(&leases) {
        assert_eq!(state.lock, lease.lock);
        assert_eq!(
            state.holder().map(|h| (h.owner.as_str(), h.fence)),
            Some(("node-s", lease.fence)),
            "{}",
            lease.lock
        );
    }
    assert!(
        states[150..].iter().all(|s| s.is_free()),
        "never used: free"
    );
    futures::stream::iter(&leases)
        .map(|l| store.release(l, Duration::ZERO))
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    let after = store.state_many(&locks[..150], 1).await.unwrap();
    assert!(after.iter().all(|s| s.is_free()), "released: free");
}

/// A refusal names the holder as a read shows it: its owner and fence, held until its session's
/// end (past the lease's own term once the session was renewed), so a waiter on another process
/// can ask again when the lease could end instead of a whole polling interval later. A free
/// item refuses nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_names_the_holder_until_its_session_ends() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    const TTL: Duration = Duration::from_secs(20);
    let holder = common::store(&endpoint);
    let other = common::store(&endpoint);
    let own = grant(&holder, &lock("named"), TTL).await;
    let req = || AcquireRequest::new(own.lock.clone(), 1, "node-t", Token::random(), TTL);
    match other.try_acquire(&req()).await.unwrap() {
        Acquisition::Taken(Some(h)) => {
            assert_eq!(
                (h.slot, h.owner.as_str(), h.fence),
                (0, "node-s", own.fence)
            );
            assert_eq!(
                h.expires_at, own.expires_at,
                "its own term, before a session"
            );
        }
        other => panic!("expected a refusal naming the holder, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        extended(
            &holder
                .extend_many(&entries(std::slice::from_ref(&own), TTL))
                .await
        ),
        1
    );
    let attached = store_state_expiry(&holder, &own.lock).await;
    match other.try_acquire(&req()).await.unwrap() {
        Acquisition::Taken(Some(h)) => {
            assert_eq!(h.fence, own.fence);
            assert!(h.expires_at > own.expires_at, "the session's end: {h:?}");
            assert_eq!(h.expires_at, attached, "as a read shows it");
        }
        other => panic!("expected a refusal naming the holder, got {other:?}"),
    }
    assert_eq!(
        holder.release(&own, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    assert!(try_grant(&other, &own.lock, TTL).await.is_some());
}

/// The holder's expiry as `state` shows it.
async fn store_state_expiry(store: &DynamoDbStore, lock: &LockName) -> SystemTime {
    store.state(lock, 1).await.unwrap().holders[0].expires_at
}
