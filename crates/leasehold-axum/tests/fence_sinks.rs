//! The paused stale holder (`leasehold_testkit::stale_holder`) against the HTTP sink: holders
//! frozen past their lease write after their successor, through a `Router` with the fence
//! layer, with locks on a `MemoryStore` and on SQLite.

#![cfg(feature = "fence")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::Arc;

use leasehold::fence::{FenceClaim, MemoryFences, ResourceName};
use leasehold::{Elector, LeaseStore, MemoryStore};
use leasehold_axum::fence::sinks::HttpSink;
use leasehold_sql::SqlStore;
use leasehold_testkit::SharedStore;
use leasehold_testkit::stale_holder::{self, FencedSink, StaleHolderConfig, StaleHolderReport};

const ROUNDS: usize = 300;

fn config() -> StaleHolderConfig {
    StaleHolderConfig {
        rounds: ROUNDS,
        ..StaleHolderConfig::default()
    }
}

fn check(report: &StaleHolderReport, sink: &HttpSink) {
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.rounds, ROUNDS as u64);
    assert!(report.expired > 0, "{report}");
    assert!(report.stale_rejected > 0, "{report}");
    assert_eq!(report.stale_accepted, 0, "{report}");
    assert_eq!(sink.layer().resources_in_use(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_holders_are_refused_with_locks_on_a_memory_store() {
    let factory = SharedStore::new(Arc::new(MemoryStore::new()));
    let sink = HttpSink::in_memory();
    let report = stale_holder::run(&factory, &sink, &config()).await;
    check(&report, &sink);
    assert_eq!(report.sink, "http (in-process fence register)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_holders_are_refused_with_locks_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}",
        dir.path().join("leases.db").to_str().unwrap()
    );
    // Creates the file and the lease table once; the scenario's two nodes then get a client
    // (a pool) of their own.
    drop(SqlStore::connect(&url).await.unwrap());
    let factory = move || -> Arc<dyn LeaseStore> {
        Arc::new(SqlStore::connect_lazy(&url, leasehold_sql::SqlOptions::default()).unwrap())
    };
    let sink = HttpSink::new(Arc::new(MemoryFences::new()));
    let report = stale_holder::run(&factory, &sink, &config()).await;
    check(&report, &sink);
}

/// The store-backed variant: the layer's register is the SQL fence table (`SqlFences`), shared by
/// every replica of a service, here on the SQLite file that also holds the locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_holders_are_refused_through_a_store_backed_register() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("app.db").to_str().unwrap());
    let store = SqlStore::connect(&url).await.unwrap();
    let register = Arc::new(leasehold_sql::SqlFences::new(&store));
    let factory = move || -> Arc<dyn LeaseStore> {
        Arc::new(SqlStore::connect_lazy(&url, leasehold_sql::SqlOptions::default()).unwrap())
    };
    let sink = HttpSink::new(register.clone());
    let report = stale_holder::run(&factory, &sink, &config()).await;
    check(&report, &sink);
    assert!(report.sink.contains("fence table"), "{}", report.sink);
    // The fences live in the table: a second service instance over the same database, with
    // a register of its own, refuses what the first one would.
    let resource = ResourceName::new(format!("stale-holder/{}", "x")).unwrap();
    let other = leasehold_sql::SqlFences::new(&store);
    use leasehold::fence::FenceRegister;
    assert!(other.admit(&resource, 10).await.unwrap().is_admitted());
    assert!(!register.admit(&resource, 9).await.unwrap().is_admitted());
}

#[tokio::test]
async fn the_sink_reads_back_what_it_accepted_and_refuses_a_stale_write() {
    let store = Arc::new(MemoryStore::new());
    let (a, b) = (Elector::new(store.clone()), Elector::new(store));
    let sink = HttpSink::in_memory();
    // Any resource name, also with slashes, spaces and non-ASCII characters.
    let resource = ResourceName::new("orders/42 주문").unwrap();
    assert_eq!(sink.read(&resource).await.unwrap(), None);

    let paused = a.try_acquire("orders").await.unwrap().elected().unwrap();
    b.force_release("orders").await.unwrap();
    let successor = b.try_acquire("orders").await.unwrap().elected().unwrap();
    assert!(sink.write(&resource, &successor, 2).await.unwrap());
    assert!(!sink.write(&resource, &paused, 1).await.unwrap());
    assert_eq!(sink.read(&resource).await.unwrap(), Some(2));
    assert_eq!(
        sink.layer().register().highest(&resource).await.unwrap(),
        Some(FenceClaim::of(&successor).fence)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_does_not_check_is_caught() {
    // The scenario is not vacuous: the same router over a register that remembers nothing
    // (so it admits every fence) fails it.
    #[derive(Debug)]
    struct Forgetful;
    #[leasehold::store::async_trait]
    impl leasehold::fence::FenceRegister for Forgetful {
        async fn admit(
            &self,
            resource: &ResourceName,
            fence: u64,
        ) -> leasehold::store::StoreResult<leasehold::fence::Admission> {
            Ok(leasehold::fence::Admission::decide(resource, fence, None))
        }
        async fn highest(
            &self,
            _resource: &ResourceName,
        ) -> leasehold::store::StoreResult<Option<u64>> {
            Ok(None)
        }
        fn describe(&self) -> String {
            "a register that remembers nothing".to_owned()
        }
    }
    let factory = SharedStore::new(Arc::new(MemoryStore::new()));
    let sink = HttpSink::new(Arc::new(Forgetful));
    let config = StaleHolderConfig {
        rounds: 50,
        expire_every: 0,
        ..StaleHolderConfig::default()
    };
    let report = stale_holder::run(&factory, &sink, &config).await;
    assert!(!report.passed(), "{report}");
    assert!(report.stale_accepted > 0, "{report}");
}
