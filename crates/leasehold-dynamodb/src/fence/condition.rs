//! `FenceCondition`: the condition and the record that make a user's write fenced, merged into the
//! write's own expressions.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use leasehold::LeaderContext;

use super::attribute::FenceAttribute;

/// The placeholder of the fence attribute's name in a fenced write.
pub const FENCE_NAME: &str = "#leasehold_fence";
/// The placeholder of the writer's fence in a fenced write.
pub const FENCE_VALUE: &str = ":leasehold_fence";
/// The prefix of every placeholder leasehold adds to a user's request (`#leasehold_…`,
/// `:leasehold_…`): a request that already uses one is refused.
pub const RESERVED_PREFIX: &str = "leasehold_";

/// The fence condition: the item records no fence yet, or one no higher than the writer's.
/// A user condition is appended as `… AND (user condition)`.
pub const FENCE_CONDITION: &str =
    "(attribute_not_exists(#leasehold_fence) OR #leasehold_fence <= :leasehold_fence)";
/// The record: the action added to the `SET` clause of an update (a put writes the attribute into
/// its item instead).
pub const FENCE_RECORD: &str = "#leasehold_fence = :leasehold_fence";

/// Makes a user's own `PutItem` or `UpdateItem` (on any table of theirs, alone or in a
/// transaction) **fenced**: the write succeeds only if the item has no fence attribute yet or its
/// fence is at most the writer's, and it records the writer's fence in the item.
///
/// Apply it with [`Fenced::fenced`](super::Fenced::fenced), one line on the SDK's builders; map a
/// failure with [`refusal`](Self::refusal). The write's own condition, update expression,
/// attribute names and values are kept:
///
/// * condition: [`FENCE_CONDITION`], then ` AND (` the write's own condition `)` if it has one;
/// * update: [`FENCE_RECORD`] joins the expression's `SET` clause (one is added if it has none);
///   a put gets the attribute in its item (a number already there, an earlier fence, is replaced);
/// * names and values: [`FENCE_NAME`] and [`FENCE_VALUE`] are added; placeholders starting with
///   `#leasehold_` or `:leasehold_` are reserved, and a request that already has one (for example
///   one fenced twice) is refused;
/// * `ReturnValuesOnConditionCheckFailure` is set to `ALL_OLD` unless the write chose otherwise,
///   so that a refusal can name the fence the item records.
///
/// ```
/// use leasehold_dynamodb::fence::{FenceAttribute, FenceCondition};
///
/// let fence = FenceCondition::of_fence(42).with_attribute(FenceAttribute::new("version")?);
/// assert_eq!(fence.fence(), 42);
/// assert_eq!(
///     fence.condition_expression(Some("#s = :open")),
///     "(attribute_not_exists(#leasehold_fence) OR #leasehold_fence <= :leasehold_fence) AND (#s = :open)"
/// );
/// assert_eq!(
///     fence.update_expression(Some("SET #s = :done REMOVE #lock")),
///     "SET #leasehold_fence = :leasehold_fence, #s = :done REMOVE #lock"
/// );
/// # Ok::<(), leasehold_dynamodb::fence::FenceAttributeError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceCondition {
    fence: u64,
    attribute: FenceAttribute,
}

