//! `FencedWriteError`: a failed fenced write, told apart — stale fence, the write's own condition,
//! or any other SDK failure.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use leasehold::fence::{Admission, FenceRefusal, ResourceName, StaleFence};

use super::condition::FenceCondition;

/// The code of a transaction item whose condition failed, in a `TransactionCanceledException`'s
/// cancellation reasons.
pub(crate) const CONDITIONAL_CHECK_FAILED: &str = "ConditionalCheckFailed";

/// Why a fenced `PutItem` or `UpdateItem` was not applied ([`FenceCondition::refusal`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedWriteError<E: std::error::Error + 'static> {
    /// The item records a higher fence: the writer's lease ended and a successor has written
    /// since. Nothing was written.
    #[error(transparent)]
    Stale(StaleFence),
    /// The condition failed, but not provably because of the fence: the item records no higher
    /// fence (`current` is its fence, `None` for none), so the write's own condition failed; or
    /// DynamoDB did not return the item (`current` is `None`: the request did not ask for
    /// `ReturnValuesOnConditionCheckFailure = ALL_OLD`, or the endpoint — dynalite — ignores it).
    /// Nothing was written.
    #[error(
        "the fenced write with fence {fence} to {resource:?} was refused by its condition, and \
         not provably as stale (the item records fence {}): its own condition failed, or the \
         item was not returned to tell",
        current.map_or_else(|| "none, or was not returned".to_owned(), |c| c.to_string())
    )]
    ConditionFailed {
        /// The resource written.
        resource: ResourceName,
        /// The writer's fence.
        fence: u64,
        /// The fence the item records, when it was returned and has one.
        current: Option<u64>,
    },
    /// The item's fence attribute holds something other than a number: it is not a fence, and
    /// the write was refused.
    #[error(
        "the item {resource:?} has a {attribute:?} attribute that is not a number, so it is not a \
         fence; the fenced write was refused (choose another fence attribute)"
    )]
    ForeignAttribute {
        /// The resource written.
        resource: ResourceName,
        /// The fence attribute.
        attribute: String,
    },
    /// Any other failure of the request (throttling, validation, network, …).
    #[error("DynamoDB request failed: {}", DisplayErrorContext(.0))]
    Sdk(Box<SdkError<E>>),
}

/// [`Stale`](FencedWriteError::Stale) is the refusal: `err.stale()`, `err.is_stale()`.
impl<E: std::error::Error + 'static> FenceRefusal for FencedWriteError<E> {
    fn stale(&self) -> Option<&StaleFence> {
        match self {
            Self::Stale(stale) => Some(stale),
            _ => None,
        }
    }
}

/// The SDK errors of writes that [`FenceCondition::refusal`] reads: `PutItemError` and
/// `UpdateItemError`. (Fenced items of a transaction fail with a cancellation reason instead:
/// see [`FenceCondition::stale_in`].)
pub trait ConditionalWriteError:
    std::error::Error + Send + Sync + 'static + sealed::Sealed
{
    /// `Some(item)` when the error is a `ConditionalCheckFailedException` (the item as it was,
    /// when returned); `None` for every other error.
    fn condition_failed(&self) -> Option<Option<&HashMap<String, AttributeValue>>>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::PutItemError {}
    impl Sealed for super::UpdateItemError {}
}

impl ConditionalWriteError for PutItemError {
    fn condition_failed(&self) -> Option<Option<&HashMap<String, AttributeValue>>> {
        match self {
            Self::ConditionalCheckFailedException(failed) => Some(failed.item()),
            _ => None,
        }
    }
}

impl ConditionalWriteError for UpdateItemError {
    fn condition_failed(&self) -> Option<Option<&HashMap<String, AttributeValue>>> {
        match self {
            Self::ConditionalCheckFailedException(failed) => Some(failed.item()),
            _ => None,
        }
    }
}

/// What an item's fence attribute says.
enum Recorded {
    Fence(Option<u64>),
    Foreign,
}

impl FenceCondition {
    /// Tells why a fenced write failed: a `ConditionalCheckFailedException` whose item (returned
    /// by `ReturnValuesOnConditionCheckFailure = ALL_OLD`, which [`Fenced`](super::Fenced) asks
    /// for) records a higher fence is [`FencedWriteError::Stale`], naming that fence as the
    /// highest; other conditional failures are [`FencedWriteError::ConditionFailed`]; everything
    /// else stays the SDK's error in [`FencedWriteError::Sdk`]. `resource` names the item in the
    /// error.
    pub fn refusal<E: ConditionalWriteError>(
        &self,
        resource: &ResourceName,
        err: SdkError<E>,
    ) -> FencedWriteError<E> {
        let failed = match &err {
            SdkError::ServiceError(service) => service.err().condition_failed(),
            _ => None,
        };
        match failed {
            Some(item) => self.judge(resource, item),
            None => FencedWriteError::Sdk(Box::new(err)),
        }
    }

