//! `FencedTransaction`: a user's `TransactWriteItems` that commits only while the holder still
//! holds its lease, through a `ConditionCheck` on the lease item in the same transaction.

use leasehold::store::host_epoch_ms;
use std::collections::HashMap;
use std::fmt;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::builders::TransactWriteItemsFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use leasehold::fence::{ResourceName, StaleFence};
use leasehold::{LeaderContext, Lease, LockName, store::Token};

use super::refusal::CONDITIONAL_CHECK_FAILED;

use crate::expressions::{
    LEASE_CHECK_CONDITION, LEASE_CHECK_NAMES, LOCK_NAME, SESSION_CHECK_CONDITION,
    SESSION_CHECK_NAMES, SESSION_LEASE_CHECK_CONDITION, SESSION_LEASE_CHECK_NAMES,
};
use crate::record::{Item, n, s};
use crate::store::DynamoDbStore;

/// DynamoDB's limit on the items of one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// The most items of the user's a [`FencedTransaction`] takes: one of DynamoDB's 100 is the
/// lease check.
pub const MAX_FENCED_TRANSACTION_ITEMS: usize = MAX_TRANSACTION_ITEMS - 1;

/// The most items of the user's a [`FencedTransaction`] of a lease held under a session takes:
/// two of DynamoDB's 100 are the lease check and the session check.
pub const MAX_FENCED_SESSION_TRANSACTION_ITEMS: usize = MAX_TRANSACTION_ITEMS - 2;

/// A user's `TransactWriteItems` fenced by the lease itself: leasehold adds a `ConditionCheck` on
/// the lock's lease item ([`LEASE_CHECK_CONDITION`]: it still carries this holder's token and
/// fence, and its lease has not ended by this client's clock), so the user's writes commit only
/// while this holder holds the lease. Otherwise DynamoDB cancels the whole transaction, nothing is
/// written, and the error is [`FencedTransactionError::Stale`] (a successor holds a higher fence)
/// or [`FencedTransactionError::LeaseLost`] (the lease expired or was released).
///
/// Make one with [`DynamoDbStore::fenced`]; it is a snapshot of the lease (lock, slot,
/// token, fence), cheap to keep for the holder's whole run. The transaction must reach the lease
/// table: same account and region as the user's tables, and `dynamodb:ConditionCheckItem`
/// permission on the lease table. The check takes one of the transaction's 100 items (and its
/// write capacity): at most [`MAX_FENCED_TRANSACTION_ITEMS`] (99) are the user's. A user's item
/// may not touch the lease item itself (DynamoDB allows one operation per item).
///
/// ```no_run
/// # async fn demo(store: leasehold_dynamodb::DynamoDbStore, ctx: leasehold::LeaderContext)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// use aws_sdk_dynamodb::types::{AttributeValue::S, Put, TransactWriteItem};
/// use leasehold_dynamodb::fence::FencedTransactionError;
///
/// let put = Put::builder()
///     .table_name("reports")
///     .item("id", S("daily".into()))
///     .item("state", S("done".into()))
///     .build()?;
/// let item = TransactWriteItem::builder().put(put).build();
/// match store.fenced(&ctx).write([item]).await {
///     Ok(_) => {}
///     Err(e) if e.is_lease_lost() => tracing::warn!("not the leader any more: {e}"),
///     Err(e) => return Err(e.into()),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FencedTransaction {
    client: Client,
    table: String,
    key: String,
    lock: LockName,
    slot: u32,
    fence: u64,
    token: Token,
    /// The session the lease was granted under (its id and its item's key), when it was
    /// granted by this store instance under one.
    session: Option<(String, String)>,
}

impl fmt::Debug for FencedTransaction {
    /// Never shows the token (the capability to extend or release the lease).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FencedTransaction")
            .field("table", &self.table)
            .field("key", &self.key)
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

/// Why a fenced transaction wrote nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedTransactionError {
    /// The lease item records a higher fence: a successor holds (or held) the lock. Its resource
    /// is the lock's name.
    #[error("{0}; the fenced transaction wrote nothing")]
    Stale(StaleFence),
    /// The lease item no longer carries this holder's lease (it expired by this client's clock, or
    /// was released or force-released) and records no higher fence, or DynamoDB did not return it
    /// to tell.
    #[error(
        "the lease of {lock} (slot {slot}, fence {fence}) was no longer held when the fenced \
         transaction ran (expired, released or taken over; the lease item records {}); the \
         transaction wrote nothing",
        current_fence.map_or_else(|| "no fence, or was not returned".to_owned(), |c| format!("fence {c}"))
    )]
    LeaseLost {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The holder's fence.
        fence: u64,
        /// The fence the lease item records, when it was returned.
        current_fence: Option<u64>,
    },
    /// More than [`MAX_FENCED_TRANSACTION_ITEMS`] items of the user's: nothing was sent.
    #[error(
        "a fenced transaction takes at most {max} items of yours (DynamoDB allows {} per \
         transaction and the lease check takes one); this one has {items}: split it",
        MAX_TRANSACTION_ITEMS
    )]
    TooManyItems {
        /// The user's items.
        items: usize,
        /// The limit, [`MAX_FENCED_TRANSACTION_ITEMS`].
        max: usize,
    },
    /// A user's item writes or checks the lease item itself: nothing was sent.
    #[error(
        "item {index} of the fenced transaction touches the lease item of {lock} itself \
         (DynamoDB allows one operation per item, and the lease check is one); leave the lease \
         item to leasehold"
    )]
    TouchesLeaseItem {
        /// The index of the item among the user's.
        index: usize,
        /// The lock.
        lock: LockName,
    },
    /// The lease check could not be built (a bug: it names every required field).
    #[error("the lease check of the fenced transaction could not be built: {0}")]
    Build(String),
    /// Any other failure, as the SDK reported it: a cancellation for another reason (a user
    /// item's own condition, `TransactionConflict`, …; the lease check's reason was not a failed
    /// condition), throttling, validation, network.
    #[error("DynamoDB TransactWriteItems failed: {}", DisplayErrorContext(.0))]
    Sdk(Box<SdkError<TransactWriteItemsError>>),
}

