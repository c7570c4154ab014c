//! Consistent reads of lease items: one `GetItem`, or `BatchGetItem` over a group's slots or
//! many locks' items, and the live holders `state` and `state_many` report from them.

use leasehold::store::host_epoch_ms;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity};
use futures::{StreamExt, TryStreamExt};
use leasehold::store::StoreResult;
use leasehold::{Holder, LockName, store::StoreError};

use super::expressions::LOCK_NAME;
use crate::classify::classify;
use crate::clock::ms;
use crate::metrics::Operation;
use crate::record::{Attributes, Item, SessionRecord, s};
use crate::store::DynamoDbStore;

/// `BatchGetItem` takes at most 100 keys per request.
const BATCH: usize = 100;
/// How many `BatchGetItem` requests a read of a group's slots or of many locks has in flight
/// at once.
const BATCHES_AT_ONCE: usize = 4;
/// Rounds of re-asking for keys DynamoDB left unprocessed (under throttling) before giving up.
const UNPROCESSED_ROUNDS: u32 = 8;

impl DynamoDbStore {
    /// The item under `key`, read consistently.
    pub(crate) async fn read_item(&self, key: &str) -> StoreResult<Option<Item>> {
        self.read_attributes(key)
            .await?
            .map(|attrs| Item::parse(key, &attrs))
            .transpose()
    }

    /// The attributes under `key`, read consistently.
    async fn read_attributes(&self, key: &str) -> StoreResult<Option<Attributes>> {
        let out = self
            .metered(Operation::Read, |probe| {
                self.client
                    .get_item()
                    .table_name(&self.options.table)
                    .key(LOCK_NAME, s(key))
                    .consistent_read(true)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .customize()
                    .interceptor(probe)
                    .send()
            })
            .await
            .map_err(|e| classify("GetItem", &self.options.table, e))?;
        Ok(out.item)
    }

    /// The session items `ids` that exist, read consistently (one `GetItem`, or `BatchGetItem`
    /// per 100), by id.
    pub(crate) async fn read_sessions(
        &self,
        ids: impl IntoIterator<Item = String>,
    ) -> StoreResult<HashMap<String, SessionRecord>> {
        let keys: HashMap<String, String> = ids
            .into_iter()
            .map(|id| (self.session_item(&id), id))
            .collect();
        let mut found = HashMap::new();
        if keys.len() == 1 {
            for (key, id) in &keys {
                if let Some(attrs) = self.read_attributes(key).await? {
                    found.insert(id.clone(), SessionRecord::parse(key, &attrs)?);
                }
            }
            return Ok(found);
        }
        let all: Vec<&String> = keys.keys().collect();
        for chunk in all.chunks(BATCH) {
            for attrs in self.batch_get(chunk).await? {
                if let Some(AttributeValue::S(key)) = attrs.get(LOCK_NAME)
                    && let Some(id) = keys.get(key)
                {
                    found.insert(id.clone(), SessionRecord::parse(key, &attrs)?);
                }
            }
        }
        Ok(found)
    }

    /// Items with the end of their holders' leases (see [`Item::held_until`]), judged with the
    /// session items they name, read consistently after them.
    pub(crate) async fn judged(
        &self,
        items: Vec<(u32, Item)>,
    ) -> StoreResult<Vec<(u32, Item, Option<u64>)>> {
        let sessions = self
            .read_sessions(items.iter().filter_map(|(_, i)| i.session.clone()))
            .await?;
        Ok(items
            .into_iter()
            .map(|(slot, item)| {
                let session = item.session.as_ref().and_then(|id| sessions.get(id));
                let until = item.held_until(session);
                (slot, item, until)
            })
            .collect())
    }

