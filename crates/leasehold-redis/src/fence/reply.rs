//! The fence scripts' replies: `{1, previous or nil[, reply]}` admitted, `{0, highest}` refused.

use leasehold::store::StoreError;
use leasehold::store::StoreResult;
use redis::Value;

use crate::link::Link;

/// What a fence script answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// Admitted: the fence before (if any), and the command's reply (`Nil` for the register).
    Admitted { previous: Option<u64>, reply: Value },
    /// Refused: a higher fence was admitted before.
    Stale { highest: u64 },
}

fn unexpected(what: &str) -> StoreError {
    StoreError::permanent(format!(
        "a fence script returned an unexpected reply ({what}); is another program using this key prefix?"
    ))
}

/// A fence as the scripts return it: decimal text (or nil).
fn fence(value: Option<Value>) -> Result<Option<u64>, StoreError> {
    match value {
        None | Some(Value::Nil) => Ok(None),
        Some(Value::BulkString(bytes)) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.parse().ok())
            .map(Some)
            .ok_or_else(|| unexpected("a fence that is not a number")),
        Some(_) => Err(unexpected("a fence that is not text")),
    }
}

/// Decodes a fence script's reply.
pub(crate) fn outcome(reply: Vec<Value>) -> Result<Outcome, StoreError> {
    let mut items = reply.into_iter();
    match items.next() {
        Some(Value::Int(1)) => Ok(Outcome::Admitted {
            previous: fence(items.next())?,
            reply: items.next().unwrap_or(Value::Nil),
        }),
        Some(Value::Int(0)) => Ok(Outcome::Stale {
            highest: fence(items.next())?.ok_or_else(|| unexpected("a refusal without a fence"))?,
        }),
        _ => Err(unexpected("no verdict")),
    }
}

/// The fence recorded in `key` (`None` when there is none).
pub(crate) async fn read_fence(link: &Link, key: &str) -> StoreResult<Option<u64>> {
    let mut get = redis::cmd("GET");
    get.arg(key);
    let value: Option<String> = link.query(&get).await?;
    value
        .map(|v| {
            v.parse().map_err(|_| {
                StoreError::permanent(format!(
                    "the fence key {key} holds something other than a fence"
                ))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn replies_decode_to_outcomes() {
        assert_eq!(
            outcome(vec![Value::Int(1), Value::Nil, Value::Okay]).ok(),
            Some(Outcome::Admitted {
                previous: None,
                reply: Value::Okay
            })
        );
        assert_eq!(
            outcome(vec![Value::Int(1), text("18446744073709551615")]).ok(),
            Some(Outcome::Admitted {
                previous: Some(u64::MAX),
                reply: Value::Nil
            })
        );
        assert_eq!(
            outcome(vec![Value::Int(0), text("9")]).ok(),
            Some(Outcome::Stale { highest: 9 })
        );
        assert!(outcome(vec![Value::Int(0)]).is_err());
        assert!(outcome(vec![Value::Int(1), text("x")]).is_err());
        assert!(outcome(vec![]).is_err());
    }
}
