//! A follower waiting for a lock writes nothing: on MySQL/MariaDB, whose acquire upsert is an
//! `INSERT` even when it changes nothing, refused attempts after the first read the row instead
//! (and name the holder), as the server's own per-session counters show; on SQLite a refused
//! upsert changes no page.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::collections::HashMap;
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition, Release, Token};
use leasehold::{LeaseStore, LockName};
use leasehold_sql::{SqlPool, SqlStore};
use sqlx::{Executor, Row};

/// The write counters of one MySQL session, and the statements it ran.
const COUNTERS: [&str; 6] = [
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Handler_write",
    "Handler_update",
    "Com_select",
];

/// The counters of the store's only connection, and that connection's id (so a reconnect, which
/// starts them at zero, is noticed).
async fn session(store: &SqlStore) -> (u64, HashMap<String, u64>) {
    let SqlPool::MySql(pool) = store.pool() else {
        unreachable!("a MySQL store")
    };
    let mut conn = pool.acquire().await.unwrap();
    let id: u64 = conn
        .fetch_one("SHOW SESSION VARIABLES LIKE 'pseudo_thread_id'")
        .await
        .unwrap()
        .get::<String, _>(1)
        .parse()
        .unwrap();
    let rows = conn
        .fetch_all("SHOW SESSION STATUS WHERE Variable_name IN ('Com_insert', 'Com_insert_select', 'Com_update', 'Handler_write', 'Handler_update', 'Com_select')")
        .await
        .unwrap();
    let counters = rows
        .iter()
        .map(|r| {
            let value: String = r.get(1);
            (r.get::<String, _>(0), value.parse().unwrap())
        })
        .collect();
    (id, counters)
}

/// What each counter grew by from `before` to `after`, on the same connection.
fn grew(
    before: &(u64, HashMap<String, u64>),
    after: &(u64, HashMap<String, u64>),
) -> HashMap<&'static str, u64> {
    assert_eq!(before.0, after.0, "the store kept its one connection");
    COUNTERS
        .iter()
        .map(|&c| (c, after.1[c] - before.1[c]))
        .collect()
}

fn writes(grown: &HashMap<&'static str, u64>) -> u64 {
    COUNTERS[..5].iter().map(|c| grown[c]).sum()
}

async fn single_connection_store(url: &str, table: &str) -> SqlStore {
    SqlStore::connect_with(
        url,
        common::options().with_max_connections(1).with_table(table),
    )
    .await
    .unwrap()
}

fn request(lock: &LockName, owner: &str, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), 1, owner, Token::random(), ttl)
}