impl FencedTransactionError {
    /// Whether the transaction was refused because this holder's lease is gone
    /// ([`Stale`](Self::Stale) or [`LeaseLost`](Self::LeaseLost)).
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, Self::Stale(_) | Self::LeaseLost { .. })
    }

    /// The cancellation reason codes, when DynamoDB cancelled the transaction for another reason
    /// than the lease check (`"ConditionalCheckFailed"`, `"TransactionConflict"`, `"None"`, … in
    /// item order, the lease check last).
    pub fn cancellation_codes(&self) -> Option<Vec<&str>> {
        let Self::Sdk(err) = self else { return None };
        let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
            err.as_service_error()
        else {
            return None;
        };
        Some(
            cancelled
                .cancellation_reasons()
                .iter()
                .map(|r| r.code().unwrap_or("None"))
                .collect(),
        )
    }
}

impl DynamoDbStore {
    /// A [`FencedTransaction`] for the lease of `ctx` (which must come from an elector on this
    /// store, or one with the same table and key prefix): the entry of every fenced write.
    pub fn fenced(&self, ctx: &LeaderContext) -> FencedTransaction {
        self.fenced_by_lease(&ctx.lease())
    }

    /// A [`FencedTransaction`] for `lease`, given as a lease rather than a holder's context (a
    /// test, a lease read back from the store).
    pub fn fenced_by_lease(&self, lease: &Lease) -> FencedTransaction {
        FencedTransaction {
            client: self.client.clone(),
            table: self.options.table.clone(),
            key: self.key(&lease.lock, lease.slot),
            lock: lease.lock.clone(),
            slot: lease.slot,
            fence: lease.fence,
            token: lease.token,
            session: self
                .sessions
                .member(lease.token)
                .map(|m| (self.session_item(&m.session), m.session)),
        }
    }

    /// A [`FencedTransaction`] for the lease of `ctx`.
    #[deprecated(note = "use `DynamoDbStore::fenced(ctx)`")]
    pub fn fenced_transaction(&self, ctx: &LeaderContext) -> FencedTransaction {
        self.fenced(ctx)
    }

    /// A [`FencedTransaction`] for `lease`.
    #[deprecated(note = "use `DynamoDbStore::fenced_by_lease(lease)`")]
    pub fn fenced_transaction_of(&self, lease: &Lease) -> FencedTransaction {
        self.fenced_by_lease(lease)
    }
}

impl FencedTransaction {
    /// Runs `items` and the lease check as one `TransactWriteItems` on the store's client.
    ///
    /// # Errors
    ///
    /// [`FencedTransactionError::Stale`] or [`LeaseLost`](FencedTransactionError::LeaseLost) when
    /// the lease check failed (nothing was written);
    /// [`TooManyItems`](FencedTransactionError::TooManyItems) for more than 99 items and
    /// [`TouchesLeaseItem`](FencedTransactionError::TouchesLeaseItem) (nothing was sent);
    /// [`Sdk`](FencedTransactionError::Sdk) for every other failure.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the wait for DynamoDB's answer: the transaction may have been
    /// applied whole or not at all, never in part.
    pub async fn write(
        &self,
        items: impl IntoIterator<Item = TransactWriteItem>,
    ) -> Result<TransactWriteItemsOutput, FencedTransactionError> {
        let items: Vec<TransactWriteItem> = items.into_iter().collect();
        self.send(
            self.client
                .transact_write_items()
                .set_transact_items(Some(items)),
        )
        .await
    }

