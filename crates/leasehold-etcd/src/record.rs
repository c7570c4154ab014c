//! What the keys hold: the lease record in a slot key's value (with what etcd knows about the
//! key: its fence is the key's `create_revision`), and the period ledger's value.

use etcd_client::KeyValue;
use leasehold::PeriodRecord;
use leasehold::store::{
    AcquireRequest, LedgerText, PeriodWindow, RecordFields, SlotRecord, Token, encode_record,
    host_epoch_ms,
};

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

/// The value of a slot key: `leasehold/1 <token> <acquired ms> <expires ms> <asked s> <granted s>
/// <released 0|1> <owner>` (the owner last: it may contain spaces).
pub(crate) fn encode(r: &Record) -> String {
    encode_record(
        &[
            &r.token.to_hex(),
            &r.acquired_ms,
            &r.expires_ms,
            &r.asked,
            &r.granted,
            &u8::from(r.released),
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
        let (asked, granted, released) = (f.number()?, f.number()?, f.flag()?);
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
        })
    }
}

/// A lock's period ledger: its latest claim — the period id and window claimed, when (this
/// store's clients' clocks, ms) and to whom it was granted, the token it was granted to and
/// whether its action started — with the key's `mod_revision` for compare-and-swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub(crate) period: i64,
    pub(crate) at_ms: u64,
    pub(crate) by: String,
    /// The window claimed, `[from, until)` in ms; `None` in a record of an older version.
    pub(crate) window: Option<(i64, i64)>,
    /// The token the claim was granted to; `None` in a record of an older version.
    pub(crate) token: Option<Token>,
    /// True once the claim's action started (always, in a record of an older version: a claim
    /// was a run then).
    pub(crate) started: bool,
    /// When the latest claim that started was granted, ms ([`LedgerText::ran_at_ms`]).
    pub(crate) ran_at_ms: Option<i64>,
    pub(crate) mod_revision: i64,
}

impl Ledger {
    /// The ledger of a claim granted now: at `at_ms` to `req`, for `window`, not started,
    /// keeping the latest run of `previous` (the ledger it replaces).
    pub(crate) fn claim(
        req: &AcquireRequest,
        window: PeriodWindow,
        at_ms: u64,
        previous: Option<&Self>,
    ) -> Self {
        let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
        let ran = previous.and_then(|l| l.text().last_run_ms());
        Self::from_text(LedgerText::claim(window, at, &req.owner, req.token, ran), 0)
    }

    /// This claim, marked started.
    pub(crate) fn started(&self) -> Self {
        let mut text = self.text();
        text.start();
        Self::from_text(text, self.mod_revision)
    }

    /// The value ([`LedgerText`]'s two lines).
    pub(crate) fn encode(&self) -> String {
        self.text().encode()
    }

    /// A ledger value; one without the second line (an older version's) reads as a claim that
    /// started, whose window is unknown.
    pub(crate) fn decode(kv: &KeyValue) -> Option<Self> {
        Self::parse(kv.value(), kv.mod_revision())
    }

    pub(crate) fn parse(value: &[u8], mod_revision: i64) -> Option<Self> {
        let text = LedgerText::decode(std::str::from_utf8(value).ok()?)?;
        Some(Self::from_text(text, mod_revision))
    }

    fn from_text(text: LedgerText, mod_revision: i64) -> Self {
        Self {
            period: text.period,
            at_ms: u64::try_from(text.at_ms).unwrap_or_default(),
            by: text.by,
            window: text.window,
            token: text.token,
            started: text.started,
            ran_at_ms: text.ran_at_ms,
            mod_revision,
        }
    }

    pub(crate) fn text(&self) -> LedgerText {
        LedgerText {
            period: self.period,
            at_ms: self.at_epoch_ms(),
            by: self.by.clone(),
            window: self.window,
            token: self.token,
            started: self.started,
            ran_at_ms: self.ran_at_ms,
        }
    }

    /// When the claim was granted, ms since the epoch.
    fn at_epoch_ms(&self) -> i64 {
        i64::try_from(self.at_ms).unwrap_or(i64::MAX)
    }

    pub(crate) fn record(&self) -> PeriodRecord {
        self.text().record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::store::time_at_ms;

    #[test]
    fn ledgers_round_trip_and_older_ones_read_as_started() {
        let token = Token::random();
        let claim = Ledger {
            period: -3,
            at_ms: 1_500,
            by: "host a (pid 7)".into(),
            window: Some((1_000, 2_000)),
            token: Some(token),
            started: false,
            ran_at_ms: None,
            mod_revision: 9,
        };
        let text = claim.encode();
        let first = text.lines().next().unwrap_or_default();
        assert_eq!(
            first, "leasehold-ledger/1 -3 1500 host a (pid 7)",
            "the first line is an older version's whole value"
        );
        assert_eq!(Ledger::parse(text.as_bytes(), 9), Some(claim.clone()));
        let started = claim.started();
        assert_eq!(started.ran_at_ms, Some(1_500));
        assert_eq!(
            Ledger::parse(started.encode().as_bytes(), 9),
            Some(started.clone())
        );
        let record = started.record();
        assert_eq!(
            (record.from, record.until, record.started),
            (time_at_ms(1_000), time_at_ms(2_000), true)
        );
        // Written by an older version: a run, its window unknown.
        let old = Ledger::parse(b"leasehold-ledger/1 7 1500 host b", 4)
            .unwrap_or_else(|| panic!("an older version's ledger must parse"));
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
            Ledger::parse(b"leasehold-ledger/1 7 1500 b\nother", 4),
            None
        );
        assert_eq!(Ledger::parse(b"something else", 4), None);
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
        };
        let text = encode(&r);
        assert!(text.starts_with("leasehold/1 "), "{text}");
        let mut f = text.splitn(8, ' ').skip(1);
        assert_eq!(f.next().and_then(Token::from_hex), Some(r.token));
        assert_eq!(f.nth(5), Some("host a (pid 7)"));
    }
}