    /// The existing items of `lock`'s slots `0..slots` with their holders' ends ([`judged`]).
    ///
    /// [`judged`]: Self::judged
    pub(crate) async fn read_slots_judged(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<(u32, Item, Option<u64>)>> {
        let items = self.read_slots(lock, slots).await?;
        self.judged(items).await
    }

    /// The existing items of `lock`'s slots `0..slots`, read consistently (a group's in
    /// [`batch_get_all`](Self::batch_get_all)), ordered by slot.
    pub(crate) async fn read_slots(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<(u32, Item)>> {
        if slots <= 1 {
            let key = self.key(lock, 0);
            return Ok(self
                .read_item(&key)
                .await?
                .map(|i| (0, i))
                .into_iter()
                .collect());
        }
        let keys: HashMap<String, u32> = (0..slots)
            .map(|slot| (self.key(lock, slot), slot))
            .collect();
        let ordered: Vec<&String> = {
            let mut k: Vec<(&String, &u32)> = keys.iter().collect();
            k.sort_unstable_by_key(|(_, slot)| **slot);
            k.into_iter().map(|(key, _)| key).collect()
        };
        let mut found = Vec::new();
        for attrs in self.batch_get_all(&ordered).await? {
            let key = match attrs.get(LOCK_NAME) {
                Some(AttributeValue::S(k)) => k.clone(),
                _ => continue,
            };
            if let Some(&slot) = keys.get(&key) {
                found.push((slot, Item::parse(&key, &attrs)?));
            }
        }
        found.sort_unstable_by_key(|(slot, _)| *slot);
        Ok(found)
    }

    /// The items of `keys` (distinct), [`BATCH`] keys a `BatchGetItem`, [`BATCHES_AT_ONCE`]
    /// requests in flight; in no particular order.
    async fn batch_get_all(&self, keys: &[&String]) -> StoreResult<Vec<Attributes>> {
        let reads: Vec<_> = keys.chunks(BATCH).map(|c| self.batch_get(c)).collect();
        let pages: Vec<Vec<Attributes>> = futures::stream::iter(reads)
            .buffer_unordered(BATCHES_AT_ONCE)
            .try_collect()
            .await?;
        Ok(pages.into_iter().flatten().collect())
    }

    /// One batch of at most 100 keys, re-asking for unprocessed keys with back-off.
    async fn batch_get(&self, keys: &[&String]) -> StoreResult<Vec<Attributes>> {
        let table = &self.options.table;
        let mut pending: Vec<Attributes> = keys
            .iter()
            .map(|k| std::iter::once((LOCK_NAME.to_owned(), s(k.as_str()))).collect())
            .collect();
        let mut items = Vec::new();
        let mut pause = self.options.retry_delay;
        for round in 0..UNPROCESSED_ROUNDS {
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::permanent(format!("BatchGetItem request: {e}")))?;
            let out = self
                .metered(Operation::ReadBatch, |probe| {
                    self.client
                        .batch_get_item()
                        .request_items(table, request)
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .customize()
                        .interceptor(probe)
                        .send()
                })
                .await
                .map_err(|e| classify("BatchGetItem", table, e))?;
            if let Some(mut responses) = out.responses {
                items.extend(responses.remove(table).unwrap_or_default());
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(table))
                .map(|k| k.keys)
                .unwrap_or_default();
            if pending.is_empty() {
                return Ok(items);
            }
            if round + 1 < UNPROCESSED_ROUNDS {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
        Err(StoreError::transient(format!(
            "DynamoDB BatchGetItem on table {table}: {} keys still unprocessed (throttled)",
            pending.len()
        )))
    }

    /// The holders still occupying their slot among `lock`'s slots `0..slots` (a lease that
    /// ended less than the clock-skew tolerance ago still occupies it: no other client may take
    /// it over yet), ordered by slot.
    pub(crate) async fn live_holders(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<Holder>> {
        let now = host_epoch_ms();
        let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
        Ok(self
            .read_slots_judged(lock, slots)
            .await?
            .into_iter()
            .filter_map(|(slot, item, until)| {
                until.filter(|u| *u >= stale).map(|u| item.holder(slot, u))
            })
            .collect())
    }

    /// The live holders (as [`live_holders`](Self::live_holders) judges them) of each of
    /// `locks` among `slots` slots, in the order given: every distinct item key read
    /// consistently ([`batch_get_all`](Self::batch_get_all)), then the session items they
    /// name. Only the items asked for are read, however many others the table holds.
    pub(crate) async fn live_holders_many(
        &self,
        locks: &[LockName],
        slots: u32,
    ) -> StoreResult<Vec<Vec<Holder>>> {
        let now = host_epoch_ms();
        let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
        let slots = slots.max(1);
        // Distinct keys only: BatchGetItem refuses a request that names a key twice.
        let keys: BTreeSet<String> = locks
            .iter()
            .flat_map(|lock| (0..slots).map(move |slot| self.key(lock, slot)))
            .collect();
        let keys: Vec<&String> = keys.iter().collect();
        let mut items: HashMap<String, Item> = HashMap::new();
        for attrs in self.batch_get_all(&keys).await? {
            if let Some(AttributeValue::S(key)) = attrs.get(LOCK_NAME) {
                let item = Item::parse(key, &attrs)?;
                items.insert(key.clone(), item);
            }
        }
        let sessions = self
            .read_sessions(items.values().filter_map(|i| i.session.clone()))
            .await?;
        Ok(locks
            .iter()
            .map(|lock| {
                (0..slots)
                    .filter_map(|slot| {
                        let item = items.get(&self.key(lock, slot))?;
                        let session = item.session.as_ref().and_then(|id| sessions.get(id));
                        item.held_until(session)
                            .filter(|u| *u >= stale)
                            .map(|u| item.holder(slot, u))
                    })
                    .collect()
            })
            .collect())
    }

    /// The item a conditional-check failure returned, or (for emulators that ignore
    /// `ReturnValuesOnConditionCheckFailure`) a consistent read of it.
    pub(crate) async fn old_item(
        &self,
        key: &str,
        old: Option<Attributes>,
    ) -> StoreResult<Option<Item>> {
        match old {
            Some(attrs) => Item::parse(key, &attrs).map(Some),
            None => self.read_item(key).await,
        }
    }
}
