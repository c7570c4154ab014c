//! The limits (`leasehold::limits`): every builder rejects values beyond them with a typed error,
//! and the electors run at the largest allowed values on paused time without panicking.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, Error, Job, MemoryStore, RetryPolicy, Schedule,
    error::OptionsError,
    limits::{LimitError, MAX_DURATION, MAX_NODE_ID_LEN, MAX_SLOTS},
};
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

const OVER: Duration = Duration::from_secs(MAX_DURATION.as_secs() + 1);

fn too_long(e: Result<impl std::fmt::Debug, OptionsError>, what: &str, value: Duration) {
    match e {
        Err(OptionsError::Limit(LimitError::DurationTooLong {
            what: got,
            value: v,
            max,
        })) => {
            assert_eq!((got, v, max), (what, value, MAX_DURATION));
        }
        other => panic!("{what} = {value:?}: expected DurationTooLong, got {other:?}"),
    }
}

#[test]
fn every_duration_option_has_the_same_maximum() {
    let b = ElectionOptions::builder;
    for value in [OVER, Duration::MAX] {
        too_long(b().wait(value).build(), "wait", value);
        too_long(b().lease(value).build(), "lease", value);
        too_long(
            ElectionOptions::builder().wait(value).build(),
            "wait",
            value,
        );
        too_long(
            ElectionOptions::builder().lease(value).build(),
            "lease",
            value,
        );
        too_long(
            RetryPolicy::new(Duration::from_millis(1), value, 0.5),
            "retry max pause",
            value,
        );
    }
    // min_lease beyond the maximum is named as such (not as "exceeds the lease").
    too_long(
        b().lease(MAX_DURATION).min_lease(OVER).build(),
        "min_lease",
        OVER,
    );
    let max = b()
        .wait(MAX_DURATION)
        .lease(MAX_DURATION)
        .min_lease(MAX_DURATION)
        .retry(RetryPolicy::new(Duration::from_millis(1), MAX_DURATION, 0.5).unwrap())
        .build()
        .expect("the maximum itself is allowed");
    assert_eq!(max.wait(), MAX_DURATION);
    let msg = b().wait(Duration::MAX).build().unwrap_err().to_string();
    assert!(
        msg.contains("wait") && msg.contains("36500d") && msg.contains("MAX_DURATION"),
        "{msg}"
    );
}

#[test]
fn max_leaders_is_bounded_by_max_slots() {
    assert_eq!(
        ElectionOptions::builder()
            .max_leaders(MAX_SLOTS)
            .build()
            .map(|o| o.max_leaders()),
        Ok(MAX_SLOTS)
    );
    for n in [MAX_SLOTS + 1, u32::MAX] {
        assert_eq!(
            ElectionOptions::builder().max_leaders(n).build(),
            Err(OptionsError::Limit(LimitError::TooManySlots {
                slots: n,
                max: MAX_SLOTS
            }))
        );
    }
}

#[test]
fn node_ids_are_checked_for_length_and_content() {
    let b = ElectionOptions::builder;
    let longest = "é".repeat(MAX_NODE_ID_LEN / 2) + "x"; // 255 bytes, 128 characters
    assert_eq!(longest.len(), MAX_NODE_ID_LEN);
    assert_eq!(
        b().node_id(longest.clone()).build().unwrap().node_id(),
        longest
    );
    let long = "n".repeat(MAX_NODE_ID_LEN + 1);
    match b().node_id(long.clone()).build() {
        Err(OptionsError::Limit(LimitError::NodeIdTooLong { len, max, .. })) => {
            assert_eq!((len, max), (MAX_NODE_ID_LEN + 1, MAX_NODE_ID_LEN));
        }
        other => panic!("a 256-byte node id must be rejected, got {other:?}"),
    }
    let msg = ElectionOptions::builder()
        .node_id(long)
        .build()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("256") && msg.contains("255"), "{msg}");
    for bad in ["", "   ", "a\nb", "tab\there", "nul\0", "del\u{7f}"] {
        assert!(
            matches!(b().node_id(bad).build(), Err(OptionsError::BadNodeId(_))),
            "{bad:?}"
        );
    }
    assert!(leasehold::options::default_node_id().len() <= MAX_NODE_ID_LEN);
}

