//! A lease's own changes, each one conditional `UpdateItem` on its slot's item: extension
//! (conditioned on the token and on the lease not having ended), release (the item is kept, so
//! the fence survives), release with a linger (the lease shortened to a minimum lease) and the
//! operators' forced release.

use leasehold::store::{epoch_ms, host_epoch_ms, time_at_ms};
use std::time::Duration;

use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use leasehold::store::StoreResult;
use leasehold::{
    Holder, Lease, LockName,
    store::{Extension, Release},
};
use tracing::info;

use super::conditional_failure;
use super::expressions::{
    DETACH_NAMES, DETACH_UPDATE, EXTEND_NAMES, EXTEND_UPDATE, FORCE_CONDITION, FORCE_NAMES,
    FORCE_UPDATE, HELD_CONDITION, LINGER_CONDITION, LINGER_UPDATE, RELEASE_NAMES, RELEASE_UPDATE,
    SESSION_HELD_CONDITION,
};
use crate::clock::{ms, ttl_seconds};
use crate::metrics::Operation;
use crate::record::{n, s};
use crate::session::Member;
use crate::store::DynamoDbStore;

impl DynamoDbStore {
    /// Moves the lease's end to now + `ttl` (client clock) if the token still holds it.
    pub(crate) async fn extend_lease(
        &self,
        lease: &Lease,
        ttl: Duration,
    ) -> StoreResult<Extension> {
        let key = self.key(&lease.lock, lease.slot);
        let now = host_epoch_ms();
        let expiry = now.saturating_add(ms(ttl));
        let sent = self
            .send_update(
                Operation::Extend,
                self.update_item(key, HELD_CONDITION, EXTEND_UPDATE, EXTEND_NAMES)
                    .expression_attribute_values(":token", s(lease.token.to_hex()))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(
                        ":ttl",
                        n(ttl_seconds(expiry, self.options.ttl_padding)),
                    ),
            )
            .await;
        match sent {
            Ok(_) => Ok(Extension::Extended {
                expires_at: time_at_ms(expiry),
            }),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| Extension::NotHeld),
        }
    }

    /// Frees a live lease held by its token: removes token and owner and sets `leaseExpiry` to
    /// now, keeping the item (and its fence). A retry whose first attempt had been applied finds
    /// the item free and reports `NotHeld`, as a second release does; the lock is free either way.
    pub(crate) async fn free_lease(&self, lease: &Lease) -> StoreResult<Release> {
        let key = self.key(&lease.lock, lease.slot);
        let token = lease.token.to_hex();
        let now = host_epoch_ms();
        let sent = self
            .send_update(
                Operation::Release,
                self.update_item(key.as_str(), HELD_CONDITION, RELEASE_UPDATE, RELEASE_NAMES)
                    .expression_attribute_values(":token", s(token.as_str()))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(
                        ":ttl",
                        n(ttl_seconds(now, self.options.ttl_padding)),
                    ),
            )
            .await;
        match sent {
            Ok(_) => Ok(Release::Released),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| Release::NotHeld),
        }
    }

    /// Shortens a live lease to end `linger` from now; a lease that already ends sooner is left
    /// alone (and still `Released`).
    pub(crate) async fn shorten_lease(
        &self,
        lease: &Lease,
        linger: Duration,
    ) -> StoreResult<Release> {
        let key = self.key(&lease.lock, lease.slot);
        let token = lease.token.to_hex();
        let now = host_epoch_ms();
        let expiry = now.saturating_add(ms(linger));
        let sent = self
            .send_update(
                Operation::Release,
                self.update_item(key.as_str(), LINGER_CONDITION, LINGER_UPDATE, EXTEND_NAMES)
                    .expression_attribute_values(":token", s(token.as_str()))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(
                        ":ttl",
                        n(ttl_seconds(expiry, self.options.ttl_padding)),
                    )
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    ),
            )
            .await;
        match sent {
            Ok(_) => Ok(Release::Released),
            Err(err) => {
                let old = conditional_failure(&self.options.table, err)?;
                let item = self.old_item(&key, old).await?;
                Ok(
                    if item.is_some_and(|i| i.held_by(&token, host_epoch_ms())) {
                        Release::Released
                    } else {
                        Release::NotHeld
                    },
                )
            }
        }
    }

    /// Releases a lease granted under this instance's session `member.session`: frees its item
    /// (or, with a `linger`, takes it out of the session with its own term ended `linger` from
    /// now, never later than it was held) on the item still carrying its token under that
    /// session. Whether it was still held is judged by the session's last renewal (and the
    /// lease's own term). A release that fails is answered `NotHeld` from then on and revoked by
    /// the session's next renewal, so its lock does not stay held while the session lives.
    pub(crate) async fn release_member(
        &self,
        lease: &Lease,
        member: &Member,
        linger: Duration,
    ) -> StoreResult<Release> {
        let now = host_epoch_ms();
        let own = u64::try_from(epoch_ms(lease.expires_at)).unwrap_or_default();
        let held_until = own.max(self.sessions.known_expiry(&member.session));
        let answer = if held_until > now {
            Release::Released
        } else {
            Release::NotHeld
        };
        let done = if linger.is_zero() || held_until <= now {
            self.free_in_session(&member.key, lease.token, &member.session)
                .await
                .map(|freed| freed.then_some(answer))
        } else {
            self.detach(
                lease,
                member,
                now.saturating_add(ms(linger)).min(held_until),
            )
            .await
            .map(|detached| detached.then_some(Release::Released))
        };
        match done {
            Ok(released) => {
                self.sessions.leave(lease.token);
                Ok(released.unwrap_or(Release::NotHeld))
            }
            Err(e) => {
                self.sessions.release_failed(lease.token);
                Err(e)
            }
        }
    }

    /// Takes a lease out of its session, its own term ending at `expiry`: true if the item still
    /// carried it.
    async fn detach(&self, lease: &Lease, member: &Member, expiry: u64) -> StoreResult<bool> {
        let sent = self
            .send_update(
                Operation::Release,
                self.update_item(
                    member.key.as_str(),
                    SESSION_HELD_CONDITION,
                    DETACH_UPDATE,
                    DETACH_NAMES,
                )
                .expression_attribute_values(":token", s(lease.token.to_hex()))
                .expression_attribute_values(":session", s(member.session.as_str()))
                .expression_attribute_values(":expiry", n(expiry))
                .expression_attribute_values(
                    ":ttl",
                    n(ttl_seconds(expiry, self.options.ttl_padding)),
                ),
            )
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| false),
        }
    }

    /// Frees every held slot of `lock` regardless of token; returns the holders freed that were
    /// still occupying their slot (see `state`), as they were. A lease of a session that still
    /// has its item is first revoked there, so that its holder's next renewal answers `NotHeld`.
    pub(crate) async fn force_slots(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<Holder>> {
        let mut freed = Vec::new();
        let items = self.read_slots(lock, slots).await?;
        let sessions = self
            .read_sessions(items.iter().filter_map(|(_, i)| i.session.clone()))
            .await?;
        for (slot, item) in items {
            let Some(token) = item.token.clone() else {
                continue;
            };
            let session = item.session.as_ref().and_then(|id| sessions.get(id));
            let until = item.held_until(session);
            if let (Some(id), Some(record)) = (&item.session, session)
                && !record.revoked.contains(&token)
            {
                self.revoke(id, &token).await?;
            }
            let key = self.key(lock, slot);
            let now = host_epoch_ms();
            let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
            let sent = self
                .send_update(
                    Operation::ForceRelease,
                    self.update_item(key.as_str(), FORCE_CONDITION, FORCE_UPDATE, FORCE_NAMES)
                        .expression_attribute_values(":token", s(token.as_str()))
                        .expression_attribute_values(":now", n(now))
                        .expression_attribute_values(
                            ":ttl",
                            n(ttl_seconds(now, self.options.ttl_padding)),
                        )
                        .return_values(ReturnValue::AllOld),
                )
                .await;
            match sent {
                Ok(_) => {
                    if let Some(until) = until.filter(|u| *u >= stale) {
                        info!(
                            key,
                            owner = item.owner,
                            fence = item.fence,
                            "forced release"
                        );
                        freed.push(item.holder(slot, until));
                    }
                }
                // A failed condition: released (or taken over) meanwhile.
                Err(err) => drop(conditional_failure(&self.options.table, err)?),
            }
        }
        Ok(freed)
    }
}
