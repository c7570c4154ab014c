//! `DynamoDbStore::stale_items`: counting lease items that hold no lease but are still in the
//! table, and those past their `ttl` that DynamoDB TTL has not deleted (the emulator never does),
//! within a page cap. Each test has a table of its own, so the counts are exact.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{
    Lease, LeaseStore, LockName,
    store::{Release, Token},
};
use leasehold_dynamodb::{
    DynamoDbOptions, DynamoDbStore, MAX_STALE_SCAN_PAGES, STALE_SCAN_PAGE_ITEMS, StaleCount,
    expressions as x,
};

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A table of this test's own, created empty.
async fn fresh_table(client: &Client, tag: &str) -> String {
    let table = format!(
        "leasehold_test_stale_{tag}_{}",
        &Token::random().to_hex()[..12]
    );
    leasehold_dynamodb::create_table(client, &table)
        .await
        .expect("create the test table");
    table
}

async fn drop_table(client: &Client, table: &str) {
    client
        .delete_table()
        .table_name(table)
        .send()
        .await
        .unwrap();
}

fn store(client: &Client, options: DynamoDbOptions) -> DynamoDbStore {
    DynamoDbStore::new(client.clone(), options).unwrap()
}

async fn acquire(store: &DynamoDbStore, name: &str, ttl: Duration) -> Lease {
    let req = AcquireRequest::new(
        LockName::new(name).unwrap(),
        1,
        "node-a",
        Token::random(),
        ttl,
    );
    match store.try_acquire(&req).await.unwrap() {
        Acquisition::Elected(lease) => lease,
        other => panic!("{name}: {other:?}"),
    }
}