    /// Runs the user's own `request` (from any client that reaches the lease table, with its
    /// client request token, capacity reporting, …) with the lease check added as its last item.
    ///
    /// # Errors
    ///
    /// As [`write`](Self::write).
    ///
    /// # Cancel safety
    ///
    /// As [`write`](Self::write).
    pub async fn send(
        &self,
        request: TransactWriteItemsFluentBuilder,
    ) -> Result<TransactWriteItemsOutput, FencedTransactionError> {
        let items = request.get_transact_items().as_deref().unwrap_or_default();
        let check = items.len();
        let max = match self.session {
            Some(_) => MAX_FENCED_SESSION_TRANSACTION_ITEMS,
            None => MAX_FENCED_TRANSACTION_ITEMS,
        };
        if check > max {
            return Err(FencedTransactionError::TooManyItems { items: check, max });
        }
        if let Some(index) = items.iter().position(|i| self.touches_lease_item(i)) {
            return Err(FencedTransactionError::TouchesLeaseItem {
                index,
                lock: self.lock.clone(),
            });
        }
        let mut request = request.transact_items(self.lease_check()?);
        if let Some(session_check) = self.session_check()? {
            request = request.transact_items(session_check);
        }
        let sent = request.send().await;
        sent.map_err(|err| self.refusal(err, check))
    }

    /// The `ConditionCheck` on the lease item.
    fn lease_check(&self) -> Result<TransactWriteItem, FencedTransactionError> {
        let (condition, used) = match self.session {
            Some(_) => (SESSION_LEASE_CHECK_CONDITION, SESSION_LEASE_CHECK_NAMES),
            None => (LEASE_CHECK_CONDITION, LEASE_CHECK_NAMES),
        };
        let names = crate::expressions::names(used)
            .map(|(p, a)| (p.to_owned(), a.to_owned()))
            .collect();
        let mut check = ConditionCheck::builder()
            .table_name(&self.table)
            .key(LOCK_NAME, s(self.key.as_str()))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .expression_attribute_values(":token", s(self.token.to_hex()))
            .expression_attribute_values(":fence", n(self.fence))
            .expression_attribute_values(":now", n(host_epoch_ms()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some((_, id)) = &self.session {
            check = check.expression_attribute_values(":session", s(id.as_str()));
        }
        let check = check
            .build()
            .map_err(|e| FencedTransactionError::Build(e.to_string()))?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// The `ConditionCheck` on the session item of a lease held under a session
    /// ([`SESSION_CHECK_CONDITION`]): the session has not ended and has not revoked the token.
    fn session_check(&self) -> Result<Option<TransactWriteItem>, FencedTransactionError> {
        let Some((key, _)) = &self.session else {
            return Ok(None);
        };
        let names = crate::expressions::names(SESSION_CHECK_NAMES)
            .map(|(p, a)| (p.to_owned(), a.to_owned()))
            .collect();
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .key(LOCK_NAME, s(key.as_str()))
            .condition_expression(SESSION_CHECK_CONDITION)
            .set_expression_attribute_names(Some(names))
            .expression_attribute_values(":token", s(self.token.to_hex()))
            .expression_attribute_values(":now", n(host_epoch_ms()))
            .build()
            .map_err(|e| FencedTransactionError::Build(e.to_string()))?;
        Ok(Some(
            TransactWriteItem::builder().condition_check(check).build(),
        ))
    }

    /// Whether a user's item operates on the lease item.
    fn touches_lease_item(&self, item: &TransactWriteItem) -> bool {
        let target: Option<(&str, &HashMap<String, AttributeValue>)> = item
            .condition_check()
            .map(|c| (c.table_name(), c.key()))
            .or_else(|| item.put().map(|p| (p.table_name(), p.item())))
            .or_else(|| item.update().map(|u| (u.table_name(), u.key())))
            .or_else(|| item.delete().map(|d| (d.table_name(), d.key())));
        target.is_some_and(|(table, key)| {
            table == self.table
                && matches!(key.get(LOCK_NAME), Some(AttributeValue::S(k))
                    if *k == self.key || self.session.as_ref().is_some_and(|(s, _)| s == k))
        })
    }

    /// The error of a failed transaction whose lease check was item `check`.
    fn refusal(
        &self,
        err: SdkError<TransactWriteItemsError>,
        check: usize,
    ) -> FencedTransactionError {
        let reasons = match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
                cancelled.cancellation_reasons()
            }
            _ => &[],
        };
        let failed = |i: usize| {
            reasons
                .get(i)
                .filter(|r| r.code() == Some(CONDITIONAL_CHECK_FAILED))
        };
        if self.session.is_some() && failed(check).is_none() && failed(check + 1).is_some() {
            // The session ended or revoked the lease.
            return self.lease_lost(None);
        }
        let reason = reasons.get(check);
        let Some(reason) = reason.filter(|r| r.code() == Some(CONDITIONAL_CHECK_FAILED)) else {
            return FencedTransactionError::Sdk(Box::new(err));
        };
        let current_fence = reason
            .item()
            .and_then(|attrs| Item::parse(&self.key, attrs).ok())
            .map(|item| item.fence);
        match current_fence.filter(|c| *c > self.fence) {
            Some(highest) => match ResourceName::new(self.lock.as_str()) {
                Ok(resource) => FencedTransactionError::Stale(StaleFence {
                    resource,
                    fence: self.fence,
                    highest,
                }),
                Err(_) => self.lease_lost(current_fence),
            },
            None => self.lease_lost(current_fence),
        }
    }

    fn lease_lost(&self, current_fence: Option<u64>) -> FencedTransactionError {
        FencedTransactionError::LeaseLost {
            lock: self.lock.clone(),
            slot: self.slot,
            fence: self.fence,
            current_fence,
        }
    }
}