/// Why a write could not be fenced: its own parts clash with the fence's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FenceConditionError {
    /// The request already uses a placeholder reserved for leasehold (it may be fenced twice).
    #[error(
        "the request already uses the placeholder {placeholder:?}; placeholders starting with \
         #leasehold_ or :leasehold_ are reserved for the fence (was the request fenced twice?)"
    )]
    ReservedPlaceholder {
        /// The placeholder.
        placeholder: String,
    },
    /// The update expression writes the fence attribute itself.
    #[error(
        "the update expression writes the fence attribute {attribute:?} itself; leasehold records \
         the fence there (choose another attribute with FenceCondition::with_attribute, or stop \
         writing it)"
    )]
    UpdatesFence {
        /// The fence attribute.
        attribute: String,
    },
    /// The fence attribute is part of the key of the item written.
    #[error(
        "the fence attribute {attribute:?} is part of the item's key; choose another attribute \
         with FenceCondition::with_attribute"
    )]
    FenceIsKey {
        /// The fence attribute.
        attribute: String,
    },
    /// The put's item already holds the fence attribute, and not as a number (so not as a fence).
    #[error(
        "the item already has a {attribute:?} attribute that is not a number, so it is not a \
         fence; choose another fence attribute with FenceCondition::with_attribute"
    )]
    ForeignAttribute {
        /// The fence attribute.
        attribute: String,
    },
    /// The request uses DynamoDB's legacy conditional parameters, which cannot be combined with
    /// expressions.
    #[error(
        "the request uses the legacy parameter {parameter} (DynamoDB refuses it together with \
         expressions); write its condition as a condition expression"
    )]
    LegacyParameter {
        /// The parameter (`Expected`, `ConditionalOperator` or `AttributeUpdates`).
        parameter: &'static str,
    },
}

/// The expression parts of a request that fencing changes.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub(crate) condition: Option<String>,
    pub(crate) names: Option<HashMap<String, String>>,
    pub(crate) values: Option<HashMap<String, AttributeValue>>,
    pub(crate) on_failure: Option<ReturnValuesOnConditionCheckFailure>,
}

impl FenceCondition {
    /// The condition for the holder of `ctx` (its fence), recorded in the default attribute
    /// ([`DEFAULT_FENCE_ATTRIBUTE`](super::DEFAULT_FENCE_ATTRIBUTE), `leaseholdFence`): the entry
    /// of every fenced write.
    pub fn of(ctx: &LeaderContext) -> Self {
        Self::of_fence(ctx.fence())
    }

    /// The condition for a writer holding `fence`, given by hand rather than by a holder's
    /// context (a job started with `$LEASEHOLD_FENCE`, a test), in the default attribute.
    pub fn of_fence(fence: u64) -> Self {
        Self {
            fence,
            attribute: FenceAttribute::default(),
        }
    }

    /// The condition for a writer holding `fence`.
    #[deprecated(note = "use `FenceCondition::of(ctx)`, or `FenceCondition::of_fence(fence)`")]
    pub fn new(fence: u64) -> Self {
        Self::of_fence(fence)
    }

    /// Records the fence in `attribute` instead of the default.
    #[must_use]
    pub fn with_attribute(mut self, attribute: FenceAttribute) -> Self {
        self.attribute = attribute;
        self
    }

    /// The writer's fence.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The attribute the fence is recorded in.
    pub fn attribute(&self) -> &FenceAttribute {
        &self.attribute
    }

    /// The fence value as DynamoDB takes it.
    pub(crate) fn value(&self) -> AttributeValue {
        AttributeValue::N(self.fence.to_string())
    }

    /// The condition expression of a fenced write whose own condition is `user` (blank counts as
    /// none): [`FENCE_CONDITION`], `AND (user)` when there is one.
    pub fn condition_expression(&self, user: Option<&str>) -> String {
        match user.map(str::trim).filter(|u| !u.is_empty()) {
            Some(user) => format!("{FENCE_CONDITION} AND ({user})"),
            None => FENCE_CONDITION.to_owned(),
        }
    }

    /// The update expression of a fenced update whose own expression is `user`: [`FENCE_RECORD`]
    /// first in its `SET` clause, or a `SET` clause of its own before the user's clauses.
    pub fn update_expression(&self, user: Option<&str>) -> String {
        let user = user.map(str::trim).filter(|u| !u.is_empty());
        let Some(user) = user else {
            return format!("SET {FENCE_RECORD}");
        };
        match keyword(user, "SET") {
            Some(end) => format!("{} {FENCE_RECORD},{}", &user[..end], &user[end..]),
            None => format!("SET {FENCE_RECORD} {user}"),
        }
    }

