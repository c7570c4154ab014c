//! Where the test emulator is, and factories of store clients for the testkit.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use leasehold::LeaseStore;
use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};
use tokio::sync::OnceCell;

#[cfg(feature = "fence")]
pub mod fence;

/// The table every test binary shares (lock names are unique per test).
pub const TABLE: &str = "leasehold_test_leases";

/// The clock-skew tolerance in tests: every client runs on this host, and the conformance suite
/// uses leases down to 300 ms, which must exceed twice the tolerance.
pub const SKEW: Duration = Duration::from_millis(100);

/// The emulator endpoint, or `None` to skip. With `CI` set a missing emulator fails the run.
pub fn endpoint() -> Option<String> {
    const VAR: &str = "LEASEHOLD_TEST_DYNAMODB_ENDPOINT";
    match std::env::var(VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{VAR} is not set; scripts/test starts dynalite and sets it")
        }
        _ => {
            eprintln!("skipping: {VAR} is not set (run scripts/test to start dynalite)");
            None
        }
    }
}

/// A new client (its own connection pool) of the endpoint. Credentials and region come from the
/// environment when set, else dummy values the emulator accepts.
pub fn client(endpoint: &str) -> Client {
    let env = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.to_owned());
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(env("AWS_REGION", "us-east-1")))
        .credentials_provider(Credentials::new(
            env("AWS_ACCESS_KEY_ID", "leasehold-test"),
            env("AWS_SECRET_ACCESS_KEY", "leasehold-test"),
            std::env::var("AWS_SESSION_TOKEN").ok(),
            None,
            "leasehold-tests",
        ))
        .endpoint_url(endpoint)
        .build();
    Client::from_conf(config)
}

/// The options tests use.
pub fn options() -> DynamoDbOptions {
    DynamoDbOptions::default()
        .with_table(TABLE)
        .with_clock_skew_tolerance(SKEW)
}

/// A store on a new client.
pub fn store(endpoint: &str) -> DynamoDbStore {
    DynamoDbStore::new(client(endpoint), options()).expect("valid options")
}

static TABLE_READY: OnceCell<()> = OnceCell::const_new();

/// Creates the shared test table once per test binary.
pub async fn ensure_table(endpoint: &str) {
    TABLE_READY
        .get_or_init(|| async {
            store(endpoint)
                .create_table()
                .await
                .expect("create the test table");
        })
        .await;
}

/// The emulator endpoint with the test table ready, or `None` to skip.
pub async fn ready() -> Option<String> {
    let endpoint = endpoint()?;
    ensure_table(&endpoint).await;
    Some(endpoint)
}

/// A factory making a new store (its own client) per call, as separate nodes would have.
pub fn factory(endpoint: String) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    move || Arc::new(store(&endpoint)) as Arc<dyn LeaseStore>
}
