//! Fences enforced at the resource, in DynamoDB: the user's own writes refuse a holder whose lease
//! has ended.
//!
//! A fence protects nothing until the resource checks it (see [`leasehold::fence`]). This module
//! gives two checks:
//!
//! * **A condition builder for the user's own items** ([`FenceCondition`], applied with
//!   [`Fenced::fenced`]): a `PutItem` or `UpdateItem` on any table, alone or inside a
//!   transaction, succeeds only if the item records no fence yet or one no higher than the
//!   writer's, and records the writer's fence in the item (attribute [`FenceAttribute`], default
//!   `leaseholdFence`). It merges with the write's own condition, update expression, names and
//!   values. [`FenceCondition::refusal`] turns the SDK's `ConditionalCheckFailedException` into a
//!   [`FencedWriteError`] carrying a [`StaleFence`](leasehold::fence::StaleFence) that names the
//!   fence the item records.
//! * **Fenced transactions** ([`FencedTransaction`], from
//!   [`DynamoDbStore::fenced_transaction`](crate::DynamoDbStore::fenced_transaction)): the user's
//!   `TransactWriteItems` plus a `ConditionCheck` on the lock's lease item, so the writes commit
//!   only while this holder holds the lease; otherwise nothing is written and the error is
//!   [`FencedTransactionError::Stale`] or [`FencedTransactionError::LeaseLost`].
//!
//! The first needs nothing but the fence (the items may live anywhere, even in another account);
//! the second needs the lease table in the same account and region, and checks the lease itself,
//! so it also refuses a holder whose lease expired without a successor yet. Both follow the one
//! rule of [`Admission::decide`](leasehold::fence::Admission::decide): equal fences are the same
//! holder writing again and are accepted.
//!
//! ```no_run
//! # async fn demo(client: aws_sdk_dynamodb::Client, ctx: leasehold::LeaderContext)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use aws_sdk_dynamodb::types::AttributeValue::{N, S};
//! use leasehold::fence::ResourceName;
//! use leasehold_dynamodb::fence::{FenceCondition, Fenced};
//!
//! let fence = FenceCondition::of(&ctx);
//! let put = client.put_item().table_name("reports")
//!     .item("id", S("daily".into())).item("rows", N("1200".into()))
//!     .fenced(&fence)?
//!     .send().await;
//! if let Err(err) = put {
//!     let err = fence.refusal(&ResourceName::new("reports/daily")?, err);
//!     if let Some(stale) = err.stale() {
//!         tracing::warn!(highest = stale.highest, "a successor has written: {stale}");
//!     }
//!     return Err(err.into());
//! }
//! # Ok(()) }
//! ```

mod attribute;
mod builders;
mod condition;
mod refusal;
#[cfg(feature = "testkit")]
pub mod sinks;
mod transaction;

pub use attribute::{
    DEFAULT_FENCE_ATTRIBUTE, FenceAttribute, FenceAttributeError, MAX_FENCE_ATTRIBUTE_LEN,
};
pub use builders::Fenced;
pub use condition::{
    FENCE_CONDITION, FENCE_NAME, FENCE_RECORD, FENCE_VALUE, FenceCondition, FenceConditionError,
    RESERVED_PREFIX,
};
pub use refusal::{ConditionalWriteError, FencedWriteError};
pub use transaction::{
    FencedTransaction, FencedTransactionError, MAX_FENCED_TRANSACTION_ITEMS, MAX_TRANSACTION_ITEMS,
};
