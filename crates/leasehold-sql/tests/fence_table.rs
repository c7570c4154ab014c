//! The fence table on real databases: the admission rule, fenced transactions that keep nothing
//! of a stale writer, the trigger refusing lowering updates from plain SQL, fences beyond
//! BIGINT, racing writers, schema creation by racing processes, and protecting a user's column.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::fence::{exec, put, scalar, unique, value, values_table};
use leasehold::fence::{Admission, FenceRegister, ResourceName};
use leasehold_sql::{FenceError, MAX_SQL_FENCE, SqlFences, SqlStore, is_stale_fence_error};
use sqlx::{Database, Executor};

per_dialect!(
    admission_follows_the_rule,
    stale_writes_keep_nothing,
    plain_sql_cannot_lower_a_fence,
    fences_beyond_bigint_are_refused,
    racing_writers_never_land_lower_after_higher,
    a_lower_writer_waits_for_the_higher_commit,
    racing_processes_create_the_schema,
    a_users_column_is_protected,
);

async fn store(url: &str) -> SqlStore {
    SqlStore::connect_with(url, common::options())
        .await
        .expect("open the store")
}

fn resource(tag: &str) -> ResourceName {
    ResourceName::new(format!("fence-test/{}", unique(tag))).expect("valid resource")
}

async fn admission_follows_the_rule<DB: Database>(url: String) {
    let fences = SqlFences::new(&store(&url).await);
    let r = resource("rule");
    assert_eq!(fences.highest(&r).await.unwrap(), None);
    assert_eq!(
        fences.admit(&r, 10).await.unwrap(),
        Admission::Admitted { previous: None }
    );
    assert_eq!(
        fences.admit(&r, 10).await.unwrap(),
        Admission::Admitted { previous: Some(10) },
        "the same holder again"
    );
    assert_eq!(
        fences.admit(&r, 12).await.unwrap(),
        Admission::Admitted { previous: Some(10) }
    );
    let Admission::Stale(stale) = fences.admit(&r, 11).await.unwrap() else {
        panic!("11 after 12 must be stale");
    };
    assert_eq!((stale.fence, stale.highest), (11, 12));
    assert_eq!(fences.highest(&r).await.unwrap(), Some(12));
    // Resources are independent, and names differing only in case or trailing spaces are two.
    let other = ResourceName::new(format!("{r} ")).unwrap();
    assert!(fences.admit(&other, 1).await.unwrap().is_admitted());
    assert_eq!(fences.highest(&r).await.unwrap(), Some(12));
    assert!(fences.describe().contains("leasehold_fences"));
    // The wrong database type is refused before anything is sent.
    let wrong = if DB::NAME == "PostgreSQL" {
        fences
            .fenced_by_fence::<sqlx::Sqlite>(&r, 13)
            .await
            .map(|_| ())
    } else {
        fences
            .fenced_by_fence::<sqlx::Postgres>(&r, 13)
            .await
            .map(|_| ())
    };
    assert!(
        matches!(wrong, Err(FenceError::WrongDatabase { .. })),
        "{wrong:?}"
    );
    assert_eq!(fences.highest(&r).await.unwrap(), Some(12));
}

async fn stale_writes_keep_nothing<DB: Database>(url: String)
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let store = store(&url).await;
    values_table(store.pool()).await;
    let fences = SqlFences::new(&store);
    let r = resource("stale");
    let name = r.as_str();

    let mut w = fences
        .fenced_by_fence::<DB>(&r, 7)
        .await
        .expect("first write");
    assert_eq!((w.fence(), w.previous()), (7, None));
    put::<DB>(&mut w, name, 7).await.unwrap();
    w.commit().await.unwrap();
    assert_eq!(value(store.pool(), name).await, Some(7));

    // Not committed: neither the value nor the fence is kept.
    let mut w = fences.fenced_by_fence::<DB>(&r, 9).await.unwrap();
    put::<DB>(&mut w, name, 9).await.unwrap();
    drop(w);
    assert_eq!(value(store.pool(), name).await, Some(7));
    assert_eq!(fences.highest(&r).await.unwrap(), Some(7));

    let mut w = fences.fenced_by_fence::<DB>(&r, 8).await.unwrap();
    assert_eq!(w.previous(), Some(7));
    put::<DB>(&mut w, name, 8).await.unwrap();
    w.commit().await.unwrap();

    let stale = fences
        .fenced_by_fence::<DB>(&r, 6)
        .await
        .expect_err("6 after 8");
    let FenceError::Stale(s) = &stale else {
        panic!("expected a stale fence, got {stale:?}");
    };
    assert_eq!((s.fence, s.highest, s.resource.as_str()), (6, 8, name));
    assert!(
        stale.is_stale() && stale.to_string().contains("stale fence 6"),
        "{stale}"
    );
    assert_eq!(value(store.pool(), name).await, Some(8));
    assert_eq!(fences.highest(&r).await.unwrap(), Some(8));
}

