//! Redis store URLs: unknown parameters are refused (a typo such as `prefx=` once silently used
//! the default prefix, so two applications shared their locks), values are percent-decoded, a
//! URL without a host is refused, and none of it shows the password.

mod common;

use std::time::Duration;

use leasehold::LeaseStore;
use leasehold::store::AcquireRequest;
use leasehold::{
    LockName,
    store::{OpenError, StoreRegistry, Token},
};
use leasehold_redis::{RedisOpener, RedisStore};

fn authority(url: &str) -> &str {
    url.split_once("://")
        .map_or(url, |(_, rest)| rest.trim_end_matches('/'))
}

#[tokio::test]
async fn unknown_repeated_and_hostless_urls_are_refused_before_connecting() {
    let registry = StoreRegistry::new().with(RedisOpener::new());
    for (url, says) in [
        (
            "redis://:hunter2@127.0.0.1:1?prefx=jobs",
            "unknown parameter \"prefx\"; known parameters are prefix",
        ),
        (
            "redis://:hunter2@127.0.0.1:1?prefix=a&prefix=b",
            "more than once",
        ),
        (
            "redis://:hunter2@127.0.0.1:1?db=2",
            "unknown parameter \"db\"",
        ),
        (
            "redis://:hunter2@127.0.0.1:1?response_timeout=soon",
            "response_timeout",
        ),
        ("redis://?prefix=a", "a host is required"),
        ("rediss://", "a host is required"),
        ("valkey:", "a host is required"),
        ("redis://:hun/ter2@127.0.0.1:1", "percent-encode"),
        ("redis://:hun?ter2@127.0.0.1:1", "percent-encode"),
    ] {
        let err = registry.open(url).await.err();
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
    }
}

#[tokio::test]
async fn decoded_prefixes_keep_applications_apart() {
    let Some(url) = common::url() else { return };
    let base = format!("redis://{}", authority(&url));
    let token = Token::random().to_hex();
    let a = RedisStore::connect(&format!(
        "{base}?prefix=lhtest%3Aurls-a-{token}&protocol=resp3"
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let b = RedisStore::connect(&format!("{base}?prefix=lhtest:urls-b-{token}"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        format!("{a:?}").contains(&format!("lhtest:urls-a-{token}")),
        "{a:?}"
    );
    let lock = LockName::new("urls").unwrap_or_else(|e| panic!("{e}"));
    let request = |owner: &str| {
        AcquireRequest::new(
            lock.clone(),
            1,
            owner,
            Token::random(),
            Duration::from_secs(5),
        )
    };
    let held = a
        .try_acquire(&request("node-a"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .elected();
    assert!(held.is_some());
    // The other prefix is another application: the same lock is free there (under one
    // prefix, another node's request would find it held).
    let other = b
        .try_acquire(&request("node-b"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .elected();
    assert!(other.is_some());
    let same = a
        .try_acquire(&request("node-c"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .elected();
    assert!(same.is_none());
    for (store, lease) in [(&a, held), (&b, other)] {
        if let Some(lease) = lease {
            store
                .release(&lease, Duration::ZERO)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
