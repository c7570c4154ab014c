//! The period ledger through the core API (memory store, paused time).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, Event, MemoryStore, Outcome, Period, error::PeriodError,
};

fn elector(store: &Arc<MemoryStore>, node: &str, wait: Duration) -> Elector {
    let options = ElectionOptions::builder()
        .node_id(node)
        .wait(wait)
        .build()
        .unwrap();
    Elector::with_options(store.clone(), options)
}

fn hourly() -> Period {
    Period::every(Duration::from_secs(3600)).unwrap()
}

/// A second run in the same period is AlreadyRan at once, with the record, even for an
/// elector that would wait an hour; the next period runs again.
#[tokio::test(start_paused = true)]
async fn already_ran_is_immediate_and_the_next_period_runs() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "node-a", Duration::ZERO);
    let b = elector(&store, "node-b", Duration::from_secs(3600));
    let period = Period::every(Duration::from_secs(10)).unwrap();
    let first = a
        .run_once_per("job", period, |ctx| async move {
            Ok::<_, String>(ctx.lease().period)
        })
        .await
        .unwrap();
    let Some(Some(id)) = first.clone().elected() else {
        panic!("{first:?}");
    };
    let mut events = b.subscribe();
    let started = tokio::time::Instant::now();
    let second = b
        .run_once_per("job", period, |_| async { Ok::<_, String>(None::<i64>) })
        .await
        .unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no waiting on AlreadyRan"
    );
    let record = second.already_ran().cloned().expect("AlreadyRan");
    assert_eq!((record.period, record.by.as_str()), (id, "node-a"));
    assert!(matches!(events.try_recv(), Ok(Event::AlreadyRan { record: r, .. }) if r == record));

    tokio::time::sleep(Duration::from_secs(10)).await;
    let third = b
        .run_once_per("job", period, |ctx| async move {
            Ok::<_, String>(ctx.lease().period)
        })
        .await
        .unwrap();
    assert_eq!(third, Outcome::Elected(Some(id + 1)));
}

/// A failed action used its period; a held lock without a record is Skipped.
#[tokio::test(start_paused = true)]
async fn failures_use_the_period_and_contention_is_skipped() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "node-a", Duration::ZERO);
    let held = a.try_acquire("job").await.unwrap().elected().unwrap();
    let skipped = a
        .run_once_per("job", hourly(), |_| async { Ok::<_, String>(()) })
        .await
        .unwrap();
    assert!(skipped.is_taken(), "{skipped:?}");
    held.release().await.unwrap();
    let failed = a
        .run_once_per("job", hourly(), |_| async {
            Err::<(), _>("boom".to_owned())
        })
        .await
        .unwrap();
    assert_eq!(failed, Outcome::ActionFailed("boom".to_owned()));
    let again = a
        .run_once_per("job", hourly(), |_| async { Ok::<_, String>(()) })
        .await
        .unwrap();
    assert!(again.already_ran().is_some(), "{again:?}");
    assert!(a.state("job").await.unwrap().is_free());
}

/// `try_acquire_for` hands out the guard, or says why not.
#[tokio::test(start_paused = true)]
async fn try_acquire_for_tells_held_from_already_ran() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "node-a", Duration::ZERO);
    let b = elector(&store, "node-b", Duration::ZERO);
    let plain = b.try_acquire("job").await.unwrap().elected().unwrap();
    assert!(a.try_acquire_for("job", hourly()).await.unwrap().is_taken());
    plain.release().await.unwrap();
    let guard = a
        .try_acquire_for("job", hourly())
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert!(guard.lease().period.is_some());
    match b.try_acquire_for("job", hourly()).await.unwrap() {
        Outcome::AlreadyRan(record) => assert_eq!(record.by, "node-a"),
        other => panic!("expected AlreadyRan, got {other:?}"),
    }
    guard.release().await.unwrap();
}

#[test]
fn the_blocking_facade_runs_once_per_period() {
    let store = Arc::new(MemoryStore::new());
    let a = leasehold::blocking::Elector::from_async(elector(&store, "node-a", Duration::ZERO))
        .unwrap();
    let b = leasehold::blocking::Elector::from_async(elector(&store, "node-b", Duration::ZERO))
        .unwrap();
    let first = a
        .run_once_per("job", hourly(), |_| Ok::<_, String>(1))
        .unwrap();
    assert_eq!(first, Outcome::Elected(1));
    let second = b
        .run_once_per("job", hourly(), |_| Ok::<_, String>(2))
        .unwrap();
    assert_eq!(second.already_ran().map(|r| r.by.as_str()), Some("node-a"));
}

#[test]
fn bad_periods_say_what_is_allowed() {
    let e = Period::every(Duration::ZERO).unwrap_err();
    assert!(matches!(e, PeriodError::TooShort { .. }));
    assert!(e.to_string().contains("MIN_PERIOD"), "{e}");
    let e = Period::every(Duration::from_secs(60))
        .unwrap()
        .offset(Duration::from_secs(90))
        .unwrap_err();
    assert!(matches!(e, PeriodError::OffsetNotBelowLength { .. }), "{e}");
}
