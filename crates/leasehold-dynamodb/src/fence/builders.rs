//! `Fenced`: [`FenceCondition`] applied to the SDK's request builders in one line.

use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::builders::{PutBuilder, UpdateBuilder};

use super::condition::{FenceCondition, FenceConditionError, Parts};

/// Makes a `PutItem` or `UpdateItem` request fenced: `.fenced(&fence)?` before `.send()` (or, in a
/// transaction, before `.build()`). See [`FenceCondition`] for what it adds and keeps.
///
/// Implemented for `client.put_item()`, `client.update_item()`, and the transaction items
/// `Put::builder()` and `Update::builder()`. Call it after the request's own condition, update
/// expression, names and values are set (a put's item may come before or after).
///
/// ```no_run
/// # async fn demo(client: aws_sdk_dynamodb::Client, ctx: leasehold::LeaderContext)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// use aws_sdk_dynamodb::types::AttributeValue::{N, S};
/// use leasehold::fence::ResourceName;
/// use leasehold_dynamodb::fence::{FenceCondition, Fenced};
///
/// let fence = FenceCondition::of(&ctx);
/// let sent = client
///     .update_item()
///     .table_name("reports")
///     .key("id", S("daily".into()))
///     .update_expression("SET #rows = :rows")
///     .expression_attribute_names("#rows", "rows")
///     .expression_attribute_values(":rows", N("1200".into()))
///     .fenced(&fence)? // the one added line
///     .send()
///     .await;
/// if let Err(err) = sent {
///     return Err(fence.refusal(&ResourceName::new("reports/daily")?, err).into());
/// }
/// # Ok(()) }
/// ```
pub trait Fenced: Sized {
    /// This request, conditioned on `fence` and recording it.
    ///
    /// # Errors
    ///
    /// [`FenceConditionError`] when the request's own parts clash with the fence: a reserved
    /// placeholder (`#leasehold_…`, `:leasehold_…`, e.g. fenced twice), an update that writes the
    /// fence attribute itself, the fence attribute as part of the key, a non-number value in the
    /// put's fence attribute, or DynamoDB's legacy `Expected` / `ConditionalOperator` /
    /// `AttributeUpdates` parameters.
    fn fenced(self, fence: &FenceCondition) -> Result<Self, FenceConditionError>;
}

/// The parts of a request builder that fencing reads and writes (the same accessors on every
/// builder), and the legacy parameters it refuses.
macro_rules! parts {
    (take $b:ident) => {
        Parts {
            condition: $b.get_condition_expression().clone(),
            names: $b.get_expression_attribute_names().clone(),
            values: $b.get_expression_attribute_values().clone(),
            on_failure: $b.get_return_values_on_condition_check_failure().clone(),
        }
    };
    (put $b:ident, $parts:ident) => {
        $b.set_condition_expression($parts.condition)
            .set_expression_attribute_names($parts.names)
            .set_expression_attribute_values($parts.values)
            .set_return_values_on_condition_check_failure($parts.on_failure)
    };
    (legacy $b:ident, $($getter:ident => $name:literal),*) => {
        $(
            if $b.$getter().is_some() {
                return Err(FenceConditionError::LegacyParameter { parameter: $name });
            }
        )*
    };
}

/// `Fenced` for a put-like builder: the fence goes into the item.
macro_rules! fenced_put {
    ($builder:ty $(, $getter:ident => $name:literal)*) => {
        impl Fenced for $builder {
            fn fenced(self, fence: &FenceCondition) -> Result<Self, FenceConditionError> {
                parts!(legacy self, $($getter => $name),*);
                let mut item = self.get_item().clone();
                fence.record_in_item(&mut item)?;
                let mut parts = parts!(take self);
                fence.merge(&mut parts)?;
                Ok(parts!(put self, parts).set_item(item))
            }
        }
    };
}

/// `Fenced` for an update-like builder: the fence joins the update expression.
macro_rules! fenced_update {
    ($builder:ty $(, $getter:ident => $name:literal)*) => {
        impl Fenced for $builder {
            fn fenced(self, fence: &FenceCondition) -> Result<Self, FenceConditionError> {
                parts!(legacy self, $($getter => $name),*);
                let mut update = self.get_update_expression().clone();
                fence.record_in_update(
                    self.get_key().as_ref(),
                    &mut update,
                    self.get_expression_attribute_names().as_ref(),
                )?;
                let mut parts = parts!(take self);
                fence.merge(&mut parts)?;
                Ok(parts!(put self, parts).set_update_expression(update))
            }
        }
    };
}

