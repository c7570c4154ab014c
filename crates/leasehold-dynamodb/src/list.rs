//! Listing locks: one `Scan` request per page, `Limit` [`MAX_LIST_SCAN`] items, filtered on the
//! server to the held items of this store ([`LIST_FILTER`], [`LIST_FILTER_PREFIXED`]).
//!
//! The table's only key is the item key, so no `Query` can find the locks, and a group's slots
//! are separate items in no particular order: a group lock may come in several pages, each with
//! the slots it found. `Limit` bounds the items DynamoDB reads for the request (before the
//! filter), so a page costs the same however many items are free. A [`ListCursor`] of this store
//! is the key of the last item the page used, given back as `ExclusiveStartKey`.

use leasehold::store::host_epoch_ms;
use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use leasehold::store::{
    CursorError, ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, StoreResult,
};
use leasehold::{Holder, LockName};

use crate::classify::classify;
use crate::clock::ms;
use crate::expressions::{LIST_FILTER, LIST_FILTER_PREFIXED, LIST_NAMES, LOCK_NAME, SESSION};
use crate::keys::{KeyScope, parse_key};
use crate::metrics::Operation;
use crate::record::{Item, n, s};
use crate::store::DynamoDbStore;

impl DynamoDbStore {
    /// One page of the listing (see the module docs).
    pub(crate) async fn list_page(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        let prefix = self.options.key_prefix.as_str();
        let table = &self.options.table;
        let start = match after {
            None => None,
            Some(cursor) => Some(decode(cursor).ok_or_else(|| {
                let store = leasehold::LeaseStore::describe(self);
                CursorError::foreign(store, cursor, "expected an item key, percent-encoded")
            })?),
        };
        let stale = host_epoch_ms().saturating_sub(ms(self.options.clock_skew_tolerance));
        let mut scan = self
            .client
            .scan()
            .table_name(table)
            .limit(i32::try_from(MAX_LIST_SCAN).unwrap_or(i32::MAX))
            .consistent_read(true)
            .set_expression_attribute_names(Some(Self::names(LIST_NAMES)))
            .expression_attribute_values(":stale", n(stale));
        let scope = KeyScope::new(prefix);
        let (placeholder, value) = scope.binding();
        scan = scan
            .filter_expression(scope.filter(LIST_FILTER_PREFIXED, LIST_FILTER))
            .expression_attribute_values(placeholder, value);
        if let Some(key) = start {
            scan = scan.exclusive_start_key(LOCK_NAME, s(key));
        }
        let scan = scan.return_consumed_capacity(ReturnConsumedCapacity::Total);
        let out = self
            .metered(Operation::List, |probe| {
                scan.customize().interceptor(probe).send()
            })
            .await
            .map_err(|e| classify("Scan", table, e))?;
        let mut found: BTreeMap<LockName, Vec<Holder>> = BTreeMap::new();
        let mut used: Option<String> = None;
        let mut full = false;
        let named = out
            .items()
            .iter()
            .filter_map(|attrs| match attrs.get(SESSION) {
                Some(AttributeValue::S(id)) => Some(id.clone()),
                _ => None,
            });
        let sessions = self.read_sessions(named.collect::<Vec<_>>()).await?;
        for attrs in out.items() {
            let Some(AttributeValue::S(key)) = attrs.get(LOCK_NAME) else {
                continue;
            };
            let Some((lock, slot)) = parse_key(prefix, key) else {
                continue; // an item leasehold did not write
            };
            if found.len() == MAX_LIST_LOCKS && !found.contains_key(&lock) {
                full = true;
                break;
            }
            let item = Item::parse(key, attrs)?;
            let session = item.session.as_ref().and_then(|id| sessions.get(id));
            if let Some(until) = item.held_until(session).filter(|u| *u >= stale) {
                found
                    .entry(lock)
                    .or_default()
                    .push(item.holder(slot, until));
            }
            used = Some(key.clone());
        }
        let next = if full {
            used
        } else {
            match out.last_evaluated_key().and_then(|k| k.get(LOCK_NAME)) {
                Some(AttributeValue::S(key)) => Some(key.clone()),
                _ => None,
            }
        };
        let locks = found
            .into_iter()
            .map(|(lock, holders)| ListedLock { lock, holders })
            .collect();
        Ok(LockPage::new(locks, next.map(|k| encode(&k)).transpose()?))
    }
}

/// The cursor of an item key: printable ASCII as it is, except `%`; every other byte `%XX`.
/// (Another application's items in the same table may have any key.)
fn encode(key: &str) -> Result<ListCursor, CursorError> {
    let mut text = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_graphic() && b != b'%' {
            text.push(char::from(b));
        } else {
            text.push_str(&format!("%{b:02X}"));
        }
    }
    ListCursor::new(text)
}

/// The item key of a cursor ([`encode`]'s inverse); `None` if it is not one.
fn decode(cursor: &ListCursor) -> Option<String> {
    leasehold::store::percent_decode(cursor.as_str()).filter(|k| k.len() <= MAX_KEY_LEN)
}

/// The longest partition key DynamoDB accepts, in bytes.
const MAX_KEY_LEN: usize = 2048;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_any_item_key() -> Result<(), Box<dyn std::error::Error>> {
        for key in [
            "app/reports%2Fdaily#slot-3",
            "a",
            "other app's key é",
            "x+y",
        ] {
            let cursor = encode(key)?;
            assert!(cursor.as_str().bytes().all(|b| b.is_ascii_graphic()));
            assert_eq!(decode(&cursor).as_deref(), Some(key));
        }
        assert_eq!(encode("a%2Fb")?.as_str(), "a%252Fb");
        assert_eq!(decode(&ListCursor::new("%zz")?), None);
        assert_eq!(decode(&ListCursor::new("x".repeat(MAX_KEY_LEN + 1))?), None);
        Ok(())
    }
}
