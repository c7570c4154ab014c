//! Acquisition: one conditional `UpdateItem` per slot tried, after the store's own limits on
//! leases and periods.

use leasehold::store::host_epoch_ms;
use std::time::Duration;

use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{Lease, Period, store::StoreError};
use tracing::debug;

use super::conditional_failure;
use super::expressions::{
    ACQUIRE_CONDITION, ACQUIRE_NAMES, ACQUIRE_UPDATE, PERIOD_CONDITION, PERIOD_NAMES,
    PERIOD_TAKEOVER_CONDITION, PERIOD_UPDATE, SESSION_ACQUIRE_UPDATE, TAKEOVER_CONDITION,
};
use crate::clock::{fence_seed, ms, ttl_seconds};
use crate::metrics::Operation;
use crate::record::{Attributes, Item, n, ni, s};
use crate::store::DynamoDbStore;

/// One grant being tried: the request, the item, the clock it was computed at, the period
/// window claimed and the session it joins at once.
#[derive(Clone, Copy)]
struct Grant<'a> {
    req: &'a AcquireRequest,
    key: &'a str,
    now: u64,
    window: Option<leasehold::store::PeriodWindow>,
    session: Option<&'a str>,
}

impl DynamoDbStore {
    /// One attempt on one slot: granted, ours already (a retried request that was applied), or
    /// held by someone else (named where the item was read).
    pub(crate) async fn acquire_slot(
        &self,
        req: &AcquireRequest,
        slot: u32,
    ) -> StoreResult<Acquisition> {
        self.acquire_item(req, slot, None).await
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
        // A period claim's lease stays on its own (its ledger is judged by its own term); any
        // other joins the session this instance is renewing, if any.
        let session = match period {
            None => self.sessions.beating(req.ttl, now),
            Some(_) => None,
        };
        let window = period.map(|p| p.window_at_ms(i64::try_from(now).unwrap_or(i64::MAX)));
        let grant = Grant {
            req,
            key: &key,
            now,
            window,
            session: session.as_deref(),
        };
        let old = match self.send_grant(&grant, None).await? {
            Ok(attrs) => return self.granted(&grant, slot, &attrs),
            Err(old) => old,
        };
        let Some(item) = self.old_item(&key, old).await? else {
            return Ok(Acquisition::Taken(None));
        };
        if item.held_by(&token, host_epoch_ms()) {
            debug!(
                key,
                fence = item.fence,
                "retried acquire was already applied"
            );
            if let Some(id) = session.as_deref()
                && item.session.as_deref() == Some(id)
            {
                self.sessions.join(req.token, id, &key);
            }
            let mut lease = item.lease(&req.lock, slot, req.token);
            lease.period =
                period.map(|p| p.id_at_ms(i64::try_from(item.acquired_at).unwrap_or(i64::MAX)));
            return Ok(Acquisition::Elected(lease));
        }
        let stale = host_epoch_ms().saturating_sub(ms(self.options.clock_skew_tolerance));
        let mut session_record = None;
        if let (Some(held), Some(old_session)) = (&item.token, &item.session) {
            // A lease of a session: free if the session ended (with the lease's own term) or
            // revoked its token; then taken over on exactly the grant read.
            let mut record = self.read_sessions([old_session.clone()]).await?;
            session_record = record.remove(old_session);
            if !item.occupied(stale, session_record.as_ref())
                && let Ok(attrs) = self.send_grant(&grant, Some((held, old_session))).await?
            {
                debug!(key, old_session, "took over a lease of an ended session");
                return self.granted(&grant, slot, &attrs);
            }
        }
        let from = window.map(|w| u64::try_from(w.from_ms).unwrap_or_default());
        Ok(match from.and_then(|from| item.already_ran(from)) {
            Some(record) => Acquisition::AlreadyRan(record),
            // The refusal names the holder as a read would show it (until its session's end,
            // for a lease of a session), so a waiter can ask again when it could end.
            None => Acquisition::Taken(
                item.held_until(session_record.as_ref())
                    .filter(|until| *until >= stale)
                    .map(|until| item.holder(slot, until)),
            ),
        })
    }

