//! The DynamoDB floor: the store's own acquire and release requests — one conditional
//! `UpdateItem` each, with the same expressions — issued raw with the store's client.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use leasehold::{LockName, store::Token};
use leasehold_dynamodb::DynamoDbStore;
use leasehold_dynamodb::expressions as x;

use crate::BoxError;

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

/// The acquire: one conditional `UpdateItem` returning the new item, as the store sends it.
pub(super) async fn acquire(
    store: &DynamoDbStore,
    lock: &LockName,
    token: Token,
    ttl: Duration,
) -> Result<bool, BoxError> {
    let now = now_ms();
    let expiry = now + u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 4);
    let ttl_attr = (expiry + 3_600_000).div_ceil(1000);
    let acquired = store
        .client()
        .update_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, s(&store.key(lock, 0)))
        .condition_expression(x::ACQUIRE_CONDITION)
        .update_expression(x::ACQUIRE_UPDATE)
        .set_expression_attribute_names(Some(names(x::ACQUIRE_NAMES)))
        .expression_attribute_values(":owner", s("floor"))
        .expression_attribute_values(":token", s(&token.to_hex()))
        .expression_attribute_values(":node", s("floor"))
        .expression_attribute_values(":now", n(now))
        .expression_attribute_values(":stale", n(now.saturating_sub(2_000)))
        .expression_attribute_values(":expiry", n(expiry))
        .expression_attribute_values(":ttl", n(ttl_attr))
        .expression_attribute_values(":seed", n(now * 1000))
        .expression_attribute_values(":one", n(1))
        .return_values(ReturnValue::AllNew)
        .send()
        .await;
    match acquired {
        Ok(out) => Ok(out.attributes.is_some_and(|a| a.contains_key(x::FENCE))),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// The release: one conditional `UpdateItem`.
pub(super) async fn release(
    store: &DynamoDbStore,
    lock: &LockName,
    token: Token,
) -> Result<(), BoxError> {
    let now = now_ms();
    store
        .client()
        .update_item()
        .table_name(store.table())
        .key(x::LOCK_NAME, s(&store.key(lock, 0)))
        .condition_expression(x::HELD_CONDITION)
        .update_expression(x::RELEASE_UPDATE)
        .set_expression_attribute_names(Some(names(x::RELEASE_NAMES)))
        .expression_attribute_values(":token", s(&token.to_hex()))
        .expression_attribute_values(":now", n(now))
        .expression_attribute_values(":ttl", n((now + 3_600_000).div_ceil(1000)))
        .send()
        .await?;
    Ok(())
}
