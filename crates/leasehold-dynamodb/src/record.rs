//! The lease record: a lease item's attributes read into the store's `Item` (and from it the
//! core's leases, holders and ledger records), and the attribute values the requests write.

use leasehold::store::time_at_ms;
use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::AttributeValue;
use leasehold::store::StoreResult;
use leasehold::{
    Holder, Lease, LockName, PeriodRecord,
    store::{StoreError, Token},
};

use crate::expressions::{
    ACQUIRED_AT, AUDIT_OWNER, FENCE, LEASE_EXPIRY, LEDGER_AT, LEDGER_BY, LEDGER_FROM,
    LEDGER_PERIOD, LEDGER_RAN, LEDGER_STARTED, LEDGER_TOKEN, LEDGER_UNTIL, OWNER, REVOKED, SESSION,
    SESSION_EXPIRY, TOKEN,
};

/// An item as stored.
pub(crate) type Attributes = HashMap<String, AttributeValue>;

/// A lease item, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// The holder's token (hex); `None` when free.
    pub(crate) token: Option<String>,
    /// The holder's owner, else the last owner.
    pub(crate) owner: String,
    pub(crate) fence: u64,
    pub(crate) acquired_at: u64,
    pub(crate) lease_expiry: u64,
    /// The period ledger, if recorded.
    pub(crate) ledger: Option<Ledger>,
    /// The session the lease was granted under, if any (items of earlier versions have none).
    pub(crate) session: Option<String>,
}

/// A session item, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SessionRecord {
    /// When the session ends, epoch ms (client clock).
    pub(crate) expiry: u64,
    /// The tokens revoked by forced releases, not yet forgotten.
    pub(crate) revoked: HashSet<String>,
}

impl SessionRecord {
    /// Parses a session item; `key` names it in errors.
    pub(crate) fn parse(key: &str, attrs: &Attributes) -> StoreResult<Self> {
        let expiry = match attrs.get(SESSION_EXPIRY) {
            Some(AttributeValue::N(n)) => n
                .parse::<u64>()
                .map_err(|_| malformed(key, SESSION_EXPIRY, "a non-negative integer"))?,
            _ => return Err(malformed(key, SESSION_EXPIRY, "a number")),
        };
        let revoked = match attrs.get(REVOKED) {
            None => HashSet::new(),
            Some(AttributeValue::Ss(tokens)) => tokens.iter().cloned().collect(),
            Some(_) => return Err(malformed(key, REVOKED, "a string set")),
        };
        Ok(Self { expiry, revoked })
    }
}

/// The period ledger of slot 0's item: the latest period claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub(crate) period: i64,
    /// The claimed window, epoch ms (an item from before windows were kept: the grant time).
    pub(crate) from: u64,
    pub(crate) until: u64,
    /// When it was granted, epoch ms (client clock).
    pub(crate) at: u64,
    pub(crate) by: String,
    /// Whether the claim's action started (an item from before this was kept: true).
    pub(crate) started: bool,
    /// When the latest claim that started was granted, epoch ms ([`LEDGER_RAN`]).
    pub(crate) ran: Option<u64>,
}

impl Item {
    /// Parses an item; `key` names it in errors.
    pub(crate) fn parse(key: &str, attrs: &Attributes) -> StoreResult<Self> {
        let text = |name: &str| match attrs.get(name) {
            Some(AttributeValue::S(s)) => Ok(Some(s.clone())),
            None => Ok(None),
            Some(_) => Err(malformed(key, name, "a string")),
        };
        let maybe_number = |name: &str| match attrs.get(name) {
            Some(AttributeValue::N(n)) => n
                .parse::<u64>()
                .map(Some)
                .map_err(|_| malformed(key, name, "a non-negative integer")),
            None => Ok(None),
            Some(_) => Err(malformed(key, name, "a number")),
        };
        let number = |name: &str| maybe_number(name).map(Option::unwrap_or_default);
        Ok(Self {
            token: text(TOKEN)?,
            owner: match text(OWNER)? {
                Some(owner) => owner,
                None => text(AUDIT_OWNER)?.unwrap_or_default(),
            },
            fence: number(FENCE)?,
            acquired_at: number(ACQUIRED_AT)?,
            lease_expiry: number(LEASE_EXPIRY)?,
            ledger: match attrs.get(LEDGER_PERIOD) {
                None => None,
                Some(AttributeValue::N(p)) => {
                    let at = number(LEDGER_AT)?;
                    Some(Ledger {
                        period: p
                            .parse::<i64>()
                            .map_err(|_| malformed(key, LEDGER_PERIOD, "an integer"))?,
                        from: maybe_number(LEDGER_FROM)?.unwrap_or(at),
                        until: maybe_number(LEDGER_UNTIL)?.unwrap_or(at),
                        at,
                        by: text(LEDGER_BY)?.unwrap_or_default(),
                        started: maybe_number(LEDGER_STARTED)? != Some(0)
                            || text(LEDGER_TOKEN)?.is_none(),
                        ran: maybe_number(LEDGER_RAN)?,
                    })
                }
                Some(_) => return Err(malformed(key, LEDGER_PERIOD, "a number")),
            },
            session: text(SESSION)?,
        })
    }

    /// True if `token` holds this item and its lease has not ended at `now_ms`.
    pub(crate) fn held_by(&self, token: &str, now_ms: u64) -> bool {
        self.token.as_deref() == Some(token) && self.live(now_ms)
    }

