//! Store options beyond the core's limits are rejected when the store is built.

mod common;

use std::time::Duration;

use leasehold::store::OpenError;
use leasehold_sql::{SqlOptions, SqlStore};

#[tokio::test]
async fn a_connect_timeout_beyond_the_maximum_is_rejected() {
    let url = common::sqlite_url("limits");
    let options = SqlOptions::default().with_connect_timeout(Duration::MAX);
    match SqlStore::connect_lazy(&url, options) {
        Err(OpenError::Invalid { reason, .. }) => {
            assert!(
                reason.contains("connect_timeout") && reason.contains("MAX_DURATION"),
                "{reason}"
            );
        }
        Err(other) => panic!("expected an invalid-options error, got {other}"),
        Ok(_) => panic!("a connect timeout of Duration::MAX must be rejected"),
    }
    let max = SqlOptions::default().with_connect_timeout(leasehold::limits::MAX_DURATION);
    assert!(SqlStore::connect_lazy(&url, max).is_ok());
}