async fn plain_sql_cannot_lower_a_fence<DB: Database>(url: String) {
    let store = store(&url).await;
    let fences = SqlFences::new(&store);
    let r = resource("plain");
    assert!(fences.admit(&r, 20).await.unwrap().is_admitted());
    let table = fences.table_name();
    let set = |fence: &str| format!("UPDATE {table} SET fence = {fence} WHERE resource = '{r}'");
    for lower in ["19", "0", "-1"] {
        let e = exec(store.pool(), &set(lower)).await.expect_err("lowering");
        assert!(is_stale_fence_error(&e), "{e}");
    }
    if DB::NAME == "PostgreSQL" {
        let e = exec(store.pool(), &set("19")).await.unwrap_err();
        let db = e.as_database_error().expect("a database error");
        assert_eq!(db.code().as_deref(), Some("LHF01"));
        assert!(
            db.message().contains("fence 19 is below 20"),
            "{}",
            db.message()
        );
    }
    // Equal and higher fences go through.
    exec(store.pool(), &set("20")).await.unwrap();
    exec(store.pool(), &set("21")).await.unwrap();
    assert_eq!(fences.highest(&r).await.unwrap(), Some(21));
    // The error of an unrelated failure is not taken for a stale fence.
    let other = exec(store.pool(), "SELECT * FROM no_such_table_here")
        .await
        .unwrap_err();
    assert!(!is_stale_fence_error(&other));
}

async fn fences_beyond_bigint_are_refused<DB: Database>(url: String) {
    let fences = SqlFences::new(&store(&url).await);
    let r = resource("bigint");
    let e = fences
        .fenced_by_fence::<DB>(&r, MAX_SQL_FENCE + 1)
        .await
        .unwrap_err();
    assert!(
        matches!(e, FenceError::FenceTooLarge { fence, max } if fence == MAX_SQL_FENCE + 1 && max == i64::MAX as u64),
        "{e:?}"
    );
    let e = fences.admit(&r, u64::MAX).await.unwrap_err();
    assert!(
        !e.is_transient() && e.to_string().contains("too large"),
        "{e}"
    );
    assert!(
        e.source_fence_error().is_some(),
        "the FenceError is the source: {e:?}"
    );
    assert_eq!(
        fences.highest(&r).await.unwrap(),
        None,
        "nothing was written"
    );
    // The largest BIGINT is a fence like any other.
    assert!(fences.admit(&r, MAX_SQL_FENCE).await.unwrap().is_admitted());
    assert_eq!(fences.highest(&r).await.unwrap(), Some(MAX_SQL_FENCE));
    assert!(
        !fences
            .admit(&r, MAX_SQL_FENCE - 1)
            .await
            .unwrap()
            .is_admitted()
    );
}

/// Finds the [`FenceError`] inside a `StoreError`.
trait SourceFence {
    fn source_fence_error(&self) -> Option<&FenceError>;
}

impl SourceFence for leasehold::store::StoreError {
    fn source_fence_error(&self) -> Option<&FenceError> {
        std::error::Error::source(self)?.downcast_ref::<FenceError>()
    }
}

