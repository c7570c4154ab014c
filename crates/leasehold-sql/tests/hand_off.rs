//! Hand-off on PostgreSQL beyond the conformance suite's rules: its column is added to tables
//! created before it; without it (`create_schema(false)`) the store works as before, only
//! without hand-off; the line in the row stays bounded and a waiter's repeated refusals do not
//! all write; and an older version, which ignores the columns, stays safe beside a newer one.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use leasehold::store::{
    AcquireRequest, HAND_OFF_HOLD, HandOff, MAX_WAITERS, Release, WAITING_FRESH, WaiterId,
};
use leasehold::{Lease, LeaseStore, LockName, Period, store::Token};
use leasehold_sql::{Dialect, SqlStore};
use sqlx::{Executor, PgConnection, Row};

/// The table as this crate created it before hand-off (with the ledger's columns).
fn old_table(table: &str) -> String {
    format!(
        "CREATE TABLE {table} (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL, \
         owner VARCHAR(255) NOT NULL, token CHAR(32) NULL, fence BIGINT NOT NULL, \
         acquired_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, ledger_period BIGINT NULL, \
         ledger_at BIGINT NULL, ledger_by VARCHAR(255) NULL, PRIMARY KEY (lock_name, slot))"
    )
}

fn request(lock: &LockName, owner: &str, waiter: Option<WaiterId>) -> AcquireRequest {
    let req = AcquireRequest::new(
        lock.clone(),
        1,
        owner,
        Token::random(),
        Duration::from_secs(30),
    );
    match waiter {
        Some(w) => req.waiting_as(w),
        None => req,
    }
}

async fn acquire(
    store: &SqlStore,
    lock: &LockName,
    owner: &str,
    w: Option<WaiterId>,
) -> Option<Lease> {
    store
        .try_acquire(&request(lock, owner, w))
        .await
        .unwrap()
        .elected()
}

async fn connect(url: &str) -> PgConnection {
    <PgConnection as sqlx::Connection>::connect(url)
        .await
        .unwrap()
}

/// The ids of the waiters in slot 0's row of the lock `bounded-line` (not the keep, `k`), and
/// the row's version (`xmin` changes with every write).
async fn line_of(c: &mut PgConnection, table: &str) -> (Vec<String>, String) {
    let q = format!(
        "SELECT ARRAY(SELECT w FROM jsonb_object_keys(COALESCE(waiting, '{{}}'::jsonb)) w WHERE w <> 'k'), \
         xmin::text \
         FROM {table} WHERE lock_name = 'bounded-line' AND slot = 0"
    );
    let row = sqlx::query(&q).fetch_one(c).await.unwrap();
    (row.get(0), row.get(1))
}

/// The PostgreSQL URL, a fresh table named after `tag`, and a store on it (`None`: no server,
/// outside CI).
async fn fresh_table(tag: &str) -> Option<(String, String, SqlStore)> {
    let url = common::url("LEASEHOLD_TEST_POSTGRES_URL")?;
    let table = unique(tag);
    let store = SqlStore::connect_with(&url, common::options().with_table(&table))
        .await
        .unwrap();
    Some((url, table, store))
}

fn unique(tag: &str) -> String {
    format!("{tag}_{}", &Token::random().to_hex()[..12])
}

#[tokio::test]
async fn postgres_old_tables_get_the_column_and_work_without_it() {
    let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    let table = unique("old_hand_off");
    connect(&url)
        .await
        .execute(old_table(&table).as_str())
        .await
        .unwrap();
    let lock = LockName::new("old-table").unwrap();
    let (a, b) = (WaiterId::random(), WaiterId::random());

    // Schema managed elsewhere, the column missing: leases and releases work; a keep is only a
    // release (anyone may take the lock at once). A claim needs the ledger's claim columns,
    // which this table (of the version before them too) lacks: it names their statements.
    let managed = SqlStore::connect_with(
        &url,
        common::options()
            .with_table(&table)
            .with_create_schema(false),
    )
    .await
    .unwrap();
    let held = acquire(&managed, &lock, "a", Some(a))
        .await
        .expect("granted");
    assert!(acquire(&managed, &lock, "b", Some(b)).await.is_none());
    let freed = managed
        .release_to(&held, Duration::ZERO, HandOff::Keep(a))
        .await
        .unwrap();
    assert!(freed.release == Release::Released && !freed.kept_for_another);
    let taken = acquire(&managed, &lock, "b", Some(b)).await;
    assert!(taken.is_some(), "without the column nothing is kept");
    let hourly = Period::every(Duration::from_secs(3600)).unwrap();
    let claim = request(&LockName::new("old-claim").unwrap(), "a", Some(a)).with_period(hourly);
    let refused = managed.try_acquire(&claim).await.unwrap_err();
    assert!(!refused.is_transient(), "{refused}");
    for needle in Dialect::Postgres.ledger_claim_columns(&table) {
        assert!(
            refused.to_string().contains(&needle),
            "{refused} lacks {needle:?}"
        );
    }

    // The default adds the column on first use, and hands off.
    let store = SqlStore::connect_with(&url, common::options().with_table(&table))
        .await
        .unwrap();
    let claimed = store.try_acquire(&claim).await.unwrap();
    let claimed = claimed
        .elected()
        .expect("the claim columns added, a claim is granted");
    assert_eq!(
        store.start_period(&claimed).await.unwrap(),
        leasehold::store::PeriodStart::Started
    );
    store.release(&claimed, Duration::ZERO).await.unwrap();
    let lock = LockName::new("old-table-2").unwrap();
    let held = acquire(&store, &lock, "a", Some(a)).await.expect("granted");
    assert!(acquire(&store, &lock, "b", Some(b)).await.is_none());
    let kept = store
        .release_to(&held, Duration::ZERO, HandOff::Longest(a))
        .await
        .unwrap();
    assert!(
        kept.release == Release::Released && kept.kept_for_another,
        "{kept:?}"
    );
    assert!(
        acquire(&store, &lock, "x", None).await.is_none(),
        "kept for b"
    );
    assert!(acquire(&store, &lock, "b", Some(b)).await.is_some());
}

