//! Sessions against a real nats-server: a beat's renewals of 10,000 leases are one write of the
//! session record (counted by the client's own message statistics and by the stream's
//! sequence), a session lost while holding many leases loses them all and frees them no
//! earlier than their lease, a lease forced out of a live session is the only one its holder
//! loses (also when the forcer stops halfway), and a release racing a renewal frees its lock.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // tests

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use leasehold::store::{AcquireRequest, Acquisition, Extension, Release, Token};
use leasehold::{Lease, LeaseStore, LockName};
use leasehold_nats::NatsStore;
use tokio::time::sleep;

/// Leases held by one store in the counting test.
const LEASES: usize = 10_000;

async fn store(url: &str, options: &leasehold_nats::NatsOptions) -> Arc<NatsStore> {
    Arc::new(NatsStore::connect_with(url, options.clone()).await.unwrap())
}

fn dynamic(store: &Arc<NatsStore>) -> Arc<dyn LeaseStore> {
    Arc::clone(store) as Arc<dyn LeaseStore>
}

/// Messages this store's client has sent (each JetStream publish and each read is one).
async fn sent(store: &NatsStore) -> u64 {
    let client = store.client().await.unwrap();
    client.statistics().out_messages.load(Ordering::Relaxed)
}

/// The stream's last sequence: every write stored in the bucket raises it by one.
async fn last_seq(store: &NatsStore) -> u64 {
    let client = store.client().await.unwrap();
    let js = async_nats::jetstream::new(client);
    let bucket = store.options().bucket();
    let mut stream = js.get_stream(format!("KV_{bucket}")).await.unwrap();
    stream.info().await.unwrap().state.last_sequence
}

/// The latest message of `key` (its headers and value), read raw.
async fn raw(store: &NatsStore, key: &str) -> Option<(u64, async_nats::HeaderMap, String)> {
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
    let value = String::from_utf8(msg.payload.to_vec()).unwrap();
    Some((seq, headers, value))
}

/// The session a lease's lock record names.
async fn session_of(store: &NatsStore, lease: &Lease) -> String {
    let (_, headers, _) = raw(store, &store.key(&lease.lock, lease.slot))
        .await
        .expect("the lock record");
    headers
        .get("Leasehold-Session")
        .expect("attached to a session")
        .to_string()
}

fn entries(leases: &[Lease], ttl: Duration) -> Vec<(Lease, Duration)> {
    leases.iter().map(|l| (l.clone(), ttl)).collect()
}

#[track_caller]
fn extended(answer: &leasehold::store::StoreResult<Extension>, what: &str) -> SystemTime {
    match answer {
        Ok(Extension::Extended { expires_at }) => *expires_at,
        other => panic!("{what}: expected Extended, got {other:?}"),
    }
}

#[track_caller]
fn not_held(answer: &leasehold::store::StoreResult<Extension>, what: &str) {
    assert!(
        matches!(answer, Ok(Extension::NotHeld)),
        "{what}: expected NotHeld, got {answer:?}"
    );
}

async fn try_take(store: &dyn LeaseStore, lock: &LockName) -> Option<Lease> {
    let req = AcquireRequest::new(
        lock.clone(),
        1,
        "other-node",
        Token::random(),
        Duration::from_secs(30),
    );
    match store.try_acquire(&req).await.unwrap() {
        Acquisition::Elected(lease) => Some(lease),
        _ => None,
    }
}

