//! Where the test databases are, and factories of store clients for the testkit.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::print_stderr)]

pub mod fence;

use std::sync::Arc;
use std::time::Duration;

use leasehold::LeaseStore;
use leasehold_sql::{SqlOptions, SqlStore};

/// The URL in `var`, or `None` to skip. With `CI` set a missing server fails the run.
pub fn url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set; scripts/test starts the server and sets it")
        }
        _ => {
            eprintln!("skipping: {var} is not set (run scripts/test to start the servers)");
            None
        }
    }
}

/// A fresh SQLite file for one test.
pub fn sqlite_url(tag: &str) -> String {
    let dir = std::env::temp_dir().join("leasehold-sql-tests");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!(
        "{tag}-{}-{}.db",
        std::process::id(),
        leasehold::store::Token::random().to_hex()
    ));
    format!("sqlite://{}", file.display())
}

pub fn options() -> SqlOptions {
    SqlOptions::default()
        .with_max_connections(4)
        .with_connect_timeout(Duration::from_secs(10))
}

/// A factory making a new store (its own pool) per call, as separate nodes would have.
pub fn factory(url: String) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    move || {
        Arc::new(SqlStore::connect_lazy(&url, options()).expect("valid URL")) as Arc<dyn LeaseStore>
    }
}