#[tokio::test]
async fn postgres_the_line_is_bounded_and_quiet_refusals_do_not_write() {
    let Some((url, table, store)) = fresh_table("line").await else {
        return;
    };
    let lock = LockName::new("bounded-line").unwrap();
    let holder = acquire(&store, &lock, "holder", Some(WaiterId::random()))
        .await
        .expect("granted");
    let mut c = connect(&url).await;

    let first = WaiterId::random();
    assert!(acquire(&store, &lock, "first", Some(first)).await.is_none());
    let (line, version) = line_of(&mut c, &table).await;
    assert_eq!(line.len(), 1, "{line:?}");
    assert!(line.contains(&first.to_hex()));
    // Refused again at once: nothing to write (the entry is fresh), so the row is not rewritten.
    assert!(acquire(&store, &lock, "first", Some(first)).await.is_none());
    let (again, same_version) = line_of(&mut c, &table).await;
    assert_eq!(again, line);
    assert_eq!(same_version, version, "a quiet refusal rewrote the row");
    // A caller that does not wait is never recorded.
    assert!(acquire(&store, &lock, "x", None).await.is_none());
    assert_eq!(line_of(&mut c, &table).await, (line, version));

    for i in 0..MAX_WAITERS + 6 {
        let refused = acquire(&store, &lock, &format!("w{i}"), Some(WaiterId::random())).await;
        assert!(refused.is_none());
    }
    let (line, _) = line_of(&mut c, &table).await;
    assert_eq!(line.len(), MAX_WAITERS, "the line is bounded");
    assert!(line.contains(&first.to_hex()), "the first keeps its place");

    // The round's last release keeps the lock for the first waiter, and sends its signal.
    let kept = store
        .release_to(
            &holder,
            Duration::ZERO,
            HandOff::Longest(WaiterId::random()),
        )
        .await
        .unwrap();
    assert!(kept.kept_for_another);
    assert!(
        acquire(&store, &lock, "late", Some(WaiterId::random()))
            .await
            .is_none()
    );
    let first_holds = acquire(&store, &lock, "first", Some(first))
        .await
        .expect("kept for first");
    let (line, _) = line_of(&mut c, &table).await;
    assert!(
        !line.contains(&first.to_hex()),
        "a grant forgets the grantee"
    );
    assert_eq!(line.len(), MAX_WAITERS - 1, "the late waiter found no room");

    // Stale waiters are forgotten by the next release to the longest waiter: nobody is kept for.
    tokio::time::sleep(WAITING_FRESH + Duration::from_millis(200)).await;
    let plain = store
        .release_to(&first_holds, Duration::ZERO, HandOff::Longest(first))
        .await
        .unwrap();
    assert!(plain.release == Release::Released && !plain.kept_for_another);
    assert!(line_of(&mut c, &table).await.0.is_empty());
    assert!(acquire(&store, &lock, "anyone", None).await.is_some());
}

#[tokio::test]
async fn postgres_an_older_version_beside_hand_off_stays_safe() {
    let Some((url, table, store)) = fresh_table("mixed").await else {
        return;
    };
    let lock = LockName::new("mixed-fleet").unwrap();
    let (a, b) = (WaiterId::random(), WaiterId::random());
    let held = acquire(&store, &lock, "a", Some(a)).await.expect("granted");
    assert!(acquire(&store, &lock, "b", Some(b)).await.is_none());
    assert!(
        store
            .release_to(&held, Duration::ZERO, HandOff::Longest(a))
            .await
            .unwrap()
            .kept_for_another
    );
    // An older version's acquisition is the plain upsert: it ignores the keep (less fair) and
    // still only takes a free row, with a higher fence.
    let old = Dialect::Postgres.statements(&table).acquire;
    let token = Token::random().to_hex();
    let mut c = connect(&url).await;
    let row = sqlx::query(&old)
        .bind(lock.as_str())
        .bind(0i32)
        .bind("old")
        .bind(&token)
        .bind(30_000i64)
        .fetch_optional(&mut c)
        .await
        .unwrap()
        .expect("an older version takes the kept lock");
    let fence: i64 = row.get(0);
    assert!(u64::try_from(fence).unwrap() > held.fence);
    assert!(
        acquire(&store, &lock, "b", Some(b)).await.is_none(),
        "held by the old version"
    );
    // Its release (the plain statement) leaves the keep for b in the row; it lapses.
    let release = Dialect::Postgres.statements(&table).release;
    sqlx::query(&release)
        .bind(lock.as_str())
        .bind(0i32)
        .bind(&token)
        .bind("leasehold_release_unused")
        .fetch_all(&mut c)
        .await
        .unwrap();
    tokio::time::sleep(HAND_OFF_HOLD + Duration::from_millis(100)).await;
    let next = acquire(&store, &lock, "x", None)
        .await
        .expect("the keep lapsed");
    assert!(next.fence > u64::try_from(fence).unwrap());
    let state = store.state(&lock, 1).await.unwrap();
    assert_eq!(state.holders.len(), 1);
    assert_eq!(state.holders[0].owner, "x");
}
