//! The protocol room: every request this store sends to DynamoDB, in one place.
//!
//! Every lease lives in one item per `(lock, slot)` (see the `keys` module; its attributes are
//! in the `record` module), and every change is **one conditional `UpdateItem` on one item**:
//! DynamoDB applies a write whose condition holds, or refuses it as a whole, so the condition
//! is what makes each change atomic. The exact expressions are public, in [`expressions`]. Every
//! request goes through the store's metered send (see the `link` module).
//!
//! | operation | request | atomic because |
//! |---|---|---|
//! | acquire one slot | `UpdateItem`, [`ACQUIRE_CONDITION`](expressions::ACQUIRE_CONDITION) / [`ACQUIRE_UPDATE`](expressions::ACQUIRE_UPDATE), `ALL_NEW`; on a failed condition the old item (`ALL_OLD`, or a `GetItem` where an emulator returns none) tells a retried grant from contention | one conditional write mints the fence and writes the lease |
//! | acquire with a period | `UpdateItem` on slot 0, [`PERIOD_CONDITION`](expressions::PERIOD_CONDITION) / [`PERIOD_UPDATE`](expressions::PERIOD_UPDATE): the grant and the ledger's new claim | one conditional write |
//! | acquire a group | a consistent `BatchGetItem` of every slot, then the one-slot `UpdateItem` on each slot free or stale, lowest first, until one is granted | each grant is one conditional write; the read only chooses where to try |
//! | extend | `UpdateItem`, [`HELD_CONDITION`](expressions::HELD_CONDITION) / [`EXTEND_UPDATE`](expressions::EXTEND_UPDATE) | one conditional write |
//! | release | `UpdateItem`, [`HELD_CONDITION`](expressions::HELD_CONDITION) / [`RELEASE_UPDATE`](expressions::RELEASE_UPDATE): the item stays, with its fence | one conditional write |
//! | release with a linger | `UpdateItem`, [`LINGER_CONDITION`](expressions::LINGER_CONDITION) / [`LINGER_UPDATE`](expressions::LINGER_UPDATE), `ALL_OLD` on a failed condition | one conditional write |
//! | start a period | `UpdateItem` on slot 0, [`START_CONDITION`](expressions::START_CONDITION) / [`START_UPDATE`](expressions::START_UPDATE) | one conditional write |
//! | period record | a consistent `GetItem` of slot 0 | one read |
//! | clear the ledger | `UpdateItem` on slot 0, [`CLEAR_CONDITION`](expressions::CLEAR_CONDITION) / [`CLEAR_UPDATE`](expressions::CLEAR_UPDATE), `ALL_OLD`: the record returned is the record removed | one conditional write |
//! | state | a consistent `GetItem` (one slot) or `BatchGetItem` (a group, 100 keys a request) | each item read whole |
//! | force release | the state's read, then per held slot `UpdateItem`, [`FORCE_CONDITION`](expressions::FORCE_CONDITION) / [`FORCE_UPDATE`](expressions::FORCE_UPDATE), `ALL_OLD` | each slot freed by one conditional write |
//! | list | one `Scan` per page, `Limit` [`MAX_LIST_SCAN`](leasehold::store::MAX_LIST_SCAN), [`LIST_FILTER`](expressions::LIST_FILTER) (see the `list` module) | each item read whole |
//! | stale items | two `Scan`s with `Select = COUNT`, [`STALE_FILTER`](expressions::STALE_FILTER) and [`PAST_TTL_FILTER`](expressions::PAST_TTL_FILTER) (see [`StaleCount`](crate::StaleCount)) | counts, no decision |
//! | check | a consistent `GetItem` of a probe key | — |
//! | create the table | `CreateTable`, `DescribeTable` until active, `UpdateTimeToLive` on `ttl` ([`create_table`](crate::create_table)) | — |
//!
//! A failed condition is contention or a lease no longer held, never an error: the request
//! answers `Taken`, `NotHeld` or `None`, as its method says.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use leasehold::store::StoreResult;

use crate::classify::classify;
use crate::record::Attributes;
use crate::store::DynamoDbStore;

mod acquire;
pub mod expressions;
mod lease;
mod ledger;
mod read;
pub(crate) mod session;
pub(crate) mod stale;
pub(crate) mod table;

impl DynamoDbStore {
    /// The `ExpressionAttributeNames` for the placeholders in `used`.
    pub(crate) fn names(used: &'static [&'static str]) -> HashMap<String, String> {
        expressions::names(used)
            .map(|(p, a)| (p.to_owned(), a.to_owned()))
            .collect()
    }
}

/// `Ok(old item, if returned)` when an `UpdateItem` on `table` failed its condition; the
/// classified error otherwise.
pub(crate) fn conditional_failure(
    table: &str,
    err: SdkError<UpdateItemError>,
) -> StoreResult<Option<Attributes>> {
    if let SdkError::ServiceError(service) = &err
        && let UpdateItemError::ConditionalCheckFailedException(failed) = service.err()
    {
        return Ok(failed.item().cloned());
    }
    Err(classify("UpdateItem", table, err))
}
