//! What is particular to DynamoDB: the item layout, the clock-skew rule, fences that survive TTL
//! deletion, key prefixes, error classification, and opening stores from URLs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;
use leasehold::store::AcquireRequest;
use leasehold::{
    ErrorKind, LeaseStore, LockName,
    store::{OpenError, Release, StoreRegistry, Token},
};
use leasehold_dynamodb::{DynamoDbOpener, DynamoDbStore, expressions as x};

fn request(lock: &LockName, slots: u32, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, "node-a", Token::random(), ttl)
}

fn lock(tag: &str) -> LockName {
    LockName::new(format!("{tag}-{}", Token::random().to_hex())).unwrap()
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

async fn raw_item(store: &DynamoDbStore, key: &str) -> Option<HashMap<String, AttributeValue>> {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, AttributeValue::S(key.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> u64 {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n.parse().unwrap(),
        other => panic!("{name}: {other:?}"),
    }
}

fn text<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s),
        None => None,
        other => panic!("{name}: {other:?}"),
    }
}

/// Writes an item directly, as another client (or a clock) would have left it.
async fn put_held(store: &DynamoDbStore, key: &str, fence: u64, lease_expiry: u64) {
    let item = [
        (x::LOCK_NAME, AttributeValue::S(key.to_owned())),
        (x::TOKEN, AttributeValue::S(Token::random().to_hex())),
        (x::OWNER, AttributeValue::S("elsewhere".into())),
        (x::FENCE, AttributeValue::N(fence.to_string())),
        (x::ACQUIRED_AT, AttributeValue::N("0".into())),
        (x::LEASE_EXPIRY, AttributeValue::N(lease_expiry.to_string())),
    ];
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(
            item.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        ))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn items_carry_the_documented_attributes_and_keep_the_fence_on_release() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store = common::store(&endpoint);
    let name = lock("layout");
    let before = now_ms();
    let lease = store
        .try_acquire(&request(&name, 1, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let item = raw_item(&store, name.as_str()).await.unwrap();
    assert_eq!(text(&item, x::OWNER), Some("node-a"));
    assert_eq!(text(&item, x::AUDIT_OWNER), Some("node-a"));
    assert_eq!(text(&item, x::TOKEN), Some(lease.token.to_hex().as_str()));
    assert!(text(&item, x::NODE_ID).is_some_and(|n| !n.is_empty()));
    let expiry = number(&item, x::LEASE_EXPIRY);
    assert!(expiry >= before + 10_000 && expiry <= now_ms() + 10_000);
    assert_eq!(
        number(&item, x::TTL),
        (expiry + u64::try_from(common::options().ttl_padding().as_millis()).unwrap())
            .div_ceil(1000),
        "ttl = leaseExpiry + padding, in seconds"
    );
    // A brand-new item's fence is seeded from the clock (ms × 1000), plus one.
    let fence = number(&item, x::FENCE);
    assert_eq!(fence, lease.fence);
    assert!(
        fence > before * 1000 && fence <= now_ms() * 1000 + 1,
        "{fence}"
    );

    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let item = raw_item(&store, name.as_str()).await.unwrap();
    assert_eq!(text(&item, x::TOKEN), None, "release removes the token");
    assert_eq!(text(&item, x::OWNER), None, "release removes the owner");
    assert_eq!(
        text(&item, x::AUDIT_OWNER),
        Some("node-a"),
        "audit owner kept"
    );
    assert_eq!(
        number(&item, x::FENCE),
        fence,
        "the item and its fence survive"
    );
    let next = store
        .try_acquire(&request(&name, 1, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(next.fence, fence + 1);
    store.release(&next, Duration::ZERO).await.unwrap();
}

#[tokio::test]
async fn fences_stay_monotonic_after_ttl_deletes_an_idle_item() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store = common::store(&endpoint);
    let name = lock("ttl-cleanup");
    let mut last = 0;
    for _ in 0..3 {
        let lease = store
            .try_acquire(&request(&name, 1, Duration::from_secs(10)))
            .await
            .unwrap()
            .elected()
            .unwrap();
        assert!(lease.fence > last);
        last = lease.fence;
        store.release(&lease, Duration::ZERO).await.unwrap();
    }
    // DynamoDB TTL deletes the idle item (here: by hand, as TTL would).
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, AttributeValue::S(name.as_str().to_owned()))
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let lease = store
        .try_acquire(&request(&name, 1, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert!(
        lease.fence > last,
        "a recreated item continues above the old fences: {} after {last}",
        lease.fence
    );
    store.release(&lease, Duration::ZERO).await.unwrap();
}

#[tokio::test]
async fn expiry_is_judged_with_the_clock_skew_tolerance() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    // A tolerance far above what a loaded machine takes for a few requests: the judgement
    // depends on the time between writing an expiry and the request that reads it.
    let tolerance = Duration::from_secs(2);
    let store = DynamoDbStore::new(
        common::client(&endpoint),
        common::options().with_clock_skew_tolerance(tolerance),
    )
    .unwrap();
    let skew = u64::try_from(tolerance.as_millis()).unwrap();
    // A lease that ended less than the tolerance ago (by this clock) may still be live by the
    // holder's clock: no takeover, and the state still shows it.
    let recent = lock("skew-recent");
    put_held(&store, recent.as_str(), 5, now_ms() - skew / 4).await;
    let req = request(&recent, 1, Duration::from_secs(10));
    assert!(store.try_acquire(&req).await.unwrap().elected().is_none());
    assert_eq!(store.state(&recent, 1).await.unwrap().active(), 1);
    // Once it ended more than the tolerance ago, it is taken over with the next fence.
    put_held(&store, recent.as_str(), 5, now_ms() - 2 * skew).await;
    let lease = store.try_acquire(&req).await.unwrap().elected().unwrap();
    assert_eq!(lease.fence, 6);
    store.release(&lease, Duration::ZERO).await.unwrap();

    let old = lock("skew-old");
    put_held(&store, old.as_str(), 41, now_ms() - 3 * skew).await;
    assert!(store.state(&old, 1).await.unwrap().is_free());
    let lease = store
        .try_acquire(&request(&old, 1, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(lease.fence, 42);
    store.release(&lease, Duration::ZERO).await.unwrap();
}

#[tokio::test]
async fn leases_no_longer_than_twice_the_tolerance_are_refused() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store = common::store(&endpoint);
    let err = store
        .try_acquire(&request(&lock("short"), 1, common::SKEW * 2))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert!(
        err.to_string().contains("twice the clock-skew tolerance"),
        "{err}"
    );
    assert!(
        store
            .try_acquire(&request(
                &lock("short"),
                1,
                common::SKEW * 2 + Duration::from_millis(1)
            ))
            .await
            .unwrap()
            .is_elected()
    );
}

#[tokio::test]
async fn group_slots_and_prefixes_use_their_own_items() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let prefixed = DynamoDbStore::new(
        common::client(&endpoint),
        common::options().with_key_prefix("team-a/app"),
    )
    .unwrap();
    let plain = common::store(&endpoint);
    let name = lock("prefixed");
    let a = prefixed
        .try_acquire(&request(&name, 2, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let b = prefixed
        .try_acquire(&request(&name, 2, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!((a.slot, b.slot), (0, 1));
    assert!(
        raw_item(&prefixed, &format!("team-a/app/{name}"))
            .await
            .is_some()
    );
    assert!(
        raw_item(&prefixed, &format!("team-a/app/{name}#slot-1"))
            .await
            .is_some()
    );
    // Another prefix (or none) is another namespace.
    assert!(plain.state(&name, 2).await.unwrap().is_free());
    let c = plain
        .try_acquire(&request(&name, 1, Duration::from_secs(10)))
        .await
        .unwrap()
        .elected();
    assert!(c.is_some());
    let state = prefixed.state(&name, 2).await.unwrap();
    assert_eq!(
        state.holders.iter().map(|h| h.slot).collect::<Vec<_>>(),
        [0, 1]
    );
    assert_eq!(prefixed.force_release(&name, 2).await.unwrap().len(), 2);
    plain.release(&c.unwrap(), Duration::ZERO).await.unwrap();
}

#[tokio::test]
async fn a_missing_table_is_a_permanent_error_that_says_so() {
    let Some(endpoint) = common::endpoint() else {
        return;
    };
    let store = DynamoDbStore::new(
        common::client(&endpoint),
        common::options().with_table("leasehold_no_such_table"),
    )
    .unwrap();
    let err = store
        .try_acquire(&request(&lock("missing"), 1, Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
    assert!(
        err.to_string().contains("ResourceNotFoundException"),
        "{err}"
    );
    assert!(err.to_string().contains("create_table"), "{err}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_transient_error() {
    // A port nothing listens on: the connection is refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let store = DynamoDbStore::new(
        common::client(&format!("http://127.0.0.1:{port}")),
        common::options().with_max_attempts(1),
    )
    .unwrap();
    let err = store
        .try_acquire(&request(&lock("unreachable"), 1, Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
    assert!(err.to_string().contains("UpdateItem"), "{err}");
}

#[tokio::test]
async fn urls_open_stores_through_the_registry() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let registry = StoreRegistry::new().with(DynamoDbOpener::new());
    let url = format!(
        "dynamodb://{}?endpoint={endpoint}&region=us-east-1&skew=100ms&prefix=url-test",
        common::TABLE
    );
    let store: Arc<dyn LeaseStore> = registry.open(&url).await.unwrap();
    assert_eq!(
        store.describe(),
        format!("dynamodb://{}?region=us-east-1", common::TABLE)
    );
    let name = lock("url");
    let lease = store
        .try_acquire(&request(&name, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(store.state(&name, 1).await.unwrap().active(), 1);
    store.release(&lease, Duration::ZERO).await.unwrap();

    // A new table on request.
    let table = format!("leasehold_url_{}", &Token::random().to_hex()[..8]);
    let created = format!("dynamodb://{table}?endpoint={endpoint}&create_table=true");
    let store = registry.open(&created).await.unwrap();
    assert!(store.state(&name, 1).await.unwrap().is_free());
    common::client(&endpoint)
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();

    // A missing table fails at open, with the cause.
    let missing = format!("dynamodb://leasehold_missing_table?endpoint={endpoint}");
    match registry.open(&missing).await {
        Err(OpenError::Connect { source, .. }) => {
            assert_eq!(source.kind(), ErrorKind::Permanent);
            assert!(
                source.to_string().contains("ResourceNotFoundException"),
                "{source}"
            );
        }
        Err(other) => panic!("expected a connect error, got {other}"),
        Ok(store) => panic!("expected a connect error, opened {}", store.describe()),
    }
}

#[tokio::test]
async fn create_table_is_idempotent() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store = common::store(&endpoint);
    store.create_table().await.unwrap();
    store.create_table().await.unwrap();
    store.check().await.unwrap();
}

/// The ledger lives on slot 0's item as seven attributes, written in the acquiring `UpdateItem`;
/// a period longer than the TTL padding (after which DynamoDB TTL may delete the item) is
/// refused with a permanent error naming the option.
#[tokio::test]
async fn the_ledger_is_on_the_item_and_periods_fit_the_ttl_padding() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store = common::store(&endpoint);
    let name = lock("ledger");
    let padding = common::options().ttl_padding();
    let fits = leasehold::Period::every(padding).unwrap();
    let req = request(&name, 1, Duration::from_secs(30)).with_period(fits);
    let lease = store.try_acquire(&req).await.unwrap().elected().unwrap();
    let key = leasehold_dynamodb::item_key("", &name, 0);
    let item = raw_item(&store, &key).await.expect("the item");
    let id = lease.period.expect("a period grant carries its id");
    assert_eq!(
        item.get("ledgerPeriod"),
        Some(&AttributeValue::N(id.to_string()))
    );
    assert_eq!(
        item.get("ledgerBy"),
        Some(&AttributeValue::S("node-a".into()))
    );
    assert!(item.contains_key("ledgerAt"));
    assert_eq!(
        item.get("ledgerStarted"),
        Some(&AttributeValue::N("0".into()))
    );
    assert_eq!(
        store.start_period(&lease).await.unwrap(),
        leasehold::store::PeriodStart::Started
    );
    let item = raw_item(&store, &key).await.expect("the item");
    assert_eq!(
        item.get("ledgerStarted"),
        Some(&AttributeValue::N("1".into()))
    );
    let record = store.period_record(&name).await.unwrap().expect("a record");
    assert!(
        record.started && record.period == id && record.by == "node-a",
        "{record:?}"
    );
    store.release(&lease, Duration::ZERO).await.unwrap();
    let item = raw_item(&store, &key).await.expect("the item");
    assert!(
        item.contains_key("ledgerPeriod"),
        "release keeps the ledger"
    );

    let too_long = leasehold::Period::every(padding + Duration::from_secs(1)).unwrap();
    let err = store
        .try_acquire(&request(&name, 1, Duration::from_secs(30)).with_period(too_long))
        .await
        .unwrap_err();
    assert!(!err.is_transient());
    assert!(err.to_string().contains("ttl_padding"), "{err}");
}