    /// Merges the fence into `parts`: condition, names, values and the failure return.
    pub(crate) fn merge(&self, parts: &mut Parts) -> Result<(), FenceConditionError> {
        let names = parts.names.get_or_insert_with(HashMap::new);
        let values = parts.values.get_or_insert_with(HashMap::new);
        if let Some(placeholder) = names
            .keys()
            .chain(values.keys())
            .find(|p| reserved(p))
            .cloned()
        {
            return Err(FenceConditionError::ReservedPlaceholder { placeholder });
        }
        names.insert(FENCE_NAME.to_owned(), self.attribute.as_str().to_owned());
        values.insert(FENCE_VALUE.to_owned(), self.value());
        parts.condition = Some(self.condition_expression(parts.condition.as_deref()));
        parts
            .on_failure
            .get_or_insert(ReturnValuesOnConditionCheckFailure::AllOld);
        Ok(())
    }

    /// Records the fence in a put's `item` (an earlier number there is replaced).
    pub(crate) fn record_in_item(
        &self,
        item: &mut Option<HashMap<String, AttributeValue>>,
    ) -> Result<(), FenceConditionError> {
        let item = item.get_or_insert_with(HashMap::new);
        let name = self.attribute.as_str();
        if item
            .get(name)
            .is_some_and(|v| !matches!(v, AttributeValue::N(_)))
        {
            return Err(FenceConditionError::ForeignAttribute {
                attribute: name.to_owned(),
            });
        }
        item.insert(name.to_owned(), self.value());
        Ok(())
    }

    /// Records the fence in an update of the item under `key` whose own expression is `update`
    /// (with the user's `names`, before [`merge`](Self::merge) adds the fence's).
    pub(crate) fn record_in_update(
        &self,
        key: Option<&HashMap<String, AttributeValue>>,
        update: &mut Option<String>,
        names: Option<&HashMap<String, String>>,
    ) -> Result<(), FenceConditionError> {
        let attribute = self.attribute.as_str();
        if key.is_some_and(|k| k.contains_key(attribute)) {
            return Err(FenceConditionError::FenceIsKey {
                attribute: attribute.to_owned(),
            });
        }
        if let Some(user) = update.as_deref()
            && writes(user, attribute, names)
        {
            return Err(FenceConditionError::UpdatesFence {
                attribute: attribute.to_owned(),
            });
        }
        *update = Some(self.update_expression(update.as_deref()));
        Ok(())
    }
}

/// Whether `placeholder` (`#…` or `:…`) is reserved for leasehold.
fn reserved(placeholder: &str) -> bool {
    placeholder
        .strip_prefix(['#', ':'])
        .is_some_and(|rest| rest.starts_with(RESERVED_PREFIX))
}

/// The words of an expression: maximal runs of `[A-Za-z0-9_]` with the byte offset where each
/// ends, and the character before each (`#` or `:` for placeholders, `.` or `]` inside a path).
/// DynamoDB expressions have no string literals (values are placeholders), so a bare word is a
/// keyword, a function or an attribute name.
fn words(expression: &str) -> impl Iterator<Item = (Option<char>, &str, usize)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = expression.char_indices().peekable();
    std::iter::from_fn(move || {
        let mut before = None;
        loop {
            let (start, c) = rest.next()?;
            if word(c) {
                let mut end = start + c.len_utf8();
                while let Some(&(i, c)) = rest.peek() {
                    if !word(c) {
                        break;
                    }
                    end = i + c.len_utf8();
                    rest.next();
                }
                return Some((before, &expression[start..end], end));
            }
            before = Some(c);
        }
    })
}

/// The byte offset just after the keyword `word` (case-insensitive, not a placeholder or a path
/// element) in `expression`.
fn keyword(expression: &str, word: &str) -> Option<usize> {
    words(expression)
        .find(|(before, w, _)| bare(*before) && w.eq_ignore_ascii_case(word))
        .map(|(_, _, end)| end)
}

