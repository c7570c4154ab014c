//! Where the test ZooKeeper is, and factories of store clients for the testkit.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::LeaseStore;
use leasehold_zookeeper::{ZooKeeperOptions, ZooKeeperStore};

/// The variable naming the test server's URL (`zk://host:port`).
pub const URL_VAR: &str = "LEASEHOLD_TEST_ZOOKEEPER_URL";

/// The clock-skew tolerance in tests: one server, whose clock judges every lease, and the
/// conformance suite uses leases down to 300 ms, which must exceed twice the tolerance.
pub const SKEW: Duration = Duration::from_millis(100);

/// The URL, or `None` to skip (never under CI).
pub fn url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{URL_VAR} is not set; scripts/test starts ZooKeeper and sets it")
        }
        _ => {
            eprintln!("skipping: {URL_VAR} is not set (run scripts/test to start ZooKeeper)");
            None
        }
    }
}

/// Options with a node prefix unique to this test run, so runs sharing a server never meet.
pub fn options() -> ZooKeeperOptions {
    ZooKeeperOptions::default()
        .with_prefix(format!(
            "/lhtest-{}",
            &leasehold::store::Token::random().to_hex()[..12]
        ))
        .with_request_timeout(Duration::from_secs(2))
        .with_session_timeout(Duration::from_secs(6))
        .with_clock_skew_tolerance(SKEW)
}

/// A factory making a new store (its own session) per call, as separate nodes would have; all
/// share one prefix.
pub fn factory_with(
    url: String,
    options: ZooKeeperOptions,
) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    move || {
        Arc::new(ZooKeeperStore::connect_lazy(&url, options.clone()).expect("valid URL"))
            as Arc<dyn LeaseStore>
    }
}

/// [`factory_with`] the default test options.
pub fn factory(url: String) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    factory_with(url, options())
}

/// A free loopback port for a server this test starts (see [`leasehold_testkit::free_port`]).
pub fn free_port() -> u16 {
    leasehold_testkit::free_port().expect("a free port")
}
