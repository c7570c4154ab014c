//! Fences enforced at the resource: the condition builder on a user table (dynalite, and an
//! endpoint that returns the refused item) and fenced transactions on the lease item (an endpoint
//! with `TransactWriteItems`: see `common::fence::tx_ready`), each under the testkit's paused
//! stale holder, plus the merge, refusal and limit cases.

#![cfg(feature = "fence")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use leasehold::fence::{FenceRefusal, ResourceName, StaleFence};
use leasehold::{ElectionOptions, Elector, LeaderGuard, LeaseStore, LockName, store::Token};
use leasehold_dynamodb::DynamoDbStore;
use leasehold_dynamodb::fence::sinks::{ConditionSink, SinkWrite, TransactionSink};
use leasehold_dynamodb::fence::{
    FenceAttribute, FenceAttributeError, FenceCondition, FenceConditionError, Fenced,
    FencedTransactionError, FencedWriteError, MAX_FENCED_TRANSACTION_ITEMS,
};
use leasehold_testkit::stale_holder::{self, FencedSink, StaleHolderConfig};

use common::fence::SINK_TABLE;
use common::fence::tx_ready;

/// Rounds of the paused-stale-holder scenario per sink (the benchmark runs 10,000).
const ROUNDS: usize = 300;

/// Runs the scenario for `sink` with locks on `endpoint` and checks it refused stale writes.
async fn refuses_paused_stale_holders(endpoint: String, sink: &dyn FencedSink) {
    let config = StaleHolderConfig {
        rounds: ROUNDS,
        ..StaleHolderConfig::default()
    };
    let report = stale_holder::run(&common::factory(endpoint), sink, &config).await;
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.rounds, ROUNDS as u64, "{report}");
    assert!(report.expired > 0, "some leases really expired: {report}");
    assert!(report.stale_rejected > 0, "{report}");
    assert_eq!(report.stale_accepted, 0, "{report}");
}

