//! The testkit's paused-stale-holder scenario against a real etcd: the fenced transaction and
//! the fenced put must refuse every holder frozen past its lease once its successor wrote. The
//! locks live in the same etcd.

#![cfg(feature = "fence")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;

use leasehold_etcd::EtcdStore;
use leasehold_etcd::fence::sinks::FencedEtcdSink;
use leasehold_testkit::stale_holder::{self, StaleHolderConfig};

async fn run(sink: impl Fn(Arc<EtcdStore>, String) -> FencedEtcdSink) {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let url = common::url(&endpoints);
    let options = common::options();
    let store = Arc::new(EtcdStore::connect_lazy(&url, options.clone()).unwrap());
    let sink = sink(store, format!("{}-data/", options.prefix()));
    let config = StaleHolderConfig {
        rounds: 300,
        ..StaleHolderConfig::default()
    };
    let report = stale_holder::run(&common::factory_with(url, options), &sink, &config).await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.rounds, 300);
    assert!(report.expired > 0, "{report}");
    assert!(report.stale_rejected > 0, "{report}");
    assert_eq!(report.stale_accepted, 0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fenced_txn_refuses_paused_stale_holders() {
    run(FencedEtcdSink::txn).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fenced_put_refuses_paused_stale_holders() {
    run(FencedEtcdSink::put).await;
}
