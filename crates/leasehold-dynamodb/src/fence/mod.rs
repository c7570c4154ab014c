//! Fences enforced at the resource, in DynamoDB: the user's own writes refuse a holder whose lease
//! has ended.
//!
//! A fence protects nothing until the resource checks it (see [`leasehold::fence`]). This module
//! gives two checks, each starting from the holder's context:
//!
//! * **A condition builder for the user's own items** ([`FenceCondition::of`]`(&ctx)`, applied
//!   with [`Fenced::fenced`]): a `PutItem` or `UpdateItem` on any table, alone or inside a
//!   transaction, succeeds only if the item's fence admits the writer's by the rule of
//!   [`Admission`](leasehold::fence::Admission), and records the writer's fence in the item
//!   (attribute [`FenceAttribute`], default `leaseholdFence`). It merges with the write's own condition, update expression, names and
//!   values. [`FenceCondition::refusal`] turns the SDK's `ConditionalCheckFailedException` into a
//!   [`FencedWriteError`] carrying a [`StaleFence`](leasehold::fence::StaleFence) that names the
//!   fence the item records.
//! * **Fenced transactions** ([`FencedTransaction`], from
//!   [`DynamoDbStore::fenced`](crate::DynamoDbStore::fenced)`(&ctx)`): the user's
//!   `TransactWriteItems` plus a `ConditionCheck` on the lock's lease item, so the writes commit
//!   only while this holder holds the lease; otherwise nothing is written and the error is
//!   [`FencedTransactionError::Stale`] or [`FencedTransactionError::LeaseLost`].
//!
//! The first needs nothing but the fence (the items may live anywhere, even in another account);
//! the second needs the lease table in the same account and region, and checks the lease itself,
//! so it also refuses a holder whose lease expired without a successor yet. [`sinks`] has their
//! [`FencedSink`](leasehold::fence::FencedSink) adapters. The whole module is the crate's `fence`
//! feature (on by default).
//!
//! ```no_run
//! # async fn demo(client: aws_sdk_dynamodb::Client, ctx: leasehold::LeaderContext)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use aws_sdk_dynamodb::types::AttributeValue::{N, S};
//! use leasehold::fence::{FenceRefusal, ResourceName};
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
    FencedTransaction, FencedTransactionError, MAX_FENCED_SESSION_TRANSACTION_ITEMS,
    MAX_FENCED_TRANSACTION_ITEMS, MAX_TRANSACTION_ITEMS,
};