    /// The [`StaleFence`] of a fenced item of a transaction, when `reason` (its entry in the
    /// `TransactionCanceledException`'s cancellation reasons) is a conditional-check failure whose
    /// returned item records a higher fence.
    pub fn stale_in(
        &self,
        resource: &ResourceName,
        reason: &CancellationReason,
    ) -> Option<StaleFence> {
        if reason.code() != Some(CONDITIONAL_CHECK_FAILED) {
            return None;
        }
        match self.judge::<PutItemError>(resource, reason.item()) {
            FencedWriteError::Stale(stale) => Some(stale),
            _ => None,
        }
    }

    /// The error of a conditional failure whose item (as returned) is `item`.
    fn judge<E: std::error::Error + 'static>(
        &self,
        resource: &ResourceName,
        item: Option<&HashMap<String, AttributeValue>>,
    ) -> FencedWriteError<E> {
        let current = match self.recorded(item) {
            Recorded::Fence(current) => current,
            Recorded::Foreign => {
                return FencedWriteError::ForeignAttribute {
                    resource: resource.clone(),
                    attribute: self.attribute().as_str().to_owned(),
                };
            }
        };
        match Admission::decide(resource, self.fence(), current) {
            Admission::Stale(stale) => FencedWriteError::Stale(stale),
            Admission::Admitted { .. } => FencedWriteError::ConditionFailed {
                resource: resource.clone(),
                fence: self.fence(),
                current,
            },
        }
    }

    /// The fence `item` records.
    fn recorded(&self, item: Option<&HashMap<String, AttributeValue>>) -> Recorded {
        match item.and_then(|i| i.get(self.attribute().as_str())) {
            None => Recorded::Fence(None),
            Some(AttributeValue::N(n)) => n
                .parse::<u64>()
                .map_or(Recorded::Foreign, |f| Recorded::Fence(Some(f))),
            Some(_) => Recorded::Foreign,
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::config::http::HttpResponse;
    use aws_sdk_dynamodb::types::error::ConditionalCheckFailedException;

    use super::*;

    fn failed(item: Option<(&str, AttributeValue)>) -> SdkError<PutItemError> {
        let mut failed = ConditionalCheckFailedException::builder();
        if let Some((name, value)) = item {
            failed = failed.item(name, value);
        }
        SdkError::service_error(
            PutItemError::ConditionalCheckFailedException(failed.build()),
            HttpResponse::new(
                400_u16.try_into().unwrap_or_else(|e| panic!("{e}")),
                "".into(),
            ),
        )
    }

    fn resource() -> ResourceName {
        ResourceName::new("orders/42").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_higher_fence_in_the_returned_item_is_stale_and_named() {
        let fence = FenceCondition::of_fence(7);
        let err = fence.refusal(
            &resource(),
            failed(Some(("leaseholdFence", AttributeValue::N("12".into())))),
        );
        let stale = err.stale().cloned().unwrap_or_else(|| panic!("{err}"));
        assert_eq!((stale.fence, stale.highest), (7, 12));
        assert_eq!(stale.resource, resource());
        assert!(
            err.to_string().contains("fence 12 was already accepted"),
            "{err}"
        );
    }

    #[test]
    fn other_conditional_failures_are_not_called_stale() {
        let fence = FenceCondition::of_fence(7);
        for (item, current) in [
            (
                Some(("leaseholdFence", AttributeValue::N("7".into()))),
                Some(7),
            ),
            (Some(("other", AttributeValue::N("99".into()))), None),
            (None, None),
        ] {
            let err = fence.refusal(&resource(), failed(item));
            assert!(
                matches!(err, FencedWriteError::ConditionFailed { current: c, fence: 7, .. } if c == current),
                "{err:?}"
            );
        }
        let foreign = fence.refusal(
            &resource(),
            failed(Some(("leaseholdFence", AttributeValue::S("x".into())))),
        );
        assert!(
            matches!(foreign, FencedWriteError::ForeignAttribute { .. }),
            "{foreign:?}"
        );
    }

    #[test]
    fn a_cancellation_reason_names_the_stale_fence_only_for_a_failed_condition() {
        let fence = FenceCondition::of_fence(3);
        let reason = |code: &str| {
            CancellationReason::builder()
                .code(code)
                .item("leaseholdFence", AttributeValue::N("4".into()))
                .build()
        };
        assert_eq!(
            fence
                .stale_in(&resource(), &reason(CONDITIONAL_CHECK_FAILED))
                .map(|s| s.highest),
            Some(4)
        );
        assert_eq!(
            fence.stale_in(&resource(), &reason("TransactionConflict")),
            None
        );
    }
}