/// Whether a word preceded by `before` stands on its own (not a placeholder, not inside a path).
fn bare(before: Option<char>) -> bool {
    !matches!(before, Some('#' | ':' | '.' | ']'))
}

/// Whether the update expression `update` names `attribute` at the top of a path, directly or
/// through one of `names`.
fn writes(update: &str, attribute: &str, names: Option<&HashMap<String, String>>) -> bool {
    words(update).any(|(before, word, _)| match before {
        Some('#') => names
            .and_then(|n| n.get(&format!("#{word}")))
            .is_some_and(|a| a == attribute),
        before => bare(before) && word == attribute,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence() -> FenceCondition {
        FenceCondition::of_fence(7)
    }

    #[test]
    fn conditions_combine_with_and() {
        assert_eq!(fence().condition_expression(None), FENCE_CONDITION);
        assert_eq!(fence().condition_expression(Some("  ")), FENCE_CONDITION);
        assert_eq!(
            fence().condition_expression(Some("a = :a OR b = :b")),
            format!("{FENCE_CONDITION} AND (a = :a OR b = :b)")
        );
    }

    #[test]
    fn the_record_joins_the_set_clause_wherever_it_is() {
        let cases = [
            (None, "SET #leasehold_fence = :leasehold_fence"),
            (
                Some("REMOVE a"),
                "SET #leasehold_fence = :leasehold_fence REMOVE a",
            ),
            (
                Some("set a = :a"),
                "set #leasehold_fence = :leasehold_fence, a = :a",
            ),
            (
                Some("REMOVE #set ADD n :one SET settings = :s, #x.set_y = :y"),
                "REMOVE #set ADD n :one SET #leasehold_fence = :leasehold_fence, settings = :s, #x.set_y = :y",
            ),
            (
                Some("ADD :set n"),
                "SET #leasehold_fence = :leasehold_fence ADD :set n",
            ),
        ];
        for (user, expected) in cases {
            assert_eq!(fence().update_expression(user), expected, "{user:?}");
        }
    }

    #[test]
    fn writing_the_fence_attribute_is_detected_directly_and_through_names() {
        let names: HashMap<String, String> = [("#v".to_owned(), "leaseholdFence".to_owned())]
            .into_iter()
            .collect();
        assert!(writes("SET leaseholdFence = :x", "leaseholdFence", None));
        assert!(writes("SET #v = :x", "leaseholdFence", Some(&names)));
        assert!(!writes("SET a.leaseholdFence = :x", "leaseholdFence", None));
        assert!(!writes("SET a = :leaseholdFence", "leaseholdFence", None));
        assert!(!writes("SET #w = :x", "leaseholdFence", Some(&names)));
    }

    #[test]
    fn merging_refuses_reserved_placeholders_and_keeps_the_users() {
        let mut parts = Parts {
            condition: Some("#s = :s".into()),
            names: Some([("#s".to_owned(), "state".to_owned())].into()),
            values: Some([(":s".to_owned(), AttributeValue::S("open".into()))].into()),
            on_failure: Some(ReturnValuesOnConditionCheckFailure::None),
        };
        fence().merge(&mut parts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parts.names.as_ref().map(HashMap::len), Some(2));
        assert_eq!(parts.values.as_ref().map(HashMap::len), Some(2));
        assert_eq!(
            parts.on_failure,
            Some(ReturnValuesOnConditionCheckFailure::None),
            "the user's choice is kept"
        );
        let again = fence().merge(&mut parts);
        assert!(
            matches!(again, Err(FenceConditionError::ReservedPlaceholder { ref placeholder }) if placeholder == FENCE_NAME),
            "{again:?}"
        );
        let mut own = Parts {
            values: Some([(":leasehold_x".to_owned(), AttributeValue::Null(true))].into()),
            ..Parts::default()
        };
        assert!(fence().merge(&mut own).is_err());
    }
}
