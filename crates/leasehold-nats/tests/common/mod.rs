//! Where the test NATS server is, and factories of store clients for the testkit.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::LeaseStore;
use leasehold_nats::{NatsOptions, NatsStore};

/// The variable naming the test server's URL (`nats://127.0.0.1:42220`).
pub const URL_VAR: &str = "LEASEHOLD_TEST_NATS_URL";

/// The server's URL, or `None` to skip — but never under CI.
pub fn url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{URL_VAR} is not set; scripts/test starts nats-server and sets it")
        }
        _ => {
            eprintln!("skipping: {URL_VAR} is not set (run scripts/test to start nats-server)");
            None
        }
    }
}

/// Options with a bucket unique to this test run, so runs sharing a server never meet.
pub fn options() -> NatsOptions {
    NatsOptions::default()
        .with_bucket(format!(
            "lhtest-{}",
            &leasehold::store::Token::random().to_hex()[..12]
        ))
        .with_request_timeout(Duration::from_secs(2))
        .with_connect_timeout(Duration::from_secs(2))
}

/// A factory making a new store (its own connection) per call, as separate nodes would have;
/// all share one bucket.
pub fn factory_with(
    url: String,
    options: NatsOptions,
) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    move || {
        Arc::new(NatsStore::connect_lazy(&url, options.clone()).expect("valid URL"))
            as Arc<dyn LeaseStore>
    }
}

/// [`factory_with`] the default test options.
pub fn factory(url: String) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    factory_with(url, options())
}