/// Two writers of one resource at once, a lower and a higher fence, each with its own pool (two
/// processes): the higher always lands, and the lower lands only before it, never after.
async fn racing_writers_never_land_lower_after_higher<DB: Database>(url: String)
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let (a, b) = (store(&url).await, store(&url).await);
    values_table(a.pool()).await;
    let (low, high) = (SqlFences::new(&a), SqlFences::new(&b));
    let r = resource("race");
    let name = r.as_str();
    let (mut low_landed, mut low_refused) = (0, 0);
    for round in 0..30_u64 {
        let (lo, hi) = (round * 2 + 1, round * 2 + 2);
        let (l, h) = tokio::join!(
            async {
                let mut w = low.fenced_by_fence::<DB>(&r, lo).await?;
                put::<DB>(&mut w, name, lo as i64).await.map_err(db_error)?;
                w.commit().await
            },
            async {
                let mut w = high.fenced_by_fence::<DB>(&r, hi).await?;
                put::<DB>(&mut w, name, hi as i64).await.map_err(db_error)?;
                w.commit().await
            }
        );
        h.unwrap_or_else(|e| panic!("round {round}: the higher fence {hi} was refused: {e}"));
        match l {
            Ok(()) => low_landed += 1,
            Err(FenceError::Stale(s)) => {
                assert_eq!((s.fence, s.highest), (lo, hi), "round {round}");
                low_refused += 1;
            }
            Err(e) => panic!("round {round}: {e}"),
        }
        assert_eq!(
            value(a.pool(), name).await,
            Some(hi as i64),
            "round {round}: the value after both writes must be the higher writer's"
        );
        assert_eq!(high.highest(&r).await.unwrap(), Some(hi));
    }
    assert_eq!(low_landed + low_refused, 30);
}

fn db_error(e: sqlx::Error) -> FenceError {
    FenceError::Store(leasehold::store::StoreError::permanent(e.to_string()))
}

/// The upsert takes the row lock: a lower writer that comes while a higher one's transaction is
/// open waits for its commit, then is refused; a higher writer that comes after a lower one's
/// waits too, then lands.
async fn a_lower_writer_waits_for_the_higher_commit<DB: Database>(url: String) {
    let (a, b) = (store(&url).await, store(&url).await);
    let (first, second) = (SqlFences::new(&a), SqlFences::new(&b));
    let r = resource("wait");
    assert!(
        first.admit(&r, 1).await.unwrap().is_admitted(),
        "the row exists"
    );

    let open = first.fenced_by_fence::<DB>(&r, 10).await.unwrap();
    let mut lower = Box::pin(second.fenced_by_fence::<DB>(&r, 5));
    let waited = tokio::time::timeout(Duration::from_millis(300), &mut lower).await;
    assert!(
        waited.is_err(),
        "the lower writer must wait for the open transaction"
    );
    open.commit().await.unwrap();
    let e = lower
        .await
        .expect_err("refused once the higher fence committed");
    assert!(
        matches!(&e, FenceError::Stale(s) if s.highest == 10),
        "{e:?}"
    );

    let open = first.fenced_by_fence::<DB>(&r, 10).await.unwrap();
    let mut higher = Box::pin(second.fenced_by_fence::<DB>(&r, 11));
    let waited = tokio::time::timeout(Duration::from_millis(300), &mut higher).await;
    assert!(waited.is_err(), "the higher writer waits too");
    open.rollback().await.unwrap();
    let w = higher.await.expect("admitted after the rollback");
    assert_eq!(w.previous(), Some(10));
    w.commit().await.unwrap();
    assert_eq!(first.highest(&r).await.unwrap(), Some(11));
}

/// Two processes (pools) creating a fresh fence table at once both succeed, and so does a
/// third run; the trigger is there once.
async fn racing_processes_create_the_schema<DB: Database>(url: String) {
    let (a, b) = (store(&url).await, store(&url).await);
    let table = unique("fences");
    let fa = SqlFences::new(&a).table(&table).unwrap();
    let fb = SqlFences::new(&b).table(&table).unwrap();
    let (ra, rb) = tokio::join!(fa.migrate(), fb.migrate());
    ra.expect("first creator");
    rb.expect("second creator");
    SqlFences::new(&a)
        .table(&table)
        .unwrap()
        .migrate()
        .await
        .expect("again");
    assert!(fa.is_protected(&table, "fence").await.unwrap());
    let r = resource("schema");
    assert!(fb.admit(&r, 3).await.unwrap().is_admitted());
    assert!(!fa.admit(&r, 2).await.unwrap().is_admitted());

    // With schema creation off, a missing table is an error that says how to create it.
    let missing = SqlFences::new(&a)
        .table(unique("missing"))
        .unwrap()
        .create_schema(false);
    let e = missing.migrate().await.expect_err("no table");
    assert!(e.to_string().contains("CREATE TABLE IF NOT EXISTS"), "{e}");
    drop_fence_table::<DB>(&a, &table).await;
}

