//! The [`FencedSink`] adapters of this crate's fenced writes, so that one scenario (the testkit's
//! paused stale holder, the benchmark's fenced-sinks safety runs) can drive them: [`ConditionSink`] (the
//! condition builder on a user table, with `PutItem` or `UpdateItem`) and [`TransactionSink`] (a
//! fenced transaction conditioned on the lease item).
//!
//! Both write items `{id: <resource name>, value: <n>}` to a user table with the string partition
//! key [`SINK_KEY`] (create it with [`create_sink_table`]).

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use leasehold::LeaderContext;
use leasehold::fence::{
    FenceRefusal, FencedSink, ResourceName, SinkAnswer, SinkError, sink_answer,
};
use leasehold::store::StoreResult;

use super::{
    ConditionalWriteError, FenceCondition, Fenced, FencedTransactionError, FencedWriteError,
};
use crate::DynamoDbStore;
use crate::classify::classify;
use crate::record::{n, s};

/// The partition key (string) of a sink table: the resource name.
pub const SINK_KEY: &str = "id";
/// The attribute holding a sink item's value (a number).
pub const SINK_VALUE: &str = "value";

/// How many times a [`TransactionSink`] write is tried when DynamoDB cancels it for a conflict
/// with a concurrent transaction on the same items (as an application would retry).
const CONFLICT_ATTEMPTS: u32 = 8;

/// Creates the sink table `table` (string partition key [`SINK_KEY`], on-demand) if it is missing
/// and waits until it is active.
///
/// # Errors
///
/// The classified error of the request; a permanent one for an invalid table name or an existing
/// table with another key.
///
/// # Cancel safety
///
/// Cancel safe: a creation already sent goes on, and the next call waits for it.
pub async fn create_sink_table(client: &Client, table: &str) -> StoreResult<()> {
    crate::protocol::table::create_keyed_table(client, table, SINK_KEY).await
}

/// Which request a [`ConditionSink`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkWrite {
    /// `PutItem` of the whole item, fenced.
    Put,
    /// `UpdateItem` of the value, with a condition and names of its own (`attribute_not_exists`
    /// of a `frozen` attribute no item has), fenced: the merge is exercised on every write.
    Update,
}

/// The condition builder on a user table: every write is a `PutItem` or `UpdateItem` made fenced
/// by [`Fenced::fenced`], a refusal told by [`FenceCondition::refusal`].
#[derive(Debug, Clone)]
pub struct ConditionSink {
    client: Client,
    table: String,
    write: SinkWrite,
}

impl ConditionSink {
    /// A sink writing to `table` (see [`create_sink_table`]) with `write` requests.
    pub fn new(client: Client, table: impl Into<String>, write: SinkWrite) -> Self {
        Self {
            client,
            table: table.into(),
            write,
        }
    }

    async fn send(
        &self,
        resource: &ResourceName,
        fence: &FenceCondition,
        value: u64,
    ) -> Result<bool, SinkError> {
        let key = s(resource.as_str());
        match self.write {
            SinkWrite::Put => accepted(
                fence,
                resource,
                self.client
                    .put_item()
                    .table_name(&self.table)
                    .item(SINK_KEY, key)
                    .item(SINK_VALUE, n(value))
                    .fenced(fence)?
                    .send()
                    .await,
            ),
            SinkWrite::Update => accepted(
                fence,
                resource,
                self.client
                    .update_item()
                    .table_name(&self.table)
                    .key(SINK_KEY, key)
                    .update_expression("SET #value = :value")
                    .condition_expression("attribute_not_exists(#frozen)")
                    .expression_attribute_names("#value", SINK_VALUE)
                    .expression_attribute_names("#frozen", "frozen")
                    .expression_attribute_values(":value", n(value))
                    .fenced(fence)?
                    .send()
                    .await,
            ),
        }
    }
}

/// `Ok(true)` for an applied write, `Ok(false)` for one refused by its fence, the error
/// otherwise. The sinks' own conditions always hold, so a conditional failure without the item (an
/// endpoint that ignores `ReturnValuesOnConditionCheckFailure`, as dynalite does) is the fence's
/// too; one whose item records a fence no higher than the writer's cannot be, and is an error.
fn accepted<O, E: ConditionalWriteError>(
    fence: &FenceCondition,
    resource: &ResourceName,
    sent: Result<O, SdkError<E>>,
) -> Result<bool, SinkError> {
    let refused = |e: &FencedWriteError<E>| {
        e.is_stale() || matches!(e, FencedWriteError::ConditionFailed { current: None, .. })
    };
    sink_answer(sent.map_err(|err| fence.refusal(resource, err)), refused)
}

#[async_trait::async_trait]
impl FencedSink for ConditionSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        self.send(resource, &FenceCondition::of(ctx), value).await
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        read_value(&self.client, &self.table, resource).await
    }

    fn describe(&self) -> String {
        let write = match self.write {
            SinkWrite::Put => "PutItem",
            SinkWrite::Update => "UpdateItem",
        };
        format!("dynamodb fenced {write} ({})", self.table)
    }
}

/// A fenced transaction: every write is a `TransactWriteItems` of one `Put` to the sink table
/// plus the lease check of [`DynamoDbStore::fenced`]. The store must have the table
/// and key prefix of the stores the scenario's locks are taken on.
#[derive(Debug)]
pub struct TransactionSink {
    store: DynamoDbStore,
    table: String,
}

impl TransactionSink {
    /// A sink writing to `table` (see [`create_sink_table`]) in transactions fenced by the lease
    /// items of `store`.
    pub fn new(store: DynamoDbStore, table: impl Into<String>) -> Self {
        Self {
            store,
            table: table.into(),
        }
    }
}

#[async_trait::async_trait]
impl FencedSink for TransactionSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let transaction = self.store.fenced(ctx);
        let put = Put::builder()
            .table_name(&self.table)
            .item(SINK_KEY, s(resource.as_str()))
            .item(SINK_VALUE, n(value))
            .build()?;
        let mut attempt = 1;
        loop {
            let item = TransactWriteItem::builder().put(put.clone()).build();
            match transaction.write([item]).await {
                // A conflict is never a refusal: the lease check did not fail.
                Err(e) if attempt < CONFLICT_ATTEMPTS && conflict(&e) => {
                    tokio::time::sleep(std::time::Duration::from_millis(5 << attempt)).await;
                    attempt += 1;
                }
                written => return sink_answer(written, FencedTransactionError::is_lease_lost),
            }
        }
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        read_value(self.store.client(), &self.table, resource).await
    }

    fn describe(&self) -> String {
        format!("dynamodb fenced transaction ({})", self.table)
    }
}

/// Whether DynamoDB cancelled the transaction for a conflict with another one.
fn conflict(err: &FencedTransactionError) -> bool {
    err.cancellation_codes()
        .is_some_and(|codes| codes.contains(&"TransactionConflict"))
}

/// The value of `resource`'s item, read consistently.
async fn read_value(
    client: &Client,
    table: &str,
    resource: &ResourceName,
) -> Result<Option<u64>, SinkError> {
    let out = client
        .get_item()
        .table_name(table)
        .key(SINK_KEY, s(resource.as_str()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| classify("GetItem", table, e))?;
    match out.item.as_ref().and_then(|i| i.get(SINK_VALUE)) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => Ok(Some(v.parse()?)),
        Some(other) => Err(format!("{resource:?} holds a {SINK_VALUE} of {other:?}").into()),
    }
}
