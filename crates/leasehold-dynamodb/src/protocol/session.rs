//! Sessions: one item per (store instance, lease length) whose end keeps every lease granted
//! under it alive, so that a beat's renewals are one conditional `UpdateItem` per session
//! instead of one per lease (see the protocol table in the module above).
//!
//! * **Join or attach**: while this instance renews a session of a lease length (renewed within
//!   half a lease), a grant of that length names it in the grant's own write. Otherwise the lease
//!   is granted on its own (its own term, as before sessions) and its first extension attaches
//!   it to the session of its lease length (one conditional `UpdateItem` on its item,
//!   [`ATTACH_UPDATE`]), opening that session first if none has half a lease left
//!   ([`OPEN_SESSION_CONDITION`], a random id). So a lease taken while nothing is renewed never
//!   depends on a session before it is extended.
//! * **Renew** ([`extend_many`](leasehold::LeaseStore::extend_many)): the entries of each session
//!   go as one `UpdateItem` ([`RENEW_SESSION_CONDITION`]) that returns the item, so the holder
//!   reads the tokens forced releases revoked: those answer `NotHeld`, the others are extended.
//!   A session found ended is never renewed: all its entries answer `NotHeld`.
//! * **Revoke**: a forced release of a lease of a session adds its token to the session's
//!   `revoked` before freeing the lock item ([`REVOKE_CONDITION`]).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::StreamExt;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use leasehold::Lease;
use leasehold::store::{Extension, StoreError, StoreResult, Token, host_epoch_ms, time_at_ms};
use tracing::{debug, info};

use super::conditional_failure;
use super::expressions::{
    ATTACH_NAMES, ATTACH_UPDATE, HELD_CONDITION, OPEN_SESSION_CONDITION, OPEN_SESSION_NAMES,
    OPEN_SESSION_UPDATE, RELEASE_UPDATE, RENEW_PRUNE_UPDATE, RENEW_REVOKE_UPDATE,
    RENEW_SESSION_CONDITION, RENEW_SESSION_NAMES, RENEW_SESSION_UPDATE, REVOKE_CONDITION,
    REVOKE_NAMES, REVOKE_UPDATE, SESSION_HELD_CONDITION, SESSION_RELEASE_NAMES,
};
use crate::clock::{ms, ttl_seconds};
use crate::metrics::Operation;
use crate::record::{Attributes, SessionRecord, n, s};
use crate::session::{MAX_REVOKED, Pending};
use crate::store::DynamoDbStore;

/// The leases attached to sessions at once by one `extend_many` (their first extensions, one
/// conditional `UpdateItem` each): a process that takes 10,000 locks at once attaches them in
/// the first beat after, 64 writes in flight.
pub const ATTACH_IN_FLIGHT: usize = 64;

/// The same error for another entry of the request that failed.
pub(crate) fn copy(err: &StoreError) -> StoreError {
    StoreError::new(err.kind(), err.to_string())
}

impl DynamoDbStore {
    /// The key of the session item `id`.
    pub(crate) fn session_item(&self, id: &str) -> String {
        crate::keys::session_key(&self.options.key_prefix, id)
    }

    /// The session a grant of `ttl` joins: the current one if it has half a lease left, else a
    /// new one (one conditional `UpdateItem` creating its item).
    pub(crate) async fn session_for(&self, ttl: Duration) -> StoreResult<String> {
        if let Some(id) = self.sessions.joinable(ttl, host_epoch_ms()) {
            return Ok(id);
        }
        let _opening = self.sessions.opening.lock().await;
        if let Some(id) = self.sessions.joinable(ttl, host_epoch_ms()) {
            return Ok(id);
        }
        let id = Token::random().to_hex();
        let key = self.session_item(&id);
        let expiry = host_epoch_ms().saturating_add(ms(ttl));
        let sent = self
            .send_update(
                Operation::OpenSession,
                self.update_item(
                    key.as_str(),
                    OPEN_SESSION_CONDITION,
                    OPEN_SESSION_UPDATE,
                    OPEN_SESSION_NAMES,
                )
                .expression_attribute_values(":expiry", n(expiry))
                .expression_attribute_values(
                    ":ttl",
                    n(ttl_seconds(expiry, self.options.ttl_padding)),
                )
                .expression_attribute_values(":node", s(&*self.options.node_id)),
            )
            .await;
        if let Err(err) = sent {
            // A failed condition on a fresh random id: an earlier attempt of this very request
            // (retried by the SDK) created the item.
            drop(conditional_failure(&self.options.table, err)?);
        }
        debug!(session = id, ?ttl, "opened a session");
        self.sessions.opened(&id, ttl, expiry);
        Ok(id)
    }