/// Renewing N leases costs the same few messages whatever N: one session write per beat, and
/// none per lease, for 1 and for 10,000 leases (after their first extension, which attaches
/// each lease to the session once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_leases_renew_with_one_write_per_beat() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let ttl = Duration::from_secs(60);
    let mut per_beat = Vec::new();
    for n in [1, LEASES] {
        let store = store(&url, &options).await;
        let leases =
            leasehold_testkit::grant_many(&dynamic(&store), &format!("many{n}"), n, ttl).await;
        let batch = entries(&leases, ttl);
        // The first extension attaches every lease to the session (one write each, once).
        let answers = store.extend_many(&batch).await;
        for (i, a) in answers.iter().enumerate() {
            extended(a, &format!("first extension of lease {i}"));
        }
        const BEATS: u64 = 3;
        let writes = last_seq(&store).await;
        let messages = sent(&store).await;
        for beat in 0..BEATS {
            let answers = store.extend_many(&batch).await;
            for (lease, a) in leases.iter().zip(&answers) {
                let at = extended(a, &format!("beat {beat}: {}", lease.lock));
                assert!(at > lease.expires_at, "{}: the expiry moves on", lease.lock);
            }
        }
        let messages = sent(&store).await - messages;
        let writes = last_seq(&store).await - writes;
        println!("{n} leases: {messages} messages and {writes} writes in {BEATS} beats");
        assert_eq!(writes, BEATS, "{n} leases: one stored write per beat");
        assert!(
            messages <= BEATS,
            "{n} leases: one request per beat, sent {messages} in {BEATS} beats"
        );
        per_beat.push(messages);
        // The state shows the renewed expiry.
        let state = store.state(&leases[n - 1].lock, 1).await.unwrap();
        assert!(
            state
                .holder()
                .is_some_and(|h| h.expires_at > leases[n - 1].expires_at)
        );
    }
    assert_eq!(per_beat[0], per_beat[1], "flat in N: {per_beat:?}");
}

/// A session nobody renews any more is lost with every lease under it: another client is
/// refused each lock until the end the last renewal answered, then granted it; the holder's
/// next renewal answers `NotHeld` for every one; and its next lease goes under a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_session_loses_every_lease_no_earlier_than_their_lease() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let (holder, other) = (store(&url, &options).await, store(&url, &options).await);
    let ttl = Duration::from_millis(1500);
    let leases = leasehold_testkit::grant_many(&dynamic(&holder), "lost", 40, ttl).await;
    let answers = holder.extend_many(&entries(&leases, ttl)).await;
    let ends: Vec<SystemTime> = answers.iter().map(|a| extended(a, "renewal")).collect();
    let end = ends.iter().max().copied().unwrap();
    let session = session_of(&holder, &leases[0]).await;
    for lease in &leases[1..] {
        assert_eq!(session_of(&holder, lease).await, session, "one session");
    }
    // Nobody renews it now. Another client polls one lock until it is free.
    let taken = loop {
        let before = SystemTime::now();
        if let Some(lease) = try_take(&*other, &leases[0].lock).await {
            break (before, lease);
        }
        assert!(
            SystemTime::now() < end + Duration::from_secs(5),
            "the lock must be free soon after its session ran out"
        );
        sleep(Duration::from_millis(50)).await;
    };
    assert!(
        taken.0 >= ends[0],
        "granted to another before the end the renewal answered: asked at {:?}, end {:?}",
        taken.0,
        ends[0]
    );
    assert!(taken.1.fence > leases[0].fence, "the fence rises");
    for lease in &leases[1..] {
        assert!(
            try_take(&*other, &lease.lock).await.is_some(),
            "{}: every lock of the lost session is free",
            lease.lock
        );
    }
    let answers = holder.extend_many(&entries(&leases, ttl)).await;
    for (lease, a) in leases.iter().zip(&answers) {
        not_held(a, &format!("{} after its session was lost", lease.lock));
    }
    // A new lease goes under a new session, never the lost one.
    let next = leasehold_testkit::grant_many(&dynamic(&holder), "lost-next", 1, ttl).await;
    extended(
        &holder.extend_many(&entries(&next, ttl)).await[0],
        "a new lease",
    );
    assert_ne!(
        session_of(&holder, &next[0]).await,
        session,
        "a new session id"
    );
}

