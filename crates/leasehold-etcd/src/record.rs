//! What the keys hold: the lease record in a slot key's value (with what etcd knows about the
//! key: its fence is the key's `create_revision`), and the period ledger's value.

use etcd_client::KeyValue;
use leasehold::store::{RecordFields, SlotRecord, StoredLedger, encode_record, host_epoch_ms};

use crate::keys::Keys;

/// This host's clock in milliseconds since the epoch. etcd has no clock of its own to read, so
/// a lease's `expires_at` is this clock at the moment the request was **sent** plus the TTL
/// asked for: never later than etcd's own expiry, which counts the TTL rounded up to whole
/// seconds from when the leader applies the request, and only ever lengthens on a leader change.
pub(crate) fn now_ms() -> u64 {
    host_epoch_ms()
}

/// What a slot key holds: the value this store wrote (the lease, see [`SlotRecord`], and the
/// TTLs asked for and granted) plus what etcd knows about the key. Its `expires_ms` is the end
/// of the lease as asked for (this host's clock at sending + the TTL); etcd's lease runs at least
/// until then, and after it the holder may no longer extend, even while etcd has yet to delete
/// the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// The lease; its fence is the key's `create_revision`.
    pub(crate) held: SlotRecord,
    /// The TTL asked for (rounded up to seconds) and the TTL etcd granted, in seconds.
    pub(crate) asked: i64,
    pub(crate) granted: i64,
    pub(crate) mod_revision: i64,
    pub(crate) lease_id: i64,
    /// True if the key is attached to a session (its etcd lease is shared with other keys and
    /// must never be revoked for this one).
    pub(crate) session: bool,
}

impl std::ops::Deref for Record {
    type Target = SlotRecord;
    fn deref(&self) -> &SlotRecord {
        &self.held
    }
}

impl std::ops::DerefMut for Record {
    fn deref_mut(&mut self) -> &mut SlotRecord {
        &mut self.held
    }
}

/// The state field of a lease on an etcd lease of its own.
const STATE_OWN: &str = "0";
/// The state field of a released lease (kept, with linger, until its etcd lease ends).
const STATE_RELEASED: &str = "1";
/// The state field of a lease on a session.
const STATE_SESSION: &str = "2";

/// The value of a slot key: `leasehold/1 <token> <acquired ms> <expires ms> <asked s> <granted s>
/// <state> <owner>` (the owner last: it may contain spaces). The state is `0` for a lease on an
/// etcd lease of its own, `1` once released, `2` for a lease on a session (older versions read
/// anything but `1` as held).
pub(crate) fn encode(r: &Record) -> String {
    let state = match (r.released, r.session) {
        (true, _) => STATE_RELEASED,
        (false, true) => STATE_SESSION,
        (false, false) => STATE_OWN,
    };
    encode_record(
        &[
            &r.token.to_hex(),
            &r.acquired_ms,
            &r.expires_ms,
            &r.asked,
            &r.granted,
            &state,
        ],
        &r.owner,
    )
}

impl Record {
    /// Decodes a key of `keys`; `None` for anything this store did not write.
    pub(crate) fn decode(keys: &Keys, kv: &KeyValue) -> Option<Self> {
        let (_, slot) = keys.parse(kv.key())?;
        let mut f = RecordFields::parse(std::str::from_utf8(kv.value()).ok()?, 7)?;
        let (token, acquired_ms, expires_ms) = (f.token()?, f.number()?, f.number()?);
        let (asked, granted, state) = (f.number()?, f.number()?, f.text()?);
        let (released, session) = (state == STATE_RELEASED, state == STATE_SESSION);
        Some(Self {
            held: SlotRecord {
                slot,
                token,
                owner: f.text()?.to_owned(),
                fence: u64::try_from(kv.create_revision()).ok()?,
                acquired_ms,
                expires_ms,
                released,
            },
            asked,
            granted,
            mod_revision: kv.mod_revision(),
            lease_id: kv.lease(),
            session,
        })
    }
}

/// A lock's period ledger: its latest claim ([`LedgerText`]: the period id and window claimed,
/// when — this store's clients' clocks, ms — and to whom it was granted, the token it was granted
/// to and whether its action started), with the key's `mod_revision` for compare-and-swap.
pub(crate) type Ledger = StoredLedger<i64>;

/// The ledger in a key's value, with its `mod_revision`; `None` for a value this store did not
/// write. One without the second line (an older version's) reads as a claim that started, whose
/// window is unknown.
pub(crate) fn decode_ledger(kv: &KeyValue) -> Option<Ledger> {
    Ledger::decode(kv.value(), kv.mod_revision())
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::store::{LedgerText, Token, time_at_ms};

    #[test]
    fn ledgers_round_trip_and_older_ones_read_as_started() {
        let token = Token::random();
        let claim = Ledger {
            text: LedgerText {
                period: -3,
                at_ms: 1_500,
                by: "host a (pid 7)".into(),
                window: Some((1_000, 2_000)),
                token: Some(token),
                started: false,
                ran_at_ms: None,
            },
            version: 9,
        };
        let text = claim.text.encode();
        let first = text.lines().next().unwrap_or_default();
        assert_eq!(
            first, "leasehold-ledger/1 -3 1500 host a (pid 7)",
            "the first line is an older version's whole value"
        );
        assert_eq!(Ledger::decode(text.as_bytes(), 9), Some(claim.clone()));
        let started = claim.started();
        assert_eq!(started.text.ran_at_ms, Some(1_500));
        assert_eq!(
            Ledger::decode(started.text.encode().as_bytes(), 9),
            Some(started.clone())
        );
        let record = started.record();
        assert_eq!(
            (record.from, record.until, record.started),
            (time_at_ms(1_000), time_at_ms(2_000), true)
        );
        // Written by an older version: a run, its window unknown.
        let old = Ledger::decode(b"leasehold-ledger/1 7 1500 host b", 4)
            .unwrap_or_else(|| panic!("an older version's ledger must parse"));
        let old = old.text;
        assert_eq!(
            (old.period, old.by.as_str(), old.token, old.started),
            (7, "host b", None, true)
        );
        let record = old.record();
        assert_eq!(
            (record.from, record.until),
            (time_at_ms(1_500), time_at_ms(1_500))
        );
        assert_eq!(
            Ledger::decode(b"leasehold-ledger/1 7 1500 b\nother", 4),
            None
        );
        assert_eq!(Ledger::decode(b"something else", 4), None);
    }

    #[test]
    fn values_round_trip_with_spaces_in_the_owner() {
        let r = Record {
            held: SlotRecord {
                slot: 2,
                token: Token::random(),
                owner: "host a (pid 7)".into(),
                fence: 0,
                acquired_ms: 10,
                expires_ms: 2010,
                released: true,
            },
            asked: 2,
            granted: 2,
            mod_revision: 0,
            lease_id: 0,
            session: false,
        };
        let text = encode(&r);
        assert!(text.starts_with("leasehold/1 "), "{text}");
        let mut f = text.splitn(8, ' ').skip(1);
        assert_eq!(f.next().and_then(Token::from_hex), Some(r.token));
        assert_eq!(f.nth(5), Some("host a (pid 7)"));
    }
}
