//! The drivers are features (`sqlite`, `postgres`, `mysql`): a URL whose driver this build lacks
//! is refused at once, by `SqlStore` and through the store registry alike, with an error that
//! names the feature to enable (not "unknown scheme") and no secret of the URL; a URL whose
//! driver is compiled in is accepted. Runs with any set of features: scripts/test runs it with
//! no driver and with each driver alone, and the full suite runs it with all three.

use leasehold::store::{OpenError, StoreRegistry};
use leasehold_sql::{SqlOpener, SqlOptions, SqlStore};

/// Every scheme: (URL, with a password where it can have one; whether its driver is compiled
/// in; its feature).
const URLS: &[(&str, bool, &str)] = &[
    ("sqlite::memory:", cfg!(feature = "sqlite"), "sqlite"),
    (
        "postgres://app:hunter2@127.0.0.1:1/app",
        cfg!(feature = "postgres"),
        "postgres",
    ),
    (
        "postgresql://app:hunter2@127.0.0.1:1/app",
        cfg!(feature = "postgres"),
        "postgres",
    ),
    (
        "mysql://app:hunter2@127.0.0.1:1/app",
        cfg!(feature = "mysql"),
        "mysql",
    ),
    (
        "mariadb://app:hunter2@127.0.0.1:1/app",
        cfg!(feature = "mysql"),
        "mysql",
    ),
];

/// Checks that `result` refused `url` for lacking the driver of `feature`.
fn assert_missing_driver<T>(url: &str, feature: &str, result: Result<T, OpenError>) {
    let err = match result {
        Err(err @ OpenError::Invalid { .. }) => err,
        Err(other) => panic!("{url}: expected OpenError::Invalid, got {other:?}"),
        Ok(_) => panic!("{url}: opened without the `{feature}` driver"),
    };
    let text = err.to_string();
    assert!(
        text.contains("this build of leasehold-sql has no")
            && text.contains(&format!("enable the `{feature}` feature")),
        "{url}: {text}"
    );
    assert!(
        !text.contains("hunter2"),
        "{url}: the password is printed: {text}"
    );
}

#[tokio::test]
async fn a_url_without_its_driver_names_the_feature_to_enable() {
    let registry = StoreRegistry::new().with(SqlOpener::new());
    for &(url, compiled, feature) in URLS {
        let lazy = SqlStore::connect_lazy(url, SqlOptions::default());
        if compiled {
            // Nothing is contacted: the URL is only parsed and a pool built.
            assert!(lazy.is_ok(), "{url}: {lazy:?}");
            continue;
        }
        assert_missing_driver(url, feature, lazy);
        assert_missing_driver(url, feature, SqlStore::connect(url).await);
        assert_missing_driver(url, feature, registry.open(url).await);
    }
}