async fn drop_fence_table<DB: Database>(store: &SqlStore, table: &str) {
    exec(store.pool(), &format!("DROP TABLE {table}"))
        .await
        .unwrap();
    if DB::NAME == "PostgreSQL" {
        exec(
            store.pool(),
            &format!("DROP FUNCTION {table}_fence_guard()"),
        )
        .await
        .unwrap();
    }
}

async fn a_users_column_is_protected<DB: Database>(url: String) {
    let store = store(&url).await;
    let fences = SqlFences::new(&store);
    let table = unique("reports");
    exec(
        store.pool(),
        &format!(
            "CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, total BIGINT NOT NULL, \
             last_fence BIGINT NULL)"
        ),
    )
    .await
    .unwrap();
    assert!(!fences.is_protected(&table, "last_fence").await.unwrap());
    fences.protect_column(&table, "last_fence").await.unwrap();
    fences
        .protect_column(&table, "last_fence")
        .await
        .expect("idempotent");
    assert!(fences.is_protected(&table, "last_fence").await.unwrap());

    let pool = store.pool();
    exec(
        pool,
        &format!("INSERT INTO {table} (id, total) VALUES (1, 0)"),
    )
    .await
    .unwrap();
    let update = |total: i64, fence: &str| {
        format!("UPDATE {table} SET total = {total}, last_fence = {fence} WHERE id = 1")
    };
    exec(pool, &update(1, "5")).await.expect("first fence");
    exec(pool, &update(2, "5"))
        .await
        .expect("the same holder again");
    let e = exec(pool, &update(3, "4")).await.expect_err("lower");
    assert!(is_stale_fence_error(&e), "{e}");
    assert!(
        e.to_string().contains(&format!("{table}.last_fence")),
        "{e}"
    );
    let e = exec(pool, &update(3, "NULL")).await.expect_err("cleared");
    assert!(is_stale_fence_error(&e), "{e}");
    exec(pool, &update(4, "6")).await.expect("higher");
    let total = scalar(pool, &format!("SELECT total FROM {table} WHERE id = 1")).await;
    assert_eq!(total, Some(4), "the refused updates changed nothing");
    // Updates that do not set the column are not checked: the documented rule.
    exec(pool, &format!("UPDATE {table} SET total = 5 WHERE id = 1"))
        .await
        .unwrap();

    // Names that are not plain identifiers are refused before anything is sent.
    for (t, c) in [
        ("reports; DROP TABLE x", "last_fence"),
        (table.as_str(), "last_fence; DROP TABLE x"),
        (table.as_str(), ""),
        ("a.b.c", "fence"),
    ] {
        let e = fences
            .protect_column(t, c)
            .await
            .expect_err("bad identifier");
        assert!(
            matches!(e, FenceError::Table(_) | FenceError::Column(_)),
            "{t}.{c}: {e:?}"
        );
        assert!(
            e.to_string().contains("[A-Za-z_][A-Za-z0-9_]*") || e.to_string().contains("'.'"),
            "{e}"
        );
    }
    let long = "c".repeat(fences.dialect().max_name_len() + 1);
    let e = fences.protect_column(&table, &long).await.unwrap_err();
    assert!(e.to_string().contains("at most"), "{e}");
    assert!(SqlFences::new(&store).table("x y").is_err());
    exec(pool, &format!("DROP TABLE {table}")).await.unwrap();
    if DB::NAME == "PostgreSQL" {
        exec(pool, &format!("DROP FUNCTION {table}_last_fence_guard()"))
            .await
            .unwrap();
    }
}
