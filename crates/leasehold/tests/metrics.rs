//! The documented metric names, with a `lock` label, recorded through the `metrics` facade.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, MemoryStore, metrics as m};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[test]
fn elections_record_counters_histograms_and_the_active_gauge() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        rt.block_on(async {
            let store = Arc::new(MemoryStore::new());
            let opts = ElectionOptions::builder()
                .wait(Duration::ZERO)
                .lease(Duration::from_millis(300))
                .auto_extend(false);
            let e = Elector::with_options(store, opts.clone().auto_extend(true).build().unwrap());
            e.run_if_leader("job", |_| tokio::time::sleep(Duration::from_millis(250)))
                .await
                .unwrap();
            let held = e.try_acquire("job").await.unwrap().elected().unwrap();
            assert!(
                e.run_if_leader("job", |_| async {})
                    .await
                    .unwrap()
                    .is_none()
            );
            held.release().await.unwrap();
            let failing = e
                .run("job", |_| async { Err::<(), _>("no") })
                .await
                .unwrap();
            assert!(!failing.is_taken());
            let plain = e.reconfigured(opts.build().unwrap());
            let lost = plain.try_acquire("job").await.unwrap().elected().unwrap();
            lost.lost().await;
            drop(lost);
            tokio::task::yield_now().await;
        })
    });
    let snapshot = snapshotter.snapshot().into_vec();
    let value = |name: &str, extra: Option<(&str, &str)>| {
        snapshot
            .iter()
            .filter(|(k, ..)| {
                let key = k.key();
                key.name() == name
                    && key
                        .labels()
                        .any(|l| l.key() == "lock" && l.value() == "job")
                    && extra.is_none_or(|(ek, ev)| {
                        key.labels().any(|l| l.key() == ek && l.value() == ev)
                    })
            })
            .map(|(.., v)| match v {
                DebugValue::Counter(c) => *c as f64,
                DebugValue::Gauge(g) => g.into_inner(),
                DebugValue::Histogram(h) => h.len() as f64,
            })
            .sum::<f64>()
    };
    assert_eq!(value(m::ATTEMPTS, None), 5.0);
    assert_eq!(value(m::ACQUIRED, None), 4.0);
    assert_eq!(value(m::NOT_ACQUIRED, Some(("reason", "contention"))), 1.0);
    assert_eq!(value(m::ACQUIRE_SECONDS, None), 4.0);
    assert_eq!(value(m::ACTION_SECONDS, None), 2.0, "two actions ran");
    assert_eq!(value(m::ACTION_FAILURES, None), 1.0);
    assert!(
        value(m::EXTENDED, None) >= 2.0,
        "auto-extension renewals counted"
    );
    assert_eq!(value(m::LOST, Some(("reason", "deadline"))), 1.0);
    assert_eq!(value(m::RELEASED, None), 4.0);
    assert_eq!(
        value(m::ACTIVE, None),
        0.0,
        "every acquisition was released"
    );
}