    /// The lease a grant wrote (`attrs`, the item as it is now); one granted under a session
    /// is a member of it.
    fn granted(
        &self,
        grant: &Grant<'_>,
        slot: u32,
        attrs: &Attributes,
    ) -> StoreResult<Acquisition> {
        let item = Item::parse(grant.key, attrs)?;
        debug!(key = grant.key, fence = item.fence, "acquired");
        if let Some(id) = grant.session.filter(|_| grant.window.is_none()) {
            self.sessions.join(grant.req.token, id, grant.key);
        }
        let mut lease = item.lease(&grant.req.lock, slot, grant.req.token);
        lease.period = grant.window.map(|w| w.id);
        Ok(Acquisition::Elected(lease))
    }

    /// One granting `UpdateItem`: the new item, or the old one (if returned) when its condition
    /// failed. `takeover`: the token and session of the lease of a session found free.
    async fn send_grant(
        &self,
        grant: &Grant<'_>,
        takeover: Option<(&str, &str)>,
    ) -> StoreResult<Result<Attributes, Option<Attributes>>> {
        let Grant {
            req,
            key,
            now,
            window,
            session,
        } = *grant;
        let expiry = now.saturating_add(ms(req.ttl));
        let condition = match (takeover, window) {
            (None, None) => ACQUIRE_CONDITION,
            (None, Some(_)) => PERIOD_CONDITION,
            (Some(_), None) => TAKEOVER_CONDITION,
            (Some(_), Some(_)) => PERIOD_TAKEOVER_CONDITION,
        };
        let (update, names) = match (window, session) {
            (Some(_), _) => (PERIOD_UPDATE, PERIOD_NAMES),
            (None, Some(_)) => (SESSION_ACQUIRE_UPDATE, ACQUIRE_NAMES),
            (None, None) => (ACQUIRE_UPDATE, ACQUIRE_NAMES),
        };
        let mut values: Attributes = window
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
            .unwrap_or_default();
        match session.filter(|_| window.is_none()) {
            Some(id) => values.insert(":session".to_owned(), s(id)),
            None => values.insert(
                ":ttl".to_owned(),
                n(ttl_seconds(expiry, self.options.ttl_padding)),
            ),
        };
        match takeover {
            Some((held, old_session)) => {
                values.insert(":held".to_owned(), s(held));
                values.insert(":oldsession".to_owned(), s(old_session));
            }
            None => {
                let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
                values.insert(":stale".to_owned(), n(stale));
            }
        }
        let sent = self
            .send_update(
                Operation::Acquire,
                self.update_item(key, condition, update, names)
                    .set_expression_attribute_values(Some(values))
                    .expression_attribute_values(":owner", s(&*req.owner))
                    .expression_attribute_values(":token", s(req.token.to_hex()))
                    .expression_attribute_values(":node", s(&*self.options.node_id))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(":seed", n(fence_seed(now)))
                    .expression_attribute_values(":one", n(1))
                    .return_values(ReturnValue::AllNew)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    ),
            )
            .await;
        match sent {
            Ok(out) => out.attributes.map(Ok).ok_or_else(|| {
                StoreError::transient(format!(
                    "DynamoDB UpdateItem on table {} returned no attributes for {key:?}",
                    self.options.table
                ))
            }),
            Err(err) => conditional_failure(&self.options.table, err).map(Err),
        }
    }

    /// Groups: read every slot, return a live slot this token already holds, else try the slots
    /// that are missing, free or stale, lowest first.
    pub(crate) async fn acquire_group(
        &self,
        req: &AcquireRequest,
        slots: u32,
    ) -> StoreResult<Option<Lease>> {
        let items = self.read_slots_judged(&req.lock, slots).await?;
        let token = req.token.to_hex();
        let now = host_epoch_ms();
        if let Some((slot, item, _)) = items.iter().find(|(_, item, _)| item.held_by(&token, now)) {
            return Ok(Some(item.lease(&req.lock, *slot, req.token)));
        }
        let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
        let busy: Vec<u32> = items
            .iter()
            .filter(|(_, _, until)| until.is_some_and(|u| u >= stale))
            .map(|(slot, _, _)| *slot)
            .collect();
        for slot in (0..slots).filter(|s| !busy.contains(s)) {
            if let Acquisition::Elected(lease) = self.acquire_slot(req, slot).await? {
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
