//! Acquisition: one conditional `UpdateItem` per slot tried, after the store's own limits on
//! leases and periods.

use leasehold::store::host_epoch_ms;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure,
};
use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{Lease, Period, store::StoreError};
use tracing::debug;

use super::conditional_failure;
use super::expressions::{
    ACQUIRE_CONDITION, ACQUIRE_NAMES, ACQUIRE_UPDATE, LOCK_NAME, PERIOD_CONDITION, PERIOD_NAMES,
    PERIOD_UPDATE,
};
use crate::clock::{fence_seed, ms, ttl_seconds};
use crate::metrics::Operation;
use crate::record::{Item, n, ni, s};
use crate::store::DynamoDbStore;

impl DynamoDbStore {
    /// One attempt on one slot: granted, ours already (a retried request that was applied), or
    /// held by someone else (`None`).
    pub(crate) async fn acquire_slot(
        &self,
        req: &AcquireRequest,
        slot: u32,
    ) -> StoreResult<Option<Lease>> {
        match self.acquire_item(req, slot, None).await? {
            Acquisition::Elected(lease) => Ok(Some(lease)),
            _ => Ok(None),
        }
    }

    /// Slot 0 claiming `period` of the ledger, in the same conditional `UpdateItem`: granted,
    /// ours already, already ran (the old item's ledger says a started claim was granted within
    /// this period), or held.
    pub(crate) async fn acquire_period(
        &self,
        req: &AcquireRequest,
        period: Period,
    ) -> StoreResult<Acquisition> {
        self.acquire_item(req, 0, Some(period)).await
    }

    async fn acquire_item(
        &self,
        req: &AcquireRequest,
        slot: u32,
        period: Option<Period>,
    ) -> StoreResult<Acquisition> {
        let key = self.key(&req.lock, slot);
        let token = req.token.to_hex();
        let now = host_epoch_ms();
        let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
        let expiry = now.saturating_add(ms(req.ttl));
        let window = period.map(|p| p.window_at_ms(i64::try_from(now).unwrap_or(i64::MAX)));
        let claimed = window.map(|w| w.id);
        let (condition, update, names) = match claimed {
            Some(_) => (PERIOD_CONDITION, PERIOD_UPDATE, PERIOD_NAMES),
            None => (ACQUIRE_CONDITION, ACQUIRE_UPDATE, ACQUIRE_NAMES),
        };
        let sent = self
            .metered(Operation::Acquire, |probe| {
                self.client
                    .update_item()
                    .table_name(&self.options.table)
                    .key(LOCK_NAME, s(key.as_str()))
                    .condition_expression(condition)
                    .update_expression(update)
                    .set_expression_attribute_names(Some(Self::names(names)))
                    .set_expression_attribute_values(Some(
                        window
                            .map(|w| {
                                [
                                    (":period".to_owned(), ni(w.id)),
                                    (":from".to_owned(), ni(w.from_ms)),
                                    (":until".to_owned(), ni(w.until_ms)),
                                    (":zero".to_owned(), n(0)),
                                ]
                                .into_iter()
                                .collect()
                            })
                            .unwrap_or_default(),
                    ))
                    .expression_attribute_values(":owner", s(&*req.owner))
                    .expression_attribute_values(":token", s(token.as_str()))
                    .expression_attribute_values(":node", s(&*self.options.node_id))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":stale", n(stale))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(
                        ":ttl",
                        n(ttl_seconds(expiry, self.options.ttl_padding)),
                    )
                    .expression_attribute_values(":seed", n(fence_seed(now)))
                    .expression_attribute_values(":one", n(1))
                    .return_values(ReturnValue::AllNew)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .customize()
                    .interceptor(probe)
                    .send()
            })
            .await;
        match sent {
            Ok(out) => {
                let attrs = out.attributes.ok_or_else(|| {
                    StoreError::transient(format!(
                        "DynamoDB UpdateItem on table {} returned no attributes for {key:?}",
                        self.options.table
                    ))
                })?;
                let item = Item::parse(&key, &attrs)?;
                debug!(key, fence = item.fence, "acquired");
                let mut lease = item.lease(&req.lock, slot, req.token);
                lease.period = claimed;
                Ok(Acquisition::Elected(lease))
            }
            Err(err) => {
                let old = conditional_failure(&self.options.table, err)?;
                let Some(item) = self.old_item(&key, old).await? else {
                    return Ok(Acquisition::Taken(None));
                };
                if item.held_by(&token, host_epoch_ms()) {
                    debug!(
                        key,
                        fence = item.fence,
                        "retried acquire was already applied"
                    );
                    let mut lease = item.lease(&req.lock, slot, req.token);
                    lease.period = period
                        .map(|p| p.id_at_ms(i64::try_from(item.acquired_at).unwrap_or(i64::MAX)));
                    return Ok(Acquisition::Elected(lease));
                }
                let from = window.map(|w| u64::try_from(w.from_ms).unwrap_or_default());
                Ok(match from.and_then(|from| item.already_ran(from)) {
                    Some(record) => Acquisition::AlreadyRan(record),
                    None => Acquisition::Taken(None),
                })
            }
        }
    }

    /// Groups: read every slot, return a live slot this token already holds, else try the slots
    /// that are missing, free or stale, lowest first.
    pub(crate) async fn acquire_group(
        &self,
        req: &AcquireRequest,
        slots: u32,
    ) -> StoreResult<Option<Lease>> {
        let items = self.read_slots(&req.lock, slots).await?;
        let token = req.token.to_hex();
        let now = host_epoch_ms();
        if let Some((slot, item)) = items.iter().find(|(_, item)| item.held_by(&token, now)) {
            return Ok(Some(item.lease(&req.lock, *slot, req.token)));
        }
        let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
        let busy: Vec<u32> = items
            .iter()
            .filter(|(_, item)| item.occupied(stale))
            .map(|(slot, _)| *slot)
            .collect();
        for slot in (0..slots).filter(|s| !busy.contains(s)) {
            if let Some(lease) = self.acquire_slot(req, slot).await? {
                return Ok(Some(lease));
            }
        }
        Ok(None)
    }

    /// Rejects leases that the clock-skew tolerance cannot protect.
    pub(crate) fn check_ttl(&self, ttl: Duration) -> StoreResult<()> {
        let floor = self.options.lease_floor();
        if ttl <= floor {
            return Err(StoreError::permanent(format!(
                "a {ttl:?} lease is too short for this DynamoDB store: leases must be longer than \
                 twice the clock-skew tolerance ({:?}), i.e. more than {floor:?}; use a longer \
                 lease or a smaller tolerance (DynamoDbOptions::clock_skew_tolerance, or the \
                 `skew` URL parameter) if every client's clock is that accurate",
                self.options.clock_skew_tolerance
            )));
        }
        Ok(())
    }

    /// A period claim's record lives on the lock's item, which DynamoDB TTL may delete
    /// `ttl_padding` after its last lease ends. A period no longer than the padding always ends
    /// before that, so the record outlives every claim it must refuse; longer periods are refused.
    pub(crate) fn check_period(&self, period: Period) -> StoreResult<()> {
        let padding = self.options.ttl_padding;
        if period.length() > padding {
            return Err(StoreError::permanent(format!(
                "a period of {:?} is longer than this DynamoDB store's TTL padding ({padding:?}): \
                 the period ledger lives on the lock's item, which DynamoDB TTL may delete that \
                 long after its last lease, so periods may be at most the padding; raise it \
                 (DynamoDbOptions::ttl_padding, or the `ttl_padding` URL parameter) to at least \
                 the period",
                period.length()
            )));
        }
        Ok(())
    }
}
