//! The testkit's paused-stale-holder scenario against a real Redis: the fenced `SET` must refuse
//! every holder frozen past its lease once its successor wrote. The locks live in the same Redis.

#![cfg(feature = "fence")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use leasehold_redis::RedisStore;
use leasehold_redis::fence::sinks::FencedSetSink;
use leasehold_testkit::stale_holder::{self, StaleHolderConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fenced_set_refuses_paused_stale_holders() {
    let Some(url) = common::url() else { return };
    let options = common::options();
    let keys = RedisStore::connect_lazy(&url, options.clone())
        .unwrap()
        .fenced_keys();
    let sink = FencedSetSink::new(keys, format!("{}:data:", options.prefix()));
    let config = StaleHolderConfig {
        rounds: 300,
        ..StaleHolderConfig::default()
    };
    let report = stale_holder::run(&common::factory(url), &sink, &config).await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.rounds, 300);
    assert!(report.expired > 0, "{report}");
    assert!(report.stale_rejected > 0, "{report}");
    assert_eq!(report.stale_accepted, 0, "{report}");
}
