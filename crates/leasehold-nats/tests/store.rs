//! What is particular to the NATS store, against a real nats-server: the key layout and fences
//! as the server stores them, the atomic period batch, expiry by the server and its release
//! signal, a bucket that cannot keep leases, connection errors, and safety through a fault proxy
//! that cuts and delays the clients' connections.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{
    LeaseStore, LockName, Period,
    store::{Extension, OpenError, Release, Token},
};
use leasehold_nats::{NatsOptions, NatsStore};
use leasehold_testkit::proxy::FaultProxy;
use leasehold_testkit::safety::{self, SafetyConfig};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep, timeout};

fn request(lock: &LockName, slots: u32, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, "node-a", Token::random(), ttl)
}

/// The stream sequence and headers of the latest message of `key` in `bucket`, read raw.
async fn raw(store: &NatsStore, key: &str) -> Option<(u64, async_nats::HeaderMap)> {
    let client = store.client().await.unwrap();
    let bucket = store.options().bucket();
    let msg = client
        .request(
            format!("$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.{key}"),
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    if msg.status.is_some() {
        return None;
    }
    let headers = msg.headers.unwrap();
    let seq = headers
        .get("Nats-Sequence")
        .unwrap()
        .as_str()
        .parse()
        .unwrap();
    Some((seq, headers))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_one_token_per_lock_and_fences_are_stream_sequences() {
    let Some(url) = common::url() else { return };
    let store = NatsStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let lock = LockName::new(format!("t.x:1/{}", unique_name("layout"))).unwrap();
    let key = store.key(&lock, 1);
    assert!(
        key.starts_with("t=2Ex=3A1/") && key.ends_with(".s1"),
        "{key}"
    );

    let lease = store
        .try_acquire(&request(&lock, 2, Duration::from_secs(30)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let other = store
        .try_acquire(&request(&lock, 2, Duration::from_secs(30)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!((lease.slot, other.slot), (0, 1));
    let (seq, headers) = raw(&store, &key)
        .await
        .expect("slot 1 is stored under its key");
    assert_eq!(
        seq, other.fence,
        "the fence is the granting message's sequence"
    );
    assert_eq!(headers.get("Nats-TTL").map(|v| v.as_str()), Some("30s"));
    assert!(other.fence > lease.fence);

    // The first extension attaches the lease to the store's session of that length: a new
    // message (a higher sequence) naming the session, without a TTL of its own, keeping the
    // fence; the session record carries the TTL.
    let Extension::Extended { .. } = store.extend(&other, Duration::from_secs(20)).await.unwrap()
    else {
        panic!("the holder extends")
    };
    let (seq, headers) = raw(&store, &key).await.unwrap();
    assert!(seq > other.fence);
    assert_eq!(
        headers.get("Nats-TTL"),
        None,
        "no TTL of its own: {headers:?}"
    );
    let session = headers
        .get("Leasehold-Session")
        .expect("the record names its session")
        .to_string();
    let (session_seq, session_headers) = raw(&store, &format!("=session.{session}"))
        .await
        .expect("the session record");
    assert_eq!(
        session_headers.get("Nats-TTL").map(|v| v.as_str()),
        Some("20s")
    );
    let state = store.state(&lock, 2).await.unwrap();
    assert_eq!(state.holders[1].fence, other.fence);
    // The next extension writes the session record only.
    let Extension::Extended { .. } = store.extend(&other, Duration::from_secs(20)).await.unwrap()
    else {
        panic!("the holder extends again")
    };
    assert_eq!(
        raw(&store, &key).await.unwrap().0,
        seq,
        "the lock record is not written"
    );
    assert!(raw(&store, &format!("=session.{session}")).await.unwrap().0 > session_seq);

    // A release leaves a delete marker; the next grant of the slot gets a higher fence.
    assert_eq!(
        store.release(&other, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let (_, headers) = raw(&store, &key).await.unwrap();
    assert_eq!(headers.get("KV-Operation").map(|v| v.as_str()), Some("DEL"));
    let again = store
        .try_acquire(&request(&lock, 2, Duration::from_secs(30)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(again.slot, 1);
    assert!(again.fence > seq, "{} > {seq}", again.fence);
}

/// Slot 0 and the ledger are one atomic batch: stored side by side, the grant just before the
/// ledger. The start is one publish of the ledger conditioned on the last sequence of the whole
/// lock (the server refuses it after any write to the lock since); once started, a second claim
/// of the period is refused with the ledger's record, and the refusal writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_period_grant_and_its_ledger_commit_together() {
    let Some(url) = common::url() else { return };
    let store = NatsStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let lock = unique_name("period");
    let period = Period::every(Duration::from_secs(3600)).unwrap();
    let first = request(&lock, 1, Duration::from_secs(30)).with_period(period);
    let lease = store.try_acquire(&first).await.unwrap().elected().unwrap();
    let ledger_key = store.key(&lock, 0).replace(".s0", ".ledger");
    let (ledger_seq, _) = raw(&store, &ledger_key).await.expect("a ledger");
    let (slot_seq, _) = raw(&store, &store.key(&lock, 0)).await.unwrap();
    assert_eq!(slot_seq, lease.fence);
    assert_eq!(
        ledger_seq,
        lease.fence + 1,
        "one batch, stored contiguously"
    );
    let record = store.period_record(&lock).await.unwrap().unwrap();
    assert!(!record.started, "a claim is not a run: {record:?}");

    // After a write to slot 0 (an extension), the lock's last sequence is no longer the
    // ledger's: a start expecting the ledger's sequence for the whole lock is refused.
    let Extension::Extended { .. } = store.extend(&lease, Duration::from_secs(30)).await.unwrap()
    else {
        panic!("the holder extends")
    };
    let client = store.client().await.unwrap();
    let js = async_nats::jetstream::new(client);
    let bucket = store.options().bucket().to_owned();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(
        "Nats-Expected-Last-Subject-Sequence",
        ledger_seq.to_string(),
    );
    headers.insert(
        "Nats-Expected-Last-Subject-Sequence-Subject",
        format!("$KV.{bucket}.{}", ledger_key.replace(".ledger", ".>")),
    );
    let stale = js
        .publish_with_headers(
            format!("$KV.{bucket}.{ledger_key}"),
            headers,
            bytes::Bytes::from_static(b"stale"),
        )
        .await
        .unwrap()
        .await;
    assert!(
        stale.is_err(),
        "the server checks the lock's whole filter: {stale:?}"
    );
    assert_eq!(raw(&store, &ledger_key).await.unwrap().0, ledger_seq);
    assert_eq!(
        store.start_period(&lease).await.unwrap(),
        leasehold::store::PeriodStart::Started
    );
    let (started_seq, _) = raw(&store, &ledger_key).await.unwrap();
    assert!(started_seq > ledger_seq, "the start rewrote the ledger");
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );

    let second = request(&lock, 1, Duration::from_secs(30)).with_period(period);
    match store.try_acquire(&second).await.unwrap() {
        Acquisition::AlreadyRan(record) => {
            assert_eq!(Some(record.period), lease.period);
            assert_eq!(record.by, "node-a");
            assert!(record.started);
        }
        other => panic!("the period already ran: {other:?}"),
    }
    // The refused claim wrote nothing.
    assert!(store.state(&lock, 1).await.unwrap().is_free());
    assert_eq!(raw(&store, &ledger_key).await.unwrap().0, started_seq);
}

/// The server removes a lease whose TTL ran out and marks it: the state shows no holder, a
/// waiter on another client is woken by the marker, and the next grant has a higher fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_expires_a_lease_and_wakes_waiters() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let holder = NatsStore::connect_with(&url, options.clone())
        .await
        .unwrap();
    let waiter = NatsStore::connect_with(&url, options).await.unwrap();
    let lock = unique_name("expiry");
    // The first signal starts the watch, which wakes every waiter once when it opens (a
    // release before it was open would not have been seen); the signal the test waits on is
    // taken once it is open.
    waiter.release_signal(&lock).expect("notifications are on");
    sleep(Duration::from_millis(300)).await; // the watch is open
    let mut signal = waiter.release_signal(&lock).expect("notifications are on");
    let lease = holder
        .try_acquire(&request(&lock, 1, Duration::from_millis(1000)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let started = Instant::now();
    timeout(Duration::from_secs(5), signal.released())
        .await
        .expect("the expiry marker wakes the waiter");
    let took = started.elapsed();
    println!("expiry seen {took:?} after a 1 s grant");
    assert!(
        took >= Duration::from_millis(900),
        "not before the TTL: {took:?}"
    );
    assert!(waiter.state(&lock, 1).await.unwrap().is_free());
    assert_eq!(
        holder.extend(&lease, Duration::from_secs(5)).await.unwrap(),
        Extension::NotHeld
    );
    let next = waiter
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert!(next.fence > lease.fence);
}

/// A bucket made without per-message TTLs is refused with a permanent error that says what to
/// change; nothing is written to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_without_ttls_is_refused() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let client = async_nats::connect(url.trim_start_matches("nats://"))
        .await
        .unwrap();
    let js = async_nats::jetstream::new(client);
    let bucket = options.bucket().to_owned();
    js.create_key_value(async_nats::jetstream::kv::Config {
        bucket: bucket.clone(),
        history: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    let e = NatsStore::connect_with(&url, options)
        .await
        .expect_err("refused");
    match e {
        OpenError::Connect { source, .. } => {
            assert!(!source.is_transient(), "{source}");
            let text = source.to_string();
            assert!(
                text.contains(&bucket) && text.contains("allow_msg_ttl"),
                "{text}"
            );
        }
        other => panic!("expected a connection error, got {other}"),
    }
    js.delete_key_value(&bucket).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_a_transient_error() {
    let port = leasehold_testkit::free_port().unwrap();
    let options = NatsOptions::default().with_connect_timeout(Duration::from_millis(500));
    let e = NatsStore::connect_with(&format!("nats://127.0.0.1:{port}"), options)
        .await
        .expect_err("nothing listens there");
    match e {
        OpenError::Connect { source, .. } => assert!(source.is_transient(), "{source}"),
        other => panic!("expected a connection error, got {other}"),
    }
}

/// The proxy's address as a store URL.
fn via(proxy: &FaultProxy) -> String {
    format!("nats://{}", proxy.addr())
}

async fn proxy(url: &str) -> FaultProxy {
    let target = url.trim_start_matches("nats://").parse().unwrap();
    FaultProxy::start(target).await.unwrap()
}

/// A cut connection fails requests with transient errors; the client reconnects after it heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_connection_is_transient_and_heals() {
    let Some(url) = common::url() else { return };
    let proxy = proxy(&url).await;
    let options = common::options().with_request_timeout(Duration::from_millis(500));
    let store = NatsStore::connect_with(&via(&proxy), options)
        .await
        .unwrap();
    let lock = unique_name("cut");
    proxy.cut().await;
    let e = store
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .expect_err("no connection");
    assert!(e.is_transient(), "{e}");
    proxy.heal().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store
            .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
            .await
        {
            Ok(answer) => {
                assert!(answer.is_elected());
                break;
            }
            Err(e) => {
                assert!(e.is_transient() && Instant::now() < deadline, "{e}");
                sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The safety check with every contender behind the fault proxy, which cuts and delays their
/// connections while leases are held: never two holders inside the fenced resource at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safety_with_connections_cut_and_delayed() {
    let Some(url) = common::url() else { return };
    let proxy = Arc::new(proxy(&url).await);
    let options = common::options().with_request_timeout(Duration::from_millis(500));
    let factory = common::factory_with(via(&proxy), options);
    let done = Arc::new(AtomicBool::new(false));
    let chaos = {
        let (proxy, done) = (Arc::clone(&proxy), Arc::clone(&done));
        tokio::spawn(async move {
            let mut faults = 0u32;
            while !done.load(Ordering::Relaxed) {
                sleep(Duration::from_millis(700)).await;
                if faults.is_multiple_of(2) {
                    proxy.cut().await;
                    sleep(Duration::from_millis(300)).await;
                } else {
                    proxy.delay(Duration::from_millis(150));
                    sleep(Duration::from_millis(600)).await;
                }
                proxy.heal().await;
                faults += 1;
            }
            faults
        })
    };
    let config = SafetyConfig {
        contenders: 4,
        rounds: 10,
        lease: Duration::from_millis(2000),
        max_action: Duration::from_millis(300),
        wait: Duration::from_secs(6),
        ..SafetyConfig::default()
    };
    let report = safety::check(&factory, &config).await.unwrap();
    done.store(true, Ordering::Relaxed);
    let faults = chaos.await.unwrap();
    println!("{report}\nfaults injected: {faults}");
    report.assert_safe();
    assert!(
        faults >= 2,
        "the proxy cut or delayed the connections: {faults}"
    );
    assert!(
        proxy.accepted() > 4,
        "the clients reconnected through the proxy"
    );
}

/// A page reads at most `MAX_LIST_SCAN` messages: behind more than that many released keys
/// (delete markers), the held lock is found on a later page, and the first page is empty but
/// says where to continue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_reads_a_bounded_number_of_messages_per_page() {
    use leasehold::store::MAX_LIST_SCAN;
    let Some(url) = common::url() else { return };
    let store = Arc::new(
        NatsStore::connect_with(&url, common::options())
            .await
            .unwrap(),
    );
    let released: Vec<LockName> = (0..=MAX_LIST_SCAN)
        .map(|i| LockName::new(format!("gone-{i}")).unwrap())
        .collect();
    for chunk in released.chunks(50) {
        futures::future::join_all(chunk.iter().map(|lock| {
            let store = Arc::clone(&store);
            async move {
                let lease = store
                    .try_acquire(&request(lock, 1, Duration::from_secs(60)))
                    .await
                    .unwrap()
                    .elected()
                    .unwrap();
                store.release(&lease, Duration::ZERO).await.unwrap();
            }
        }))
        .await;
    }
    let held = unique_name("after-the-markers");
    store
        .try_acquire(&request(&held, 1, Duration::from_secs(60)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let first = store.list_locks(None).await.unwrap();
    assert!(first.locks.is_empty(), "only markers on the first page");
    let next = first.next.expect("more to read");
    let second = store.list_locks(Some(&next)).await.unwrap();
    assert_eq!(second.locks.len(), 1);
    assert_eq!(second.locks[0].lock, held);
    assert!(second.next.is_none());
}

/// `state_many` reads the keys of 256 locks per batch direct get. Every holder is reported, at
/// its lock's place, under a session or on a lease of its own; and a batch whose locks have more
/// keys than one answer carries (a lock used with 1,000 slots among them, which the server
/// refuses to answer in one) is read one lock at a time instead of reporting less.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_locks_are_read_in_batches_even_past_one_answer() {
    let Some(url) = common::url() else { return };
    let store = NatsStore::connect_with(&url, common::options())
        .await
        .unwrap();
    assert!(store.reads_in_batches());
    let name = unique_name("many");
    let locks: Vec<LockName> = (0..300)
        .map(|i| LockName::new(format!("{name}-{i}")).unwrap())
        .collect();
    let ttl = Duration::from_secs(120);
    let mut leases = Vec::new();
    for lock in locks.iter().step_by(3) {
        match store.try_acquire(&request(lock, 1, ttl)).await.unwrap() {
            Acquisition::Elected(lease) => leases.push(lease),
            other => panic!("{lock} is free: {other:?}"),
        }
    }
    // The first ten are renewed, which attaches them to a session.
    let renewals: Vec<_> = leases[..10].iter().map(|l| (l.clone(), ttl)).collect();
    for answer in store.extend_many(&renewals).await {
        assert!(matches!(answer.unwrap(), Extension::Extended { .. }));
    }
    let check = |states: Vec<leasehold::store::LockState>| {
        assert_eq!(states.len(), locks.len());
        let mut held = leases.iter();
        for (i, state) in states.iter().enumerate() {
            assert_eq!(state.lock, locks[i]);
            if i % 3 == 0 {
                let lease = held.next().unwrap();
                assert_eq!(state.holders.len(), 1, "{}", state.lock);
                assert_eq!(state.holders[0].fence, lease.fence, "{}", state.lock);
            } else {
                assert!(
                    state.holders.is_empty(),
                    "{}: {:?}",
                    state.lock,
                    state.holders
                );
            }
        }
    };
    check(store.state_many(&locks, 1).await.unwrap());

    // Lock 3 (held at slot 0) gets 999 more slot keys, written by another program: its batch
    // now matches over 1,024 keys.
    let js = async_nats::jetstream::new(store.client().await.unwrap());
    let bucket = store.options().bucket().to_owned();
    for slot in 1..1_000 {
        let subject = format!("$KV.{bucket}.{}", store.key(&locks[3], slot));
        js.publish(subject, bytes::Bytes::from_static(b"not a lease"))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    check(store.state_many(&locks, 1).await.unwrap());
    let wide = store.state_many(&locks[..4], 1_000).await.unwrap();
    assert_eq!(wide[3].holders.len(), 1, "{:?}", wide[3].holders);
}
