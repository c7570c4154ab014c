//! The protocol room: every request this store sends to DynamoDB, in one place.
//!
//! Every lease lives in one item per `(lock, slot)` (see the `keys` module; its attributes are
//! in the `record` module), a lease attached to a session also depends on its session's item
//! (see the `session` module), and every change is **one conditional `UpdateItem` on one item**:
//! DynamoDB applies a write whose condition holds, or refuses it as a whole, so the condition
//! is what makes each change atomic. The exact expressions are public, in [`expressions`]. Every
//! request goes through the store's metered send (see the `link` module).
//!
//! | operation | request | atomic because |
//! |---|---|---|
//! | acquire one slot | `UpdateItem`, [`ACQUIRE_CONDITION`](expressions::ACQUIRE_CONDITION) / [`ACQUIRE_UPDATE`](expressions::ACQUIRE_UPDATE) (or, while this instance renews a session of the lease length, [`SESSION_ACQUIRE_UPDATE`](expressions::SESSION_ACQUIRE_UPDATE): the grant joins it), `ALL_NEW`; on a failed condition the old item (`ALL_OLD`, or a `GetItem` where an emulator returns none) tells a retried grant from contention | one conditional write mints the fence and writes the lease |
//! | take over a lease of a session | after the failed acquire above found an item naming a session: a consistent `GetItem` of the session item, then, if it ended (or is missing) with the lease's own term, or revoked the token, the acquire's `UpdateItem` with [`TAKEOVER_CONDITION`](expressions::TAKEOVER_CONDITION) (the exact token and session read) | tokens are never reused and an ended session is never renewed (its renewal is conditioned on not having ended, judged by the holder's clock within the tolerance), so what the read found still holds when the write lands; no transaction needed |
//! | acquire with a period | `UpdateItem` on slot 0, [`PERIOD_CONDITION`](expressions::PERIOD_CONDITION) / [`PERIOD_UPDATE`](expressions::PERIOD_UPDATE): the grant and the ledger's new claim (over a lease of an ended session: [`PERIOD_TAKEOVER_CONDITION`](expressions::PERIOD_TAKEOVER_CONDITION)) | one conditional write |
//! | acquire a group | a consistent `BatchGetItem` of every slot (and of the session items they name), then the one-slot `UpdateItem` on each slot free or stale, lowest first, until one is granted | each grant is one conditional write; the read only chooses where to try |
//! | extend a lease alone (a period claim's, or another store instance's) | `UpdateItem`, [`HELD_CONDITION`](expressions::HELD_CONDITION) / [`EXTEND_UPDATE`](expressions::EXTEND_UPDATE) | one conditional write |
//! | first extension of a lease granted on its own: attach it to a session | `UpdateItem` on its item, [`HELD_CONDITION`](expressions::HELD_CONDITION) / [`ATTACH_UPDATE`](expressions::ATTACH_UPDATE): its own term moves, it names the session and loses its `ttl`; up to [`ATTACH_IN_FLIGHT`](crate::ATTACH_IN_FLIGHT) at once | one conditional write |
//! | open a session | `UpdateItem` creating `[PREFIX/]#session-ID` (random id), [`OPEN_SESSION_CONDITION`](expressions::OPEN_SESSION_CONDITION) / [`OPEN_SESSION_UPDATE`](expressions::OPEN_SESSION_UPDATE); once per lease length, and again only after a session ended or ran low | one conditional write |
//! | renew (a beat of `extend_many`) | **one `UpdateItem` per session**, whatever its number of leases: [`RENEW_SESSION_CONDITION`](expressions::RENEW_SESSION_CONDITION) / [`RENEW_SESSION_UPDATE`](expressions::RENEW_SESSION_UPDATE) (or with `ADD`/`DELETE` of `revoked`), `ALL_NEW`: the revoked tokens answer `NotHeld`, the others are extended | one conditional write on one item; a lease attached to it is held while the item's end is, so the write renews them all |
//! | release | `UpdateItem`, [`HELD_CONDITION`](expressions::HELD_CONDITION) / [`RELEASE_UPDATE`](expressions::RELEASE_UPDATE): the item stays, with its fence; a lease of a session: [`SESSION_HELD_CONDITION`](expressions::SESSION_HELD_CONDITION) (token and session), held or not judged by the session's last renewal | one conditional write |
//! | release with a linger | `UpdateItem`, [`LINGER_CONDITION`](expressions::LINGER_CONDITION) / [`LINGER_UPDATE`](expressions::LINGER_UPDATE), `ALL_OLD` on a failed condition; a lease of a session leaves it: [`SESSION_HELD_CONDITION`](expressions::SESSION_HELD_CONDITION) / [`DETACH_UPDATE`](expressions::DETACH_UPDATE), its own term ending at the linger (never later than the session held it) | one conditional write |
//! | start a period | `UpdateItem` on slot 0, [`START_CONDITION`](expressions::START_CONDITION) / [`START_UPDATE`](expressions::START_UPDATE) | one conditional write |
//! | period record | a consistent `GetItem` of slot 0 | one read |
//! | clear the ledger | `UpdateItem` on slot 0, [`CLEAR_CONDITION`](expressions::CLEAR_CONDITION) / [`CLEAR_UPDATE`](expressions::CLEAR_UPDATE), `ALL_OLD`: the record returned is the record removed | one conditional write |
//! | state | a consistent `GetItem` (one slot) or `BatchGetItem` (a group, 100 keys a request), then of the session items they name | each item read whole; a session read after its lease can only have moved on (renewed, ended or revoked), never back |
//! | state of many locks (`state_many`) | consistent `BatchGetItem`s of exactly the items named (100 distinct keys a request, up to 4 in flight), then of the session items they name; never a `Scan` | as state |
//! | force release | the state's read, then per held slot: for a lease of a session whose item exists, `UpdateItem` [`REVOKE_CONDITION`](expressions::REVOKE_CONDITION) / [`REVOKE_UPDATE`](expressions::REVOKE_UPDATE) on the session item (at most [`MAX_REVOKED`](crate::MAX_REVOKED) waiting); then `UpdateItem`, [`FORCE_CONDITION`](expressions::FORCE_CONDITION) / [`FORCE_UPDATE`](expressions::FORCE_UPDATE), `ALL_OLD` | each step one conditional write; revoked first, so the holder's next renewal sees it, and an acquirer treats a revoked token as free if the forcer stops before freeing |
//! | list | one `Scan` per page, `Limit` [`MAX_LIST_SCAN`](leasehold::store::MAX_LIST_SCAN), [`LIST_FILTER`](expressions::LIST_FILTER) (see the `list` module), then the session items the page names | each item read whole |
//! | stale items | two `Scan`s with `Select = COUNT`, [`STALE_FILTER`](expressions::STALE_FILTER) and [`PAST_TTL_FILTER`](expressions::PAST_TTL_FILTER) (see [`StaleCount`](crate::StaleCount)) | counts, no decision |
//! | check | a consistent `GetItem` of a probe key | — |
//! | create the table | `CreateTable`, `DescribeTable` until active, `UpdateTimeToLive` on `ttl` ([`create_table`](crate::create_table)) | — |
//!
//! **Why sessions this way.** DynamoDB has no multi-item write but `TransactWriteItems`, which is
//! all or nothing over at most 100 items at twice the write cost, and no server clock: one
//! renewal per lease, or per 100 leases, stays O(N). A session item whose end the lock items
//! refer to makes a beat one write, and the rules above keep what one lease item promised: an
//! attached lease is held until the later of its own term and its session's end (so a lock is
//! never free earlier than its lease said), a forced release is seen by the holder's next
//! renewal (the `revoked` set, returned by that very write), and a release frees its item at once.
//! A grant joins a session at once only while this instance renews one (renewed within half a
//! lease: its elector is heartbeating); otherwise at its first extension. So a lease taken by a
//! process that renews nothing stays what it was granted, and the leases of a heartbeating
//! process cost one write each to take and nothing more to keep.
//!
//! A failed condition is contention or a lease no longer held, never an error: the request
//! answers `Taken`, `NotHeld` or `None`, as its method says.