/// An operator forces one lease out of a live session: it is revoked in the session record
/// and its lock is free at once; the holder's next renewal answers `NotHeld` for it alone and
/// empties the revoked list. A forcer that revokes and stops before deleting the lock record
/// leaves nothing stuck: acquirers treat the revoked record as free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forcing_one_lease_out_of_a_live_session_loses_only_it() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let (holder, operator) = (store(&url, &options).await, store(&url, &options).await);
    let ttl = Duration::from_secs(30);
    let leases = leasehold_testkit::grant_many(&dynamic(&holder), "forced", 20, ttl).await;
    let batch = entries(&leases, ttl);
    for a in holder.extend_many(&batch).await {
        extended(&a, "attach");
    }
    let session = session_of(&holder, &leases[0]).await;
    let session_key = format!("=session.{session}");

    let freed = operator.force_release(&leases[3].lock, 1).await.unwrap();
    assert_eq!(freed.len(), 1);
    assert_eq!(freed[0].fence, leases[3].fence);
    let (_, _, value) = raw(&holder, &session_key).await.unwrap();
    assert!(
        value.contains(&leases[3].token.to_hex()),
        "revoked in the session record: {value}"
    );
    assert!(
        try_take(&*operator, &leases[3].lock).await.is_some(),
        "free at once"
    );

    let answers = holder.extend_many(&batch).await;
    for (i, (lease, a)) in leases.iter().zip(&answers).enumerate() {
        if i == 3 {
            not_held(a, "the lease forced out");
        } else {
            extended(a, &format!("{}: another lease of the session", lease.lock));
        }
    }
    let (_, _, value) = raw(&holder, &session_key).await.unwrap();
    assert_eq!(
        value.lines().count(),
        1,
        "the revoked list is emptied once seen: {value}"
    );

    // A forcer that stops halfway: the lease is revoked, its lock record left as it was.
    let victim = &leases[7];
    let (seq, _, value) = raw(&holder, &session_key).await.unwrap();
    let revoked = format!(
        "{value}\n{} {}",
        holder.key(&victim.lock, 0),
        victim.token.to_hex()
    );
    let js = async_nats::jetstream::new(holder.client().await.unwrap());
    let bucket = options.bucket();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Expected-Last-Subject-Sequence", seq.to_string());
    headers.insert("Nats-TTL", "30s");
    js.publish_with_headers(
        format!("$KV.{bucket}.{session_key}"),
        headers,
        bytes::Bytes::from(revoked),
    )
    .await
    .unwrap()
    .await
    .unwrap();
    assert_eq!(
        session_of(&holder, victim).await,
        session,
        "its lock record still names the session"
    );
    assert!(
        operator.state(&victim.lock, 1).await.unwrap().is_free(),
        "a revoked lease is not held"
    );
    assert!(
        try_take(&*operator, &victim.lock).await.is_some(),
        "a revoked lock record is free to take"
    );
    let answers = holder.extend_many(&batch).await;
    not_held(&answers[7], "the revoked lease");
    extended(&answers[8], "the others");
    for lease in leases.iter().skip(8) {
        assert_eq!(
            holder.release(lease, Duration::ZERO).await.unwrap(),
            Release::Released
        );
    }
}

/// A release while the session is being renewed frees the lock at once and for good: the
/// renewal may answer either way for it, but the lock stays free after, and the next renewal
/// answers `NotHeld` for it while the others renew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_renewed_while_one_of_its_leases_is_released() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let (holder, other) = (store(&url, &options).await, store(&url, &options).await);
    let ttl = Duration::from_secs(30);
    let leases = leasehold_testkit::grant_many(&dynamic(&holder), "racing", 20, ttl).await;
    let batch = entries(&leases, ttl);
    for a in holder.extend_many(&batch).await {
        extended(&a, "attach");
    }
    for round in 0..5 {
        let gone = &leases[round];
        let (released, answers) = tokio::join!(
            holder.release(gone, Duration::ZERO),
            holder.extend_many(&batch[round..])
        );
        assert_eq!(released.unwrap(), Release::Released, "round {round}");
        for (lease, a) in leases[round + 1..].iter().zip(&answers[1..]) {
            extended(a, &format!("round {round}: {}", lease.lock));
        }
        let taken = try_take(&*other, &gone.lock).await;
        assert!(taken.is_some(), "round {round}: the released lock is free");
        let answers = holder.extend_many(&batch[round..]).await;
        not_held(&answers[0], &format!("round {round}: the released lease"));
        for a in &answers[1..] {
            extended(a, &format!("round {round}: the others"));
        }
        assert_eq!(
            other
                .state(&gone.lock, 1)
                .await
                .unwrap()
                .holder()
                .map(|h| h.fence),
            taken.map(|l| l.fence),
            "round {round}: the new holder keeps it"
        );
    }
}