/// An item as a client that went away (or DynamoDB TTL running late) leaves it: `leaseExpiry`
/// and `ttl` as given, a token if `held`.
fn item(
    key: &str,
    held: bool,
    lease_expiry_ms: u64,
    ttl_s: u64,
) -> HashMap<String, AttributeValue> {
    let mut item: HashMap<String, AttributeValue> = [
        (x::LOCK_NAME, AttributeValue::S(key.to_owned())),
        (x::AUDIT_OWNER, AttributeValue::S("gone".into())),
        (x::FENCE, AttributeValue::N("7".into())),
        (x::ACQUIRED_AT, AttributeValue::N("0".into())),
        (
            x::LEASE_EXPIRY,
            AttributeValue::N(lease_expiry_ms.to_string()),
        ),
        (x::TTL, AttributeValue::N(ttl_s.to_string())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if held {
        item.insert(x::TOKEN.into(), AttributeValue::S(Token::random().to_hex()));
        item.insert(x::OWNER.into(), AttributeValue::S("gone".into()));
    }
    item
}

async fn put(client: &Client, table: &str, item: HashMap<String, AttributeValue>) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}

/// The counts a test states, with the rest of the report checked by the caller.
fn counts(count: &StaleCount) -> (u64, u64, u64, bool) {
    (count.expired, count.past_ttl, count.kept(), count.truncated)
}

#[tokio::test]
async fn counts_free_expired_and_past_ttl_items_of_the_stores_scope() {
    let Some(endpoint) = common::endpoint() else {
        return;
    };
    let client = common::client(&endpoint);
    let table = fresh_table(&client, "counts").await;
    let options = common::options().with_table(&table); // 100 ms skew tolerance, 1 h TTL padding
    let plain = store(&client, options.clone());
    let team = store(&client, options.with_key_prefix("team"));
    assert_eq!(
        counts(&plain.stale_items().await.unwrap()),
        (0, 0, 0, false)
    );

    // Two live leases and a released one: only the released item is stale, and kept.
    let long = Duration::from_secs(60);
    acquire(&plain, "live-1", long).await;
    acquire(&plain, "live-2", long).await;
    let released = acquire(&plain, "released", long).await;
    assert_eq!(
        plain.release(&released, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let count = plain.stale_items().await.unwrap();
    assert_eq!(counts(&count), (1, 0, 1, false));
    assert_eq!((count.pages, count.scanned), (2, 6), "{count:?}"); // one page per scan
    // The read units DynamoDB reports, both scans together: half a unit per eventually
    // consistent page of at most 4 KB.
    assert!((count.read_units - 1.0).abs() < 1e-9, "{count:?}");

    // Two short leases that end without a release: stale once they ended more than the
    // tolerance ago (300 ms + 100 ms; waited for generously).
    let short = Duration::from_millis(300);
    let a = acquire(&plain, "short-1", short).await;
    acquire(&plain, "short-2", short).await;
    let ended = a.expires_at + Duration::from_secs(1);
    while SystemTime::now() < ended {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        counts(&plain.stale_items().await.unwrap()),
        (3, 0, 3, false)
    );

    // Items whose `ttl` passed an hour ago, abandoned and free: TTL is late (the emulator has
    // none). Items of other prefixes, and an item without `leaseExpiry`, are not this store's.
    let now = now_ms();
    let hours_ago = now - 2 * 3_600_000;
    let ttl_passed = now / 1000 - 3_600;
    put(
        &client,
        &table,
        item("abandoned", true, hours_ago, ttl_passed),
    )
    .await;
    put(
        &client,
        &table,
        item("forgotten", false, hours_ago, ttl_passed),
    )
    .await;
    put(
        &client,
        &table,
        item("other/old", false, hours_ago, ttl_passed),
    )
    .await;
    let mut foreign = item("foreign", false, hours_ago, ttl_passed);
    foreign.remove(x::LEASE_EXPIRY);
    put(&client, &table, foreign).await;
    let count = plain.stale_items().await.unwrap();
    assert_eq!(counts(&count), (5, 2, 3, false));
    assert_eq!(count.scanned, 2 * 9, "{count:?}"); // every item is read, counted or not

    // A prefixed store counts its own items (and those of prefixes nested in it); the
    // unprefixed store does not count them.
    assert_eq!(counts(&team.stale_items().await.unwrap()), (0, 0, 0, false));
    let freed = acquire(&team, "job", long).await;
    assert_eq!(
        team.release(&freed, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    put(
        &client,
        &table,
        item("team/app/old", true, hours_ago, ttl_passed),
    )
    .await;
    acquire(&team, "running", long).await;
    assert_eq!(counts(&team.stale_items().await.unwrap()), (2, 1, 1, false));
    assert_eq!(
        counts(&plain.stale_items().await.unwrap()),
        (5, 2, 3, false)
    );

    drop_table(&client, &table).await;
}

#[tokio::test]
async fn a_count_stops_at_its_page_cap_and_says_so() {
    let Some(endpoint) = common::endpoint() else {
        return;
    };
    let client = common::client(&endpoint);
    let table = fresh_table(&client, "cap").await;
    let plain = store(&client, common::options().with_table(&table));

    // One page and one item more, all free and kept (their `ttl` is an hour ahead).
    let total = STALE_SCAN_PAGE_ITEMS + 1;
    let now = now_ms();
    let requests: Vec<WriteRequest> = (0..total)
        .map(|i| {
            let put = PutRequest::builder()
                .set_item(Some(item(
                    &format!("lock-{i}"),
                    false,
                    now - 60_000,
                    now / 1000 + 3_600,
                )))
                .build()
                .unwrap();
            WriteRequest::builder().put_request(put).build()
        })
        .collect();
    for batch in requests.chunks(25) {
        let mut pending = HashMap::from([(table.clone(), batch.to_vec())]);
        while !pending.is_empty() {
            let out = client
                .batch_write_item()
                .set_request_items(Some(pending))
                .send()
                .await
                .unwrap();
            pending = out.unprocessed_items.unwrap_or_default();
            pending.retain(|_, left| !left.is_empty());
        }
    }
    let total = u64::from(total);
    let page = u64::from(STALE_SCAN_PAGE_ITEMS);

    let capped = plain.stale_items_within(1).await.unwrap();
    assert_eq!(counts(&capped), (page, 0, page, true));
    assert_eq!((capped.pages, capped.scanned), (2, 2 * page), "{capped:?}");
    assert!(capped.read_units >= 1.0, "{capped:?}");

    let whole = plain.stale_items_within(2).await.unwrap();
    assert_eq!(counts(&whole), (total, 0, total, false));
    assert_eq!((whole.pages, whole.scanned), (4, 2 * total), "{whole:?}");
    assert_eq!(counts(&plain.stale_items().await.unwrap()), counts(&whole));

    for bad in [0, MAX_STALE_SCAN_PAGES + 1] {
        let err = plain.stale_items_within(bad).await.unwrap_err();
        assert!(!err.is_transient(), "{err}");
        assert!(err.to_string().contains("max_pages"), "{err}");
    }

    drop_table(&client, &table).await;
}