use std::collections::HashMap;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use leasehold::store::StoreResult;

use crate::classify::classify;
use crate::metrics::Operation;
use crate::record::{Attributes, s};
use crate::store::DynamoDbStore;
use expressions::LOCK_NAME;

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

    /// The conditional `UpdateItem` of the item `key` in the store's table that every change in
    /// this room starts from: `condition`, `update` and the attribute names they use, asking
    /// for the consumed capacity (which the metrics count). The caller adds its values and what
    /// it wants returned, and sends it with [`send_update`](Self::send_update).
    pub(crate) fn update_item(
        &self,
        key: impl Into<String>,
        condition: &str,
        update: &str,
        names: &'static [&'static str],
    ) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.options.table)
            .key(LOCK_NAME, s(key))
            .condition_expression(condition)
            .update_expression(update)
            .set_expression_attribute_names(Some(Self::names(names)))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
    }

    /// Sends `request` through the metered send, counted as `operation`.
    ///
    /// # Errors
    ///
    /// The SDK's error: a failed condition is one (see [`conditional_failure`]).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request; DynamoDB may still apply it.
    pub(crate) async fn send_update(
        &self,
        operation: Operation,
        request: UpdateItemFluentBuilder,
    ) -> Result<UpdateItemOutput, SdkError<UpdateItemError, HttpResponse>> {
        self.metered(operation, |probe| {
            request.customize().interceptor(probe).send()
        })
        .await
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