fenced_put!(PutItemFluentBuilder, get_expected => "Expected",
    get_conditional_operator => "ConditionalOperator");
fenced_put!(PutBuilder);
fenced_update!(UpdateItemFluentBuilder, get_expected => "Expected",
    get_conditional_operator => "ConditionalOperator", get_attribute_updates => "AttributeUpdates");
fenced_update!(UpdateBuilder);

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_dynamodb::types::{
        AttributeValue, ExpectedAttributeValue, Put, ReturnValuesOnConditionCheckFailure, Update,
    };

    use super::*;
    use crate::fence::{FENCE_CONDITION, FENCE_NAME, FENCE_VALUE};

    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.into())
    }

    #[test]
    fn a_transaction_put_gets_condition_names_values_and_the_fence_in_its_item() {
        let put = Put::builder()
            .table_name("orders")
            .item("id", AttributeValue::S("42".into()))
            .item("leaseholdFence", n("3"))
            .condition_expression("attribute_not_exists(#paid)")
            .expression_attribute_names("#paid", "paid")
            .fenced(&FenceCondition::of_fence(9))
            .unwrap_or_else(|e| panic!("{e}"))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(put.item().get("leaseholdFence"), Some(&n("9")));
        assert_eq!(
            put.condition_expression(),
            Some(format!("{FENCE_CONDITION} AND (attribute_not_exists(#paid))").as_str())
        );
        let names = put
            .expression_attribute_names()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            names,
            HashMap::from([
                ("#paid".to_owned(), "paid".to_owned()),
                (FENCE_NAME.to_owned(), "leaseholdFence".to_owned())
            ])
        );
        assert_eq!(
            put.expression_attribute_values()
                .and_then(|v| v.get(FENCE_VALUE)),
            Some(&n("9"))
        );
        assert_eq!(
            put.return_values_on_condition_check_failure(),
            Some(&ReturnValuesOnConditionCheckFailure::AllOld)
        );
    }

    #[test]
    fn a_transaction_update_gets_the_record_in_its_set_clause() {
        let update = Update::builder()
            .table_name("orders")
            .key("id", AttributeValue::S("42".into()))
            .update_expression("ADD #n :one")
            .fenced(&FenceCondition::of_fence(9))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            update.get_update_expression().as_deref(),
            Some("SET #leasehold_fence = :leasehold_fence ADD #n :one")
        );
    }

    #[test]
    fn clashes_are_refused() {
        let fence = FenceCondition::of_fence(1);
        let key_is_fence = Update::builder()
            .key("leaseholdFence", n("1"))
            .fenced(&fence);
        assert!(matches!(
            key_is_fence,
            Err(FenceConditionError::FenceIsKey { .. })
        ));
        let writes_fence = Update::builder()
            .update_expression("SET leaseholdFence = :x")
            .fenced(&fence);
        assert!(matches!(
            writes_fence,
            Err(FenceConditionError::UpdatesFence { .. })
        ));
        let foreign = Put::builder()
            .item("leaseholdFence", AttributeValue::S("x".into()))
            .fenced(&fence);
        assert!(matches!(
            foreign,
            Err(FenceConditionError::ForeignAttribute { .. })
        ));
        let twice = Put::builder().fenced(&fence).and_then(|b| b.fenced(&fence));
        assert!(matches!(
            twice,
            Err(FenceConditionError::ReservedPlaceholder { .. })
        ));
    }

    #[test]
    fn legacy_parameters_are_refused_on_the_fluent_builders() {
        let client = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::Config::builder()
                .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
                .build(),
        );
        let legacy = client
            .put_item()
            .expected("a", ExpectedAttributeValue::builder().exists(false).build())
            .fenced(&FenceCondition::of_fence(1));
        assert!(matches!(
            legacy,
            Err(FenceConditionError::LegacyParameter {
                parameter: "Expected"
            })
        ));
    }
}