#[tokio::test]
async fn schedules_reject_periods_delays_and_grace_beyond_the_maximum() {
    let elector = Elector::new(Arc::new(MemoryStore::new()));
    let job = |period| Job::every("job", period, |_| async { Ok::<_, String>(()) });
    let cases = [
        (Schedule::new(elector.clone()).job(job(OVER)), "period"),
        (
            Schedule::new(elector.clone()).job(job(Duration::from_secs(1)).initial_delay(OVER)),
            "initial_delay",
        ),
        (
            Schedule::new(elector.clone())
                .job(job(Duration::from_secs(1)))
                .grace_period(Duration::MAX),
            "grace_period",
        ),
    ];
    for (schedule, what) in cases {
        match schedule.start(CancellationToken::new()) {
            Err(Error::Limit(LimitError::DurationTooLong { what: got, .. })) => {
                assert_eq!(got, what);
            }
            Err(other) => panic!("{what}: expected Error::Limit, got {other}"),
            Ok(_) => panic!("{what}: a schedule beyond MAX_DURATION must not start"),
        }
    }
}

/// With the largest wait, lease and minimum lease, auto-extension and a manual extension to the
/// maximum, on paused time: nothing panics, a contender waits (its deadline 100 years away) and
/// takes over once the holder lets go, and an extension beyond the maximum is a typed error.
#[tokio::test(start_paused = true)]
async fn electors_run_at_the_largest_allowed_durations() {
    let store = Arc::new(MemoryStore::new());
    let options = |node: &str| {
        ElectionOptions::builder()
            .node_id(node)
            .wait(MAX_DURATION)
            .lease(MAX_DURATION)
            .auto_extend(true)
            .build()
            .unwrap()
    };
    let a = Elector::with_options(store.clone(), options("a"));
    let b = Elector::with_options(store.clone(), options("b"));

    let guard = a
        .try_acquire("far")
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    let now = Instant::now();
    assert!(guard.local_deadline() > now + MAX_DURATION / 2);
    assert!(guard.extend(MAX_DURATION).await.is_ok());
    assert!(matches!(
        guard.extend(OVER).await,
        Err(Error::Limit(LimitError::DurationTooLong { .. }))
    ));
    assert!(!guard.is_lost());

    let waiter = tokio::spawn(async move { b.try_acquire("far").await });
    sleep(Duration::from_secs(3600)).await; // watchdog ticks far in the future: nothing due
    assert!(!waiter.is_finished(), "the lock is held for 100 years");
    guard.release().await.unwrap();
    let taken = timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the waiter is woken by the release")
        .unwrap()
        .unwrap()
        .elected()
        .expect("the waiter takes over");
    assert_eq!(taken.lease().owner, "b");
    taken.release().await.unwrap();

    // The largest minimum lease: release keeps the lock for 100 years, without overflow.
    let lingering = Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .wait(Duration::ZERO)
            .lease(MAX_DURATION)
            .min_lease(MAX_DURATION)
            .build()
            .unwrap(),
    );
    assert_eq!(
        lingering
            .run_if_leader("linger", |_| async { 1 })
            .await
            .unwrap(),
        Some(1)
    );
    assert!(!lingering.state("linger").await.unwrap().is_free());

    // The largest group.
    let group = Elector::with_options(
        store,
        ElectionOptions::builder()
            .max_leaders(MAX_SLOTS)
            .wait(Duration::ZERO)
            .lease(MAX_DURATION)
            .build()
            .unwrap(),
    );
    let mut guards = Vec::new();
    for _ in 0..3 {
        guards.push(
            group
                .try_acquire("wide")
                .await
                .unwrap()
                .elected()
                .expect("free slot"),
        );
    }
    let state = group.state("wide").await.unwrap();
    assert_eq!((state.slots, state.active()), (MAX_SLOTS, 3));
}