    /// `extend_many`: the entries of leases granted under this instance's sessions renew with
    /// one request per session, the others alone (as `extend`), each distinct entry once.
    pub(crate) async fn extend_all(
        &self,
        leases: &[(Lease, Duration)],
    ) -> Vec<StoreResult<Extension>> {
        let plan = self.sessions.plan(leases.iter().map(|(l, _)| l.token));
        let mut answers: Vec<Option<StoreResult<Extension>>> =
            leases.iter().map(|_| None).collect();
        for i in plan.not_held {
            answers[i] = Some(Ok(Extension::NotHeld));
        }
        let mut first = HashMap::new();
        let alone: Vec<(usize, usize)> = plan
            .alone
            .iter()
            .map(|&i| {
                let (l, ttl) = &leases[i];
                (
                    i,
                    *first.entry((&l.lock, l.slot, l.token, *ttl)).or_insert(i),
                )
            })
            .collect();
        let renewals = futures::future::join_all(
            plan.sessions
                .iter()
                .map(|(id, entries)| self.renew_session(id, entries, leases)),
        )
        .await;
        for (i, answer) in renewals.into_iter().flatten() {
            answers[i] = Some(answer);
        }
        // The others once each, after the renewals (which keep the sessions they join alive):
        // a period claim's lease alone (its ledger is judged by its own term), any other
        // attached to the session of its lease length.
        let distinct: Vec<usize> = alone
            .iter()
            .filter(|(i, f)| i == f)
            .map(|&(i, _)| i)
            .collect();
        let mut sessions: HashMap<Duration, StoreResult<String>> = HashMap::new();
        for &i in &distinct {
            let ttl = leases[i].1;
            if leases[i].0.period.is_none() && !sessions.contains_key(&ttl) {
                sessions.insert(ttl, self.session_for(ttl).await);
            }
        }
        let singles: Vec<(usize, StoreResult<Extension>)> =
            futures::stream::iter(distinct.into_iter().map(|i| {
                let (lease, ttl) = &leases[i];
                let session = sessions.get(ttl);
                async move {
                    let answer = match (lease.period, session) {
                        (None, Some(Ok(id))) => self.attach(lease, *ttl, id).await,
                        (None, Some(Err(e))) => Err(copy(e)),
                        _ => self.extend_lease(lease, *ttl).await,
                    };
                    (i, answer)
                }
            }))
            .buffer_unordered(ATTACH_IN_FLIGHT)
            .collect()
            .await;
        for (i, answer) in singles {
            answers[i] = Some(answer);
        }
        for (i, f) in alone {
            if i != f {
                answers[i] = Some(match &answers[f] {
                    Some(Ok(extension)) => Ok(*extension),
                    Some(Err(e)) => Err(copy(e)),
                    None => Err(StoreError::transient("no answer for a repeated entry")),
                });
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(StoreError::transient("an entry was not answered"))))
            .collect()
    }

    /// Attaches a live lease to session `id` (one conditional `UpdateItem` on its item): from now
    /// on the session's renewals keep it. Its own term moves to now + `ttl` in the same write.
    async fn attach(&self, lease: &Lease, ttl: Duration, id: &str) -> StoreResult<Extension> {
        let key = self.key(&lease.lock, lease.slot);
        let now = host_epoch_ms();
        let expiry = now.saturating_add(ms(ttl));
        let sent = self
            .send_update(
                Operation::Extend,
                self.update_item(key.as_str(), HELD_CONDITION, ATTACH_UPDATE, ATTACH_NAMES)
                    .expression_attribute_values(":token", s(lease.token.to_hex()))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(":session", s(id)),
            )
            .await;
        match sent {
            Ok(_) => {
                self.sessions.join(lease.token, id, &key);
                Ok(Extension::Extended {
                    expires_at: time_at_ms(expiry),
                })
            }
            Err(err) => conditional_failure(&self.options.table, err).map(|_| Extension::NotHeld),
        }
    }

