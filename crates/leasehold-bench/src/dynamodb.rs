//! The DynamoDB floor: the store's own acquire and release requests — one conditional
//! `UpdateItem` each, with the same expressions — issued raw with the store's client.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use leasehold::{LockName, Token};
use leasehold_dynamodb::DynamoDbStore;
use leasehold_dynamodb::expressions as x;

type BoxError = Box<dyn std::error::Error>;

fn names(used: &'static [&'static str]) -> HashMap<String, String> {
    x::names(used)
        .map(|(p, a)| (p.to_owned(), a.to_owned()))
        .collect()
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The default bench URL: the test emulator's endpoint, a table of the bench's own.
pub(crate) fn default_url(endpoint: &str) -> String {
    format!("dynamodb://leasehold_bench_leases?endpoint={endpoint}&create_table=true")
}

/// One acquire (conditional `UpdateItem` returning the new item) and one release (conditional
/// `UpdateItem`), as the store sends them.
pub(crate) async fn round_trip(store: &DynamoDbStore, lock: &LockName) -> Result<(), BoxError> {
    let client = store.client();
    let key = store.key(lock, 0);
    let token = Token::random().to_hex();
    let now = now_ms();
    let expiry = now + 30_000;
    let ttl = (expiry + 3_600_000).div_ceil(1000);
    let acquired = client
        .update_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, s(&key))
        .condition_expression(x::ACQUIRE_CONDITION)
        .update_expression(x::ACQUIRE_UPDATE)
        .set_expression_attribute_names(Some(names(x::ACQUIRE_NAMES)))
        .expression_attribute_values(":owner", s("floor"))
        .expression_attribute_values(":token", s(&token))
        .expression_attribute_values(":node", s("floor"))
        .expression_attribute_values(":now", n(now))
        .expression_attribute_values(":stale", n(now - 2_000))
        .expression_attribute_values(":expiry", n(expiry))
        .expression_attribute_values(":ttl", n(ttl))
        .expression_attribute_values(":seed", n(now * 1000))
        .expression_attribute_values(":one", n(1))
        .return_values(ReturnValue::AllNew)
        .send()
        .await?;
    if acquired
        .attributes
        .is_none_or(|a| !a.contains_key(x::FENCE))
    {
        return Err("floor acquire returned no fence".into());
    }
    let now = now_ms();
    client
        .update_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, s(&key))
        .condition_expression(x::HELD_CONDITION)
        .update_expression(x::RELEASE_UPDATE)
        .set_expression_attribute_names(Some(names(x::RELEASE_NAMES)))
        .expression_attribute_values(":token", s(&token))
        .expression_attribute_values(":now", n(now))
        .expression_attribute_values(":ttl", n((now + 3_600_000).div_ceil(1000)))
        .send()
        .await?;
    Ok(())
}