/// The dynalite endpoint with the lease and sink tables ready, or `None` to skip.
async fn ready() -> Option<String> {
    let endpoint = common::ready().await?;
    common::fence::sink_table(&endpoint).await;
    Some(endpoint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_put_item_refuses_paused_stale_holders() {
    let Some(endpoint) = ready().await else {
        return;
    };
    let sink = ConditionSink::new(common::client(&endpoint), SINK_TABLE, SinkWrite::Put);
    refuses_paused_stale_holders(endpoint, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_update_item_with_its_own_condition_refuses_paused_stale_holders() {
    let Some(endpoint) = ready().await else {
        return;
    };
    let sink = ConditionSink::new(common::client(&endpoint), SINK_TABLE, SinkWrite::Update);
    refuses_paused_stale_holders(endpoint, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writes_refuse_paused_stale_holders_where_the_refused_item_is_returned() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    let sink = ConditionSink::new(common::client(&endpoint), SINK_TABLE, SinkWrite::Update);
    refuses_paused_stale_holders(endpoint, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_transactions_refuse_paused_stale_holders() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    let sink = TransactionSink::new(common::store(&endpoint), SINK_TABLE);
    refuses_paused_stale_holders(endpoint, &sink).await;
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn unique(tag: &str) -> String {
    format!("{tag}-{}", Token::random().to_hex())
}

async fn item(client: &Client, id: &str) -> HashMap<String, AttributeValue> {
    client
        .get_item()
        .table_name(SINK_TABLE)
        .key("id", s(id))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap_or_default()
}

/// A fenced `UpdateItem` of `id` with the user's own condition (`#s = :state`), update
/// expression and names/values, under `fence` recorded in the attribute `order version`.
async fn update_order(
    client: &Client,
    id: &str,
    fence: u64,
    state: &str,
) -> Result<(), FencedWriteError<aws_sdk_dynamodb::operation::update_item::UpdateItemError>> {
    let fence = FenceCondition::of_fence(fence)
        .with_attribute(FenceAttribute::new("order version").unwrap());
    client
        .update_item()
        .table_name(SINK_TABLE)
        .key("id", s(id))
        .condition_expression("#s = :state")
        .update_expression("SET #n = #n + :one REMOVE #tmp")
        .expression_attribute_names("#s", "state")
        .expression_attribute_names("#n", "count")
        .expression_attribute_names("#tmp", "scratch")
        .expression_attribute_values(":state", s(state))
        .expression_attribute_values(":one", n(1))
        .fenced(&fence)
        .unwrap()
        .send()
        .await
        .map(drop)
        .map_err(|e| fence.refusal(&ResourceName::new(id).unwrap(), e))
}

#[tokio::test]
async fn the_fence_merges_with_the_writes_own_condition_update_names_and_values() {
    let Some(endpoint) = ready().await else {
        return;
    };
    let client = common::client(&endpoint);
    let id = unique("merge");
    let version = "order version";
    let created =
        FenceCondition::of_fence(10).with_attribute(FenceAttribute::new(version).unwrap());
    client
        .put_item()
        .table_name(SINK_TABLE)
        .item("id", s(&id))
        .item("state", s("open"))
        .item("count", n(1))
        .item("scratch", s("x"))
        .condition_expression("attribute_not_exists(#id)")
        .expression_attribute_names("#id", "id")
        .fenced(&created)
        .unwrap()
        .send()
        .await
        .unwrap();
    assert_eq!(item(&client, &id).await.get(version), Some(&n(10)));

    // Same fence, the user's condition holds: applied, both updates made.
    update_order(&client, &id, 10, "open").await.unwrap();
    let now = item(&client, &id).await;
    assert_eq!(
        (now.get("count"), now.get("scratch"), now.get(version)),
        (Some(&n(2)), None, Some(&n(10)))
    );

    // Higher fence, the user's condition fails: refused, and not as stale.
    let err = update_order(&client, &id, 11, "closed").await.unwrap_err();
    assert!(
        matches!(err, FencedWriteError::ConditionFailed { fence: 11, .. }),
        "{err:?}"
    );
    assert!(!err.is_stale());

    // Lower fence, the user's condition holds: refused by the fence.
    let err = update_order(&client, &id, 9, "open").await.unwrap_err();
    assert!(
        matches!(
            err,
            FencedWriteError::Stale(_) | FencedWriteError::ConditionFailed { .. }
        ),
        "{err:?}"
    );
    let unchanged = item(&client, &id).await;
    assert_eq!(
        (unchanged.get("count"), unchanged.get(version)),
        (Some(&n(2)), Some(&n(10))),
        "refused writes changed nothing"
    );

    // Higher fence, the user's condition holds: applied, the new fence recorded.
    update_order(&client, &id, 12, "open").await.unwrap();
    let last = item(&client, &id).await;
    assert_eq!(
        (last.get("count"), last.get(version)),
        (Some(&n(3)), Some(&n(12)))
    );
}

#[tokio::test]
async fn a_stale_write_names_the_fence_the_item_records() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    let client = common::client(&endpoint);
    let id = unique("stale");
    let resource = ResourceName::new(&id).unwrap();
    let put = |fence: u64| {
        client
            .put_item()
            .table_name(SINK_TABLE)
            .item("id", s(&id))
            .item("value", n(fence))
            .fenced(&FenceCondition::of_fence(fence))
            .unwrap()
            .send()
    };
    put(20).await.unwrap();
    let err = FenceCondition::of_fence(19).refusal(&resource, put(19).await.unwrap_err());
    assert_eq!(
        err.stale(),
        Some(&StaleFence {
            resource: resource.clone(),
            fence: 19,
            highest: 20
        }),
        "{err:?}"
    );
    let update = FenceCondition::of_fence(18);
    let sent = client
        .update_item()
        .table_name(SINK_TABLE)
        .key("id", s(&id))
        .update_expression("SET #v = :v")
        .expression_attribute_names("#v", "value")
        .expression_attribute_values(":v", n(18))
        .fenced(&update)
        .unwrap()
        .send()
        .await;
    let err = update.refusal(&resource, sent.unwrap_err());
    assert_eq!(err.stale().map(|s| (s.fence, s.highest)), Some((18, 20)));
    assert!(
        err.to_string().contains("fence 20 was already accepted"),
        "{err}"
    );
    assert_eq!(item(&client, &id).await.get("value"), Some(&n(20)));
}

#[tokio::test]
async fn invalid_fence_attributes_and_reserved_placeholders_are_refused() {
    for (name, expected) in [
        ("", "must not be empty"),
        ("a\u{0}b", "control character"),
        (&"f".repeat(256), "at most 255 bytes"),
    ] {
        let err = FenceAttribute::new(name).unwrap_err();
        assert!(err.to_string().contains(expected), "{name:?}: {err}");
    }
    assert!(matches!(
        "".parse::<FenceAttribute>(),
        Err(FenceAttributeError::Empty)
    ));
    // A request that uses a leasehold placeholder itself is refused before anything is sent.
    let client = common::client("http://127.0.0.1:9");
    let err = client
        .update_item()
        .table_name(SINK_TABLE)
        .key("id", s("x"))
        .update_expression("SET #leasehold_fence = :v")
        .expression_attribute_names("#leasehold_fence", "mine")
        .fenced(&FenceCondition::of_fence(1))
        .unwrap_err();
    assert!(
        matches!(err, FenceConditionError::ReservedPlaceholder { ref placeholder } if placeholder == "#leasehold_fence"),
        "{err:?}"
    );
}

/// A lock taken on `store` (with a 30 s lease), its elector and guard.
async fn hold(store: &Arc<DynamoDbStore>, lock: &LockName) -> (Elector, LeaderGuard) {
    let options = ElectionOptions::builder()
        .lease(Duration::from_secs(30))
        .build()
        .unwrap();
    let elector = Elector::with_options(Arc::clone(store) as Arc<dyn LeaseStore>, options);
    let guard = elector
        .try_acquire(lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    (elector, guard)
}

fn put_value(id: &str, value: u64) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(SINK_TABLE)
        .item("id", s(id))
        .item("value", n(value))
        .build()
        .unwrap();
    TransactWriteItem::builder().put(put).build()
}

#[tokio::test]
async fn a_transaction_is_applied_while_held_and_refused_after_a_forced_release() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    let store = Arc::new(common::store(&endpoint));
    let lock = LockName::new(unique("tx")).unwrap();
    let (a, b) = (unique("tx-a"), unique("tx-b"));
    let (_elector, guard) = hold(&store, &lock).await;
    let fenced = store.fenced(&guard);
    assert!(
        !format!("{fenced:?}").contains(&guard.lease().token.to_hex()),
        "no token in Debug"
    );
    fenced
        .write([put_value(&a, 1), put_value(&b, 1)])
        .await
        .unwrap();
    assert_eq!(item(store.client(), &a).await.get("value"), Some(&n(1)));

    // The lease ends while the holder is not looking: nothing more is written.
    assert_eq!(store.force_release(&lock, 1).await.unwrap().len(), 1);
    let err = fenced
        .write([put_value(&a, 2), put_value(&b, 2)])
        .await
        .unwrap_err();
    assert!(err.is_lease_lost(), "{err:?}");
    assert!(
        matches!(
            err,
            FencedTransactionError::LeaseLost { fence, current_fence: Some(current), .. }
                if fence == guard.fence() && current == fence
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains(&guard.lease().token.to_hex()));

    // A successor takes the lock: the stale holder's transaction is stale, the successor's runs.
    let (_successor, next) = hold(&store, &lock).await;
    let err = fenced.write([put_value(&a, 3)]).await.unwrap_err();
    let FencedTransactionError::Stale(stale) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (stale.resource.as_str(), stale.fence, stale.highest),
        (lock.as_str(), guard.fence(), next.fence())
    );
    for id in [&a, &b] {
        assert_eq!(item(store.client(), id).await.get("value"), Some(&n(1)));
    }
    store
        .fenced(&next)
        .send(
            store
                .client()
                .transact_write_items()
                .transact_items(put_value(&a, 4)),
        )
        .await
        .unwrap();
    assert_eq!(item(store.client(), &a).await.get("value"), Some(&n(4)));
    next.release().await.unwrap();
}

#[tokio::test]
async fn a_transaction_is_refused_once_the_lease_expired_even_without_a_successor() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    let store = Arc::new(common::store(&endpoint));
    let lock = LockName::new(unique("tx-expired")).unwrap();
    // Long enough for the first write to land inside it on a loaded machine (at 300 ms the
    // emulator's answer to the acquisition and the write came after its end under a CI run).
    let lease = Duration::from_secs(2);
    let options = ElectionOptions::builder()
        .lease(lease)
        .auto_extend(false) // left to expire
        .build()
        .unwrap();
    let elector = Elector::with_options(Arc::clone(&store) as Arc<dyn LeaseStore>, options);
    let guard = elector
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let id = unique("tx-expired-item");
    let fenced = store.fenced(&guard);
    fenced.write([put_value(&id, 1)]).await.unwrap();
    // Frozen past the lease's end (by this client's clock), and nobody took the lock since.
    let past_end = guard
        .expires_at()
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default()
        + Duration::from_millis(20);
    tokio::time::sleep(past_end).await;
    let err = fenced.write([put_value(&id, 2)]).await.unwrap_err();
    assert!(
        matches!(
            err,
            FencedTransactionError::LeaseLost { current_fence: Some(current), .. }
                if current == guard.fence()
        ),
        "{err:?}"
    );
    assert_eq!(item(store.client(), &id).await.get("value"), Some(&n(1)));
}

#[tokio::test]
async fn a_fenced_transaction_takes_at_most_99_items_and_never_the_lease_item() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    let store = Arc::new(common::store(&endpoint));
    let lock = LockName::new(unique("tx-limit")).unwrap();
    let (_elector, guard) = hold(&store, &lock).await;
    let fenced = store.fenced(&guard);
    let prefix = unique("tx-item");
    let items = |count: usize| (0..count).map(|i| put_value(&format!("{prefix}-{i}"), 7));

    let err = fenced.write(items(100)).await.unwrap_err();
    assert!(
        matches!(
            err,
            FencedTransactionError::TooManyItems {
                items: 100,
                max: 99
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("at most 99"), "{err}");
    assert!(
        item(store.client(), &format!("{prefix}-0"))
            .await
            .is_empty()
    );

    fenced
        .write(items(MAX_FENCED_TRANSACTION_ITEMS))
        .await
        .unwrap();
    for i in [0, 98] {
        let id = format!("{prefix}-{i}");
        assert_eq!(item(store.client(), &id).await.get("value"), Some(&n(7)));
    }

    let touch = Update::builder()
        .table_name(store.table())
        .key("lockName", s(&store.key(&lock, 0)))
        .update_expression("SET #x = :x")
        .expression_attribute_names("#x", "extra")
        .expression_attribute_values(":x", n(1))
        .build()
        .unwrap();
    let err = fenced
        .write([
            put_value(&prefix, 1),
            TransactWriteItem::builder().update(touch).build(),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            FencedTransactionError::TouchesLeaseItem { index: 1, .. }
        ),
        "{err:?}"
    );
    guard.release().await.unwrap();
}

/// A lease attached to its store's session (by its first extension) is fenced by the session:
/// a transaction commits after the lease's own term passed while the session renews it, and is
/// refused as `LeaseLost` once an operator forced the lease out (revoked in the session, item
/// freed), and once the session ended.
#[tokio::test]
async fn a_transaction_of_a_lease_of_a_session_is_checked_against_its_session() {
    let Some(endpoint) = tx_ready().await else {
        return;
    };
    use leasehold::store::{AcquireRequest, Acquisition, Extension};
    let store = common::store(&endpoint);
    let ttl = Duration::from_millis(600);
    let acquire = |lock: LockName| AcquireRequest::new(lock, 1, "node-f", Token::random(), ttl);
    let mut leases = Vec::new();
    for tag in ["tx-session-forced", "tx-session-ended"] {
        match store
            .try_acquire(&acquire(LockName::new(unique(tag)).unwrap()))
            .await
            .unwrap()
        {
            Acquisition::Elected(lease) => leases.push(lease),
            other => panic!("{other:?}"),
        }
    }
    let id = unique("tx-session-item");
    let entries: Vec<_> = leases.iter().map(|l| (l.clone(), ttl)).collect();
    for _ in 0..4 {
        let answers = store.extend_many(&entries).await;
        assert!(
            answers
                .iter()
                .all(|a| matches!(a, Ok(Extension::Extended { .. })))
        );
        tokio::time::sleep(ttl / 3).await;
    }
    // The own term written at the first extension has passed; the session holds both.
    for (i, lease) in leases.iter().enumerate() {
        store
            .fenced_by_lease(lease)
            .write([put_value(&format!("{id}-{i}"), 1)])
            .await
            .unwrap();
    }
    common::store(&endpoint)
        .force_release(&leases[0].lock, 1)
        .await
        .unwrap();
    let err = store
        .fenced_by_lease(&leases[0])
        .write([put_value(&format!("{id}-0"), 2)])
        .await
        .unwrap_err();
    assert!(err.is_lease_lost(), "forced out: {err:?}");
    // No more renewals: refused once the session ended by this client's clock.
    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    let err = store
        .fenced_by_lease(&leases[1])
        .write([put_value(&format!("{id}-1"), 2)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, FencedTransactionError::LeaseLost { .. }),
        "session ended: {err:?}"
    );
    assert_eq!(
        item(store.client(), &format!("{id}-1")).await.get("value"),
        Some(&n(1))
    );
}
