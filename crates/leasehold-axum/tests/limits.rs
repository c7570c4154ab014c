//! Durations beyond `leasehold::limits::MAX_DURATION` are startup errors for leader-only jobs and
//! leader-only routes, never a panic later.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    CancellationToken, Elector, MemoryStore,
    limits::{LimitError, MAX_DURATION},
};
use leasehold_axum::{Error, LeaderJobs, LeaderOnly};

const OVER: Duration = Duration::from_secs(MAX_DURATION.as_secs() + 1);

fn limit(e: Result<impl std::fmt::Debug, Error>, what: &str) {
    let e = e.expect_err(what);
    let msg = e.to_string();
    assert!(
        matches!(
            &e,
            Error::Leasehold(leasehold::Error::Limit(LimitError::DurationTooLong { .. }))
                | Error::Leasehold(leasehold::Error::Options(
                    leasehold::error::OptionsError::Limit(LimitError::DurationTooLong { .. })
                ))
        ),
        "{what}: {e:?}"
    );
    assert!(msg.contains(what) && msg.contains("MAX_DURATION"), "{msg}");
}

#[tokio::test]
async fn jobs_and_leader_only_reject_durations_beyond_the_maximum() {
    let elector = Elector::new(Arc::new(MemoryStore::new()));
    let noop = |_| async { Ok::<_, String>(()) };
    limit(
        LeaderJobs::new(elector.clone())
            .every("sweep", OVER, noop)
            .start(CancellationToken::new()),
        "period",
    );
    limit(
        LeaderJobs::new(elector.clone())
            .every("sweep", Duration::from_secs(1), noop)
            .grace_period(Duration::MAX)
            .start(CancellationToken::new()),
        "grace_period",
    );
    limit(
        LeaderOnly::builder(&elector, "writer")
            .retry_after(Duration::MAX)
            .start(CancellationToken::new()),
        "retry_after",
    );
    limit(
        LeaderOnly::builder(&elector, "writer")
            .retry_interval(OVER)
            .start(CancellationToken::new()),
        "retry_interval",
    );
    let token = CancellationToken::new();
    let jobs = LeaderJobs::new(elector)
        .every("sweep", MAX_DURATION, noop)
        .grace_period(MAX_DURATION)
        .start(token.clone())
        .expect("the maximum itself is allowed");
    token.cancel();
    jobs.stopped().await;
}

#[tokio::test]
async fn leader_only_rejects_a_retry_interval_below_the_poll_minimum() {
    let elector = Elector::new(Arc::new(MemoryStore::new()));
    for interval in [Duration::ZERO, Duration::from_millis(9)] {
        let e = LeaderOnly::builder(&elector, "writer")
            .retry_interval(interval)
            .start(CancellationToken::new())
            .expect_err("a busy loop is refused");
        assert!(
            matches!(
                &e,
                Error::Leasehold(leasehold::Error::Limit(LimitError::DurationTooShort { .. }))
            ),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("retry_interval") && msg.contains("MIN_LEADERSHIP_POLL"),
            "{msg}"
        );
    }
    let token = CancellationToken::new();
    let writer = LeaderOnly::builder(&elector, "writer")
        .retry_interval(leasehold::limits::MIN_LEADERSHIP_POLL)
        .start(token.clone())
        .expect("the minimum itself is allowed");
    token.cancel();
    drop(writer);
}
