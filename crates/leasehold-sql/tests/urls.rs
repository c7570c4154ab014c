//! Store URLs at the edge: the legitimate forms of every dialect still open against the real
//! servers, and a URL without a host, with an unknown parameter or with a password that is not
//! encoded fails as an invalid URL without a connection attempt and without showing the password.

mod common;

use std::time::{Duration, Instant};

use leasehold::{LeaseStore, store::OpenError};
use leasehold_sql::SqlStore;

/// `base` with its query replaced by `query` (`base` has none).
fn with_query(base: &str, query: &str) -> String {
    format!("{}?{query}", base.trim_end_matches('/'))
}

#[tokio::test]
async fn legitimate_forms_open() {
    let sqlite = common::sqlite_url("urls");
    let mut urls = vec![
        with_query(&sqlite, "mode=rwc"),
        "sqlite::memory:".to_owned(),
        "sqlite://?mode=memory".to_owned(),
    ];
    if let Some(pg) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        urls.push(with_query(
            &pg,
            "sslmode=disable&application_name=leasehold-urls",
        ));
        // The host as a parameter (the form a Unix socket directory takes).
        if let Some(path) = pg.rsplit_once('/').map(|(_, db)| db.to_owned()) {
            let host = pg
                .split_once('@')
                .map_or("127.0.0.1:5432", |(_, h)| h.split('/').next().unwrap_or(""));
            let (host, port) = host.split_once(':').unwrap_or((host, "5432"));
            let user = pg
                .split_once("://")
                .and_then(|(_, r)| r.split_once('@'))
                .map_or("postgres", |(u, _)| u);
            urls.push(format!(
                "postgres:///{path}?host={host}&port={port}&user={user}"
            ));
        }
    }
    if let Some(my) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        urls.push(with_query(&my, "ssl-mode=disabled&charset=utf8mb4"));
        urls.push(my.replacen("mysql:", "mariadb:", 1));
    }
    for url in urls {
        let store = SqlStore::connect_with(&url, common::options())
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(!store.describe().is_empty());
    }
}

#[tokio::test]
async fn bad_urls_fail_at_once_as_invalid_and_hide_the_password() {
    for (url, says) in [
        ("postgres:/", "a host is required"),
        ("postgres:", "a host is required"),
        ("postgres:///test", "a host is required"),
        ("mysql://", "a host is required"),
        ("mariadb:/test", "a host is required"),
        ("sqlite:", "sqlite:///ABSOLUTE/PATH.db"),
        (
            "postgres://u:hunter2@127.0.0.1:1/x?sslmdoe=require",
            "known parameters are sslmode",
        ),
        (
            "mysql://u:hunter2@127.0.0.1:1/x?prefix=a",
            "unknown parameter \"prefix\"",
        ),
        ("postgres://u:hun/ter2@127.0.0.1:1/x", "percent-encode"),
        ("postgres://u:hun?ter2@127.0.0.1:1/x", "percent-encode"),
        ("mysql://u:hun#ter2@127.0.0.1:1/x", "percent-encode"),
    ] {
        let started = Instant::now();
        let err = SqlStore::connect(url).await.err();
        let text = err.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            matches!(err, Some(OpenError::Invalid { .. })),
            "{url}: {text}"
        );
        assert!(text.contains(says), "{url}: {text}");
        assert!(
            !text.contains("hunter2") && !text.contains("ter2"),
            "{url}: {text}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{url}: connected?"
        );
    }
}

/// An SQLite file in a directory that does not exist: the error names the directory (SQLite
/// itself only says "unable to open database file").
#[tokio::test]
async fn a_missing_sqlite_directory_is_named() {
    let dir = std::env::temp_dir().join(format!(
        "leasehold-missing-{}",
        leasehold::store::Token::random().to_hex()
    ));
    let url = format!("sqlite://{}", dir.join("leases.db").display());
    let err = leasehold_sql::SqlStore::connect(&url)
        .await
        .expect_err("no such directory")
        .to_string();
    assert!(
        err.contains(&format!(
            "the directory {} of the SQLite file does not exist",
            dir.display()
        )),
        "{err}"
    );
    assert!(!dir.exists(), "nothing was created");
}

/// The directory is not named when the URL holds a secret that could be part of the path.
#[tokio::test]
async fn a_missing_directory_is_not_named_from_a_url_with_a_password() {
    let url = "sqlite://:Hunt/Er2@127.0.0.1:1";
    let err = leasehold_sql::SqlStore::connect(url)
        .await
        .expect_err("no such file")
        .to_string();
    assert!(!err.contains("Hunt") && !err.contains("Er2"), "{err}");
}
