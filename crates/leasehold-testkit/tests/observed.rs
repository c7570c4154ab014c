//! `leasehold::store::ObservedStore` changes nothing: the whole conformance suite passes through it, and
//! its observer sees every acquisition, extension and release with the answer the caller got.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::store::{AcquireRequest, StoreResult};
use leasehold::{
    ElectionOptions, Elector, Lease, LeaseStore, MemoryStore,
    store::{Extension, ObservedStore, Release, StoreObserver},
};
use leasehold_testkit::{SharedStore, conformance};

#[derive(Default)]
struct Tally {
    asked: AtomicU32,
    answers: Mutex<Vec<String>>,
}

impl StoreObserver for Tally {
    fn acquiring(&self, _req: &AcquireRequest) {
        self.asked.fetch_add(1, Ordering::SeqCst);
    }
    fn acquired(&self, _req: &AcquireRequest, answer: &StoreResult<leasehold::store::Acquisition>) {
        let word = match answer {
            Ok(leasehold::store::Acquisition::Elected(lease)) => format!("granted {}", lease.fence),
            Ok(_) => "busy".to_owned(),
            Err(e) => format!("error {e}"),
        };
        self.answers.lock().unwrap().push(word);
    }
    fn extended(&self, _lease: &Lease, ttl: Duration, answer: &StoreResult<Extension>) {
        let held = matches!(answer, Ok(Extension::Extended { .. }));
        self.answers
            .lock()
            .unwrap()
            .push(format!("extended {}s {held}", ttl.as_secs()));
    }
    fn released(&self, _lease: &Lease, _linger: Duration, answer: &StoreResult<Release>) {
        let word = match answer {
            Ok(Release::Released) => "released",
            Ok(Release::NotHeld) => "not held",
            Err(_) => "error",
        };
        self.answers.lock().unwrap().push(word.to_owned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_through_an_observed_store() {
    let observed = ObservedStore::new(Arc::new(MemoryStore::new()), Tally::default());
    let store = SharedStore::new(Arc::new(observed));
    let report = conformance::run_tests(&store, conformance::tests()).await;
    assert!(report.is_success(), "{report}");
}

#[tokio::test(start_paused = true)]
async fn the_observer_sees_each_call_with_its_answer() {
    let store = Arc::new(ObservedStore::new(
        Arc::new(MemoryStore::new()),
        Tally::default(),
    ));
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(30))
        .build()
        .unwrap();
    let elector = Elector::with_options(store.clone(), options);
    let guard = elector.try_acquire("job").await.unwrap().elected().unwrap();
    assert!(
        elector
            .try_acquire("job")
            .await
            .unwrap()
            .elected()
            .is_none()
    );
    guard.extend(Duration::from_secs(60)).await.unwrap();
    guard.release().await.unwrap();
    assert_eq!(store.observer().asked.load(Ordering::SeqCst), 2);
    assert_eq!(
        *store.observer().answers.lock().unwrap(),
        ["granted 1", "busy", "extended 60s true", "released"]
    );
    assert_eq!(store.describe(), "memory");
}