    /// True if someone holds this item and the lease has not ended at `now_ms`.
    pub(crate) fn live(&self, now_ms: u64) -> bool {
        self.token.is_some() && self.lease_expiry > now_ms
    }

    /// Until when this item's holder holds it (epoch ms), given the item of the session it
    /// names (`None`: it names none, or that item is missing); `None` when free. A lease of a
    /// session lasts until the later of its own first term and its session's end, unless the
    /// session revoked its token (then it is free at once); a missing session item is a session
    /// that ended (DynamoDB TTL deletes it only after its end, padded), leaving the own term.
    pub(crate) fn held_until(&self, session: Option<&SessionRecord>) -> Option<u64> {
        let token = self.token.as_deref()?;
        match (self.session.as_ref(), session) {
            (Some(_), Some(record)) if record.revoked.contains(token) => None,
            (Some(_), Some(record)) => Some(self.lease_expiry.max(record.expiry)),
            _ => Some(self.lease_expiry),
        }
    }

    /// True if no other client may take this item over yet: it is held until no earlier than
    /// `stale_ms` (now − clock-skew tolerance), judged with its session's item as
    /// [`held_until`](Self::held_until). This is the negation of what lets an acquirer in.
    pub(crate) fn occupied(&self, stale_ms: u64, session: Option<&SessionRecord>) -> bool {
        self.held_until(session)
            .is_some_and(|until| until >= stale_ms)
    }

    /// The lease this item records for `lock`, `slot` and `token`.
    pub(crate) fn lease(&self, lock: &LockName, slot: u32, token: Token) -> Lease {
        Lease {
            lock: lock.clone(),
            slot,
            owner: self.owner.clone(),
            token,
            fence: self.fence,
            acquired_at: time_at_ms(self.acquired_at),
            expires_at: time_at_ms(self.lease_expiry),
            period: None,
        }
    }

    /// The ledger's record, when it says the period starting at `from_ms` already ran: a claim
    /// granted at or after that start started ([`judge_claim`]).
    ///
    /// [`judge_claim`]: leasehold::store::judge_claim
    pub(crate) fn already_ran(&self, from_ms: u64) -> Option<PeriodRecord> {
        self.ledger
            .as_ref()
            .filter(|l| l.last_run().is_some_and(|ran| ran >= from_ms))
            .map(Ledger::record)
    }
}

impl Ledger {
    /// When the latest run was granted: this claim's grant if it started, else `ran`.
    fn last_run(&self) -> Option<u64> {
        self.started.then_some(self.at).max(self.ran)
    }

    /// The record as the core shows it.
    pub(crate) fn record(&self) -> PeriodRecord {
        PeriodRecord {
            period: self.period,
            from: time_at_ms(self.from),
            until: time_at_ms(self.until),
            at: time_at_ms(self.at),
            by: self.by.clone(),
            started: self.started,
            ran_at: self.last_run().map(time_at_ms),
        }
    }
}

impl Item {
    /// The holder this item records in `slot`, holding until `until` (epoch ms).
    pub(crate) fn holder(&self, slot: u32, until: u64) -> Holder {
        Holder {
            slot,
            owner: self.owner.clone(),
            fence: self.fence,
            acquired_at: time_at_ms(self.acquired_at),
            expires_at: time_at_ms(until),
        }
    }
}

fn malformed(key: &str, attribute: &str, expected: &str) -> StoreError {
    StoreError::permanent(format!(
        "item {key:?} has a malformed {attribute} attribute (expected {expected}); \
         is the table shared with something else?"
    ))
}

/// A string attribute value.
pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// A number attribute value.
pub(crate) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A signed number attribute value.
pub(crate) fn ni(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_held_and_a_released_item() {
        let mut attrs: Attributes = [
            (TOKEN, s("ab")),
            (OWNER, s("node-a")),
            (AUDIT_OWNER, s("node-a")),
            (FENCE, n(7)),
            (ACQUIRED_AT, n(100)),
            (LEASE_EXPIRY, n(200)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let item = Item::parse("k", &attrs).unwrap_or_else(|e| panic!("{e}"));
        assert!(item.held_by("ab", 199) && !item.held_by("ab", 200) && !item.held_by("x", 0));
        attrs.remove(TOKEN);
        attrs.remove(OWNER);
        let item = Item::parse("k", &attrs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((item.token, item.owner.as_str()), (None, "node-a"));
    }

    #[test]
    fn a_lease_of_a_session_lasts_as_long_as_its_session_unless_revoked() {
        let attrs: Attributes = [
            (TOKEN, s("ab")),
            (FENCE, n(7)),
            (LEASE_EXPIRY, n(200)),
            (SESSION, s("s1")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let item = Item::parse("k", &attrs).unwrap_or_else(|e| panic!("{e}"));
        let live = SessionRecord {
            expiry: 900,
            revoked: HashSet::new(),
        };
        assert_eq!(item.held_until(Some(&live)), Some(900));
        assert_eq!(
            item.held_until(None),
            Some(200),
            "a missing session: own term"
        );
        let revoked = SessionRecord {
            expiry: 900,
            revoked: ["ab".to_owned()].into_iter().collect(),
        };
        assert_eq!(item.held_until(Some(&revoked)), None);
        assert!(item.occupied(899, Some(&live)) && !item.occupied(901, Some(&live)));
    }

    #[test]
    fn a_foreign_item_is_a_permanent_error() {
        let attrs: Attributes = [(FENCE.to_owned(), s("seven"))].into_iter().collect();
        let err = Item::parse("k", &attrs).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("fence")));
    }
}