#[tokio::test]
async fn mysql_refused_attempts_after_the_first_write_nothing() {
    const REFUSED: u64 = 10;
    let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    let table = format!("quiet_{}", &Token::random().to_hex()[..12]);
    let holder = single_connection_store(&url, &table).await;
    let follower = single_connection_store(&url, &table).await;
    let ttl = Duration::from_secs(60);

    // An uncontended acquisition is still the upsert and its read back: one write statement
    // and one read.
    let free = LockName::new("quiet-free").unwrap();
    // The store's first calls check the table: warm it up.
    let warm = LockName::new("quiet-warm").unwrap();
    for store in [&holder, &follower] {
        match store.try_acquire(&request(&warm, "w", ttl)).await.unwrap() {
            Acquisition::Elected(lease) => store.release(&lease, Duration::ZERO).await.unwrap(),
            other => panic!("a free lock is granted: {other:?}"),
        };
    }
    let before = session(&follower).await;
    let lease = match follower
        .try_acquire(&request(&free, "f", ttl))
        .await
        .unwrap()
    {
        Acquisition::Elected(lease) => lease,
        other => panic!("a free lock is granted: {other:?}"),
    };
    let uncontended = grew(&before, &session(&follower).await);
    assert_eq!(
        (uncontended["Com_insert_select"], uncontended["Com_select"]),
        (1, 1),
        "an uncontended acquisition: the upsert and its read back, {uncontended:?}"
    );
    follower.release(&lease, Duration::ZERO).await.unwrap();

    let lock = LockName::new("quiet-held").unwrap();
    let held = match holder.try_acquire(&request(&lock, "h", ttl)).await.unwrap() {
        Acquisition::Elected(lease) => lease,
        other => panic!("a free lock is granted: {other:?}"),
    };
    let waiting = request(&lock, "f", ttl);
    let named = |answer: Acquisition| match answer {
        Acquisition::Taken(Some(h)) => {
            assert_eq!((h.owner.as_str(), h.fence), ("h", held.fence));
            assert_eq!(h.expires_at, held.expires_at, "the holder's expiry");
        }
        other => panic!("a refusal naming the holder, got {other:?}"),
    };
    // The first refusal of a wait still sends the upsert (nothing told the store it was held);
    // its read back, the one an uncontended acquisition makes, names the holder.
    let before = session(&follower).await;
    named(follower.try_acquire(&waiting).await.unwrap());
    let first = grew(&before, &session(&follower).await);
    assert_eq!(
        (first["Com_insert_select"], first["Com_select"]),
        (1, 1),
        "the first refusal: the upsert and one read that names the holder, {first:?}"
    );
    let before = session(&follower).await;
    // The later ones read, and name the holder with the expiry it was granted.
    for _ in 0..REFUSED {
        named(follower.try_acquire(&waiting).await.unwrap());
    }
    // A new wait (a new token) on the same lock reads first too.
    named(
        follower
            .try_acquire(&request(&lock, "f", ttl))
            .await
            .unwrap(),
    );
    let refused = grew(&before, &session(&follower).await);
    assert_eq!(
        writes(&refused),
        0,
        "{} refused attempts wrote: {refused:?}",
        REFUSED + 1
    );
    assert_eq!(
        refused["Com_select"],
        REFUSED + 1,
        "one read per refused attempt: {refused:?}"
    );

    // Released: the next attempt reads, finds the slot free, and takes it with the upsert.
    assert_eq!(
        holder.release(&held, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let before = session(&follower).await;
    let won = match follower.try_acquire(&waiting).await.unwrap() {
        Acquisition::Elected(lease) => lease,
        other => panic!("a released lock is granted: {other:?}"),
    };
    assert!(won.fence > held.fence, "the fence rises");
    let took = grew(&before, &session(&follower).await);
    assert_eq!(
        (took["Com_select"], took["Com_insert_select"]),
        (2, 1),
        "the winning attempt after refusals: a read, the upsert, its read back: {took:?}"
    );
    // The grant is forgotten: the next acquisition of the lock writes at once again.
    follower.release(&won, Duration::ZERO).await.unwrap();
    let before = session(&follower).await;
    let again = match follower
        .try_acquire(&request(&lock, "f", ttl))
        .await
        .unwrap()
    {
        Acquisition::Elected(lease) => lease,
        other => panic!("a released lock is granted: {other:?}"),
    };
    let uncontended = grew(&before, &session(&follower).await);
    assert_eq!(
        (uncontended["Com_insert_select"], uncontended["Com_select"]),
        (1, 1),
        "{uncontended:?}"
    );
    follower.release(&again, Duration::ZERO).await.unwrap();

    let SqlPool::MySql(pool) = holder.pool() else {
        unreachable!()
    };
    pool.execute(format!("DROP TABLE {table}").as_str())
        .await
        .unwrap();
}

/// SQLite's refused upsert (`ON CONFLICT … DO UPDATE … WHERE`) changes no page: another
/// connection's `data_version`, which any commit that wrote moves, stays where it was.
#[tokio::test]
async fn sqlite_refused_attempts_write_nothing() {
    let url = common::sqlite_url("quiet");
    let holder = SqlStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let follower = SqlStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let ttl = Duration::from_secs(60);
    let lock = LockName::new("quiet-sqlite").unwrap();
    let held = match holder.try_acquire(&request(&lock, "h", ttl)).await.unwrap() {
        Acquisition::Elected(lease) => lease,
        other => panic!("a free lock is granted: {other:?}"),
    };
    let SqlPool::Sqlite(pool) = holder.pool() else {
        unreachable!("an SQLite store")
    };
    let mut watcher = pool.acquire().await.unwrap();
    let version = |row: sqlx::sqlite::SqliteRow| row.get::<i64, _>(0);
    let before = version(watcher.fetch_one("PRAGMA data_version").await.unwrap());
    let waiting = request(&lock, "f", ttl);
    for _ in 0..10 {
        assert!(matches!(
            follower.try_acquire(&waiting).await.unwrap(),
            Acquisition::Taken(_)
        ));
    }
    let after = version(watcher.fetch_one("PRAGMA data_version").await.unwrap());
    assert_eq!(before, after, "refused attempts committed no change");
    // The watcher sees a real write: the check can fail.
    holder.release(&held, Duration::ZERO).await.unwrap();
    let now = version(watcher.fetch_one("PRAGMA data_version").await.unwrap());
    let granted = follower.try_acquire(&waiting).await.unwrap();
    assert!(matches!(granted, Acquisition::Elected(_)));
    let later = version(watcher.fetch_one("PRAGMA data_version").await.unwrap());
    assert_ne!(
        now, later,
        "a grant by another connection moves data_version"
    );
}

/// A holder on a store of its own takes `lock` for `lease` and crashes (never renews nor
/// releases); an elector on another store, built by `follower`, takes the lock over. Returns the
/// time from the holder's request to the takeover and what the follower's connection ran while
/// it waited.
async fn crash_then_take_over(
    url: &str,
    lock: &str,
    lease: Duration,
    follower: leasehold::ElectionOptionsBuilder,
) -> (Duration, HashMap<&'static str, u64>) {
    let table = format!("quiet_{}", &Token::random().to_hex()[..12]);
    let crashed = single_connection_store(url, &table).await;
    let store = std::sync::Arc::new(single_connection_store(url, &table).await);
    let lock = LockName::new(lock).unwrap();
    let sent = std::time::Instant::now();
    let held = match crashed
        .try_acquire(&request(&lock, "h", lease))
        .await
        .unwrap()
    {
        Acquisition::Elected(lease) => lease,
        other => panic!("a free lock is granted: {other:?}"),
    };
    let elector = leasehold::Elector::with_options(
        store.clone(),
        follower.wait(Duration::from_secs(10)).build().unwrap(),
    );
    let before = session(&store).await;
    let guard = elector
        .try_acquire(lock.as_str())
        .await
        .unwrap()
        .elected()
        .expect("the lease ran out");
    let took = sent.elapsed();
    let ran = grew(&before, &session(&store).await);
    assert!(guard.fence() > held.fence, "the fence rises");
    guard.release().await.unwrap();
    let SqlPool::MySql(pool) = crashed.pool() else {
        unreachable!()
    };
    pool.execute(format!("DROP TABLE {table}").as_str())
        .await
        .unwrap();
    (took, ran)
}

/// An elector with default options waiting on MySQL, where no signal crosses processes, polls
/// once a second (a third of 2.5 s is less); its refusals name the holder's expiry, so after a
/// crash it takes over when the lease ends (2.5 s) rather than at its next poll (3 s).
#[tokio::test]
async fn mysql_follower_takes_over_from_a_crashed_holder_when_its_lease_ends() {
    let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    let lease = Duration::from_millis(2_500);
    let follower = leasehold::ElectionOptions::builder()
        .node_id("f")
        .lease(lease);
    let (took, ran) = crash_then_take_over(&url, "quiet-crash", lease, follower).await;
    assert!(
        took >= lease && took <= lease + Duration::from_millis(400),
        "taken over {took:?} after the crash; the lease is {lease:?}, the next poll was at 3 s"
    );
    // Attempts at about 0, 1, 2 and 2.5 s (one upsert, then reads) and the winning one.
    assert!(
        ran["Com_insert_select"] <= 2,
        "one write for the first refusal, one for the grant: {ran:?}"
    );
    assert!(
        ran["Com_select"] <= 8,
        "about one read per attempt: {ran:?}"
    );
}

/// The same with the follower's options default but for its wait (a 15 s lease, so without a
/// named holder it would ask again 5 s after its first refusal) and a holder with a 1 s lease
/// that crashes: the first refusal names the holder too, so the follower takes over when that
/// 1 s lease ends.
#[tokio::test]
async fn mysql_default_follower_takes_over_from_a_short_lease_when_it_ends() {
    let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    let lease = Duration::from_secs(1);
    let follower = leasehold::ElectionOptions::builder();
    let (took, _) = crash_then_take_over(&url, "quiet-default", lease, follower).await;
    assert!(
        took >= lease && took <= lease + Duration::from_millis(900),
        "taken over {took:?} after the crash; the holder's lease is {lease:?} (the follower's \
         own pace, a third of its 15 s lease, would be 5 s)"
    );
}