    /// One renewal of session `id` for `entries` (indexes into `leases`): until now + the longest
    /// of their lease lengths, never shortening it.
    async fn renew_session(
        &self,
        id: &str,
        entries: &[usize],
        leases: &[(Lease, Duration)],
    ) -> Vec<(usize, StoreResult<Extension>)> {
        let now = host_epoch_ms();
        let longest = entries
            .iter()
            .map(|&i| leases[i].1)
            .max()
            .unwrap_or_default();
        let expiry = now.saturating_add(ms(longest));
        let pending = self.sessions.pending(id);
        let (update, names, tokens): (&str, &'static [&'static str], Option<&BTreeSet<String>>) =
            match &pending {
                Pending::None => (RENEW_SESSION_UPDATE, &RENEW_SESSION_NAMES[..2], None),
                Pending::Revoke(t) => (RENEW_REVOKE_UPDATE, RENEW_SESSION_NAMES, Some(t)),
                Pending::Prune(t) => (RENEW_PRUNE_UPDATE, RENEW_SESSION_NAMES, Some(t)),
            };
        let key = self.session_item(id);
        let sent = self
            .send_update(
                Operation::RenewSession,
                self.update_item(key.as_str(), RENEW_SESSION_CONDITION, update, names)
                    .set_expression_attribute_values(Some(
                        tokens
                            .map(|t| {
                                (
                                    ":tokens".to_owned(),
                                    AttributeValue::Ss(t.iter().cloned().collect()),
                                )
                            })
                            .into_iter()
                            .collect(),
                    ))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(
                        ":ttl",
                        n(ttl_seconds(expiry, self.options.ttl_padding)),
                    )
                    .return_values(ReturnValue::AllNew)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    ),
            )
            .await;
        let found = match sent {
            Ok(out) => out
                .attributes
                .map(|a| SessionRecord::parse(&key, &a).map(Some))
                .unwrap_or_else(|| {
                    Err(StoreError::transient(format!(
                        "DynamoDB UpdateItem on table {} returned no attributes for {key:?}",
                        self.options.table
                    )))
                }),
            Err(err) => {
                self.sessions.unsent(id, pending);
                match conditional_failure(&self.options.table, err) {
                    // Ended, or already renewed further (by a longer lease length).
                    Ok(old) => self
                        .session_record(id, old)
                        .await
                        .map(|r| r.filter(|r| r.expiry > now)),
                    Err(e) => Err(e),
                }
            }
        };
        let record = match found {
            Ok(Some(record)) => record,
            Ok(None) => {
                info!(session = id, "session ended: its leases are lost");
                self.sessions.ended(id);
                return entries
                    .iter()
                    .map(|&i| (i, Ok(Extension::NotHeld)))
                    .collect();
            }
            Err(e) => return entries.iter().map(|&i| (i, Err(copy(&e)))).collect(),
        };
        let to_free = self
            .sessions
            .renewed(id, now, record.expiry, &record.revoked);
        let answers = entries
            .iter()
            .map(|&i| {
                let (lease, ttl) = &leases[i];
                let answer = if record.revoked.contains(&lease.token.to_hex()) {
                    Extension::NotHeld
                } else {
                    Extension::Extended {
                        expires_at: time_at_ms(now.saturating_add(ms(*ttl))),
                    }
                };
                (i, Ok(answer))
            })
            .collect();
        for (token, lock_key) in to_free {
            // Free what a forcer revoked (it may have stopped half-way); a failure is retried
            // at the next renewal, the token still being revoked.
            if self.free_in_session(&lock_key, token, id).await.is_ok() {
                self.sessions.leave(token);
            }
        }
        answers
    }

    /// The session item `id` as a failed condition returned it (`old`), or read again.
    async fn session_record(
        &self,
        id: &str,
        old: Option<Attributes>,
    ) -> StoreResult<Option<SessionRecord>> {
        let key = self.session_item(id);
        match old {
            Some(attrs) => SessionRecord::parse(&key, &attrs).map(Some),
            None => Ok(self.read_sessions([id.to_owned()]).await?.remove(id)),
        }
    }

    /// Frees the lock item `key` if it still carries `token` under session `id` (one conditional
    /// `UpdateItem`): true if it did, false if it no longer did.
    pub(crate) async fn free_in_session(
        &self,
        key: &str,
        token: Token,
        id: &str,
    ) -> StoreResult<bool> {
        let now = host_epoch_ms();
        let sent = self
            .send_update(
                Operation::Release,
                self.update_item(
                    key,
                    SESSION_HELD_CONDITION,
                    RELEASE_UPDATE,
                    SESSION_RELEASE_NAMES,
                )
                .expression_attribute_values(":token", s(token.to_hex()))
                .expression_attribute_values(":session", s(id))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":ttl", n(ttl_seconds(now, self.options.ttl_padding))),
            )
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| false),
        }
    }

    /// Revokes `token` in session `id` (a forced release, before it frees the lock item): one
    /// conditional `UpdateItem`. A missing session item needs nothing (the session ended); a
    /// full `revoked` set is a transient error.
    pub(crate) async fn revoke(&self, id: &str, token: &str) -> StoreResult<()> {
        let key = self.session_item(id);
        let sent = self
            .send_update(
                Operation::Revoke,
                self.update_item(key.as_str(), REVOKE_CONDITION, REVOKE_UPDATE, REVOKE_NAMES)
                    .expression_attribute_values(
                        ":tokens",
                        AttributeValue::Ss(vec![token.to_owned()]),
                    )
                    .expression_attribute_values(
                        ":max",
                        n(u64::try_from(MAX_REVOKED).unwrap_or(u64::MAX)),
                    ),
            )
            .await;
        let Err(err) = sent else {
            return Ok(());
        };
        drop(conditional_failure(&self.options.table, err)?);
        if self.read_sessions([id.to_owned()]).await?.contains_key(id) {
            return Err(StoreError::transient(format!(
                "session {key:?} already has {MAX_REVOKED} revoked leases waiting for its \
                 holder's next renewal; try the forced release again after it"
            )));
        }
        Ok(())
    }
}
