//! What the keys hold: the latest message of a subject as read back, the lease record in a slot
//! key's value, and the period ledger's value.

use std::time::SystemTime;

use leasehold::PeriodRecord;
use leasehold::store::{
    LedgerText, PeriodWindow, RecordFields, SlotRecord, Token, encode_record, host_epoch_ms,
    time_at_ms,
};

/// Written in place of the fence by a grant: the fence is the granting message's own sequence.
const OWN: &str = "-";

/// This host's clock in milliseconds since the epoch.
pub(crate) fn now_ms() -> u64 {
    host_epoch_ms()
}

/// The time `ms` after the epoch.
pub(crate) fn time(ms: u64) -> SystemTime {
    time_at_ms(ms)
}

/// What a message of the bucket says about its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A value: the key exists.
    Put,
    /// A delete or purge (`KV-Operation`), or the server's marker that a message's TTL ran out
    /// (`Nats-Marker-Reason`): the key does not exist.
    Gone,
}

/// The latest message of one subject, as read back.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) subject: String,
    /// The stream sequence (the key's revision).
    pub(crate) seq: u64,
    pub(crate) op: Op,
    pub(crate) payload: bytes::Bytes,
}

/// A lease as kept in a slot key: the lease (see [`SlotRecord`]; its fence is the stream
/// sequence of the message that granted the slot, its `expires_ms` this host's clock when the
/// request was sent plus the TTL asked for — the server removes the message a TTL rounded up to
/// whole seconds after it stored it, and after the end the holder may no longer extend, even
/// while the server has yet to remove the message), and the sequence of the message read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) held: SlotRecord,
    /// The sequence of the message read (the expected sequence of the next change).
    pub(crate) seq: u64,
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

impl Record {
    /// The value: `leasehold/1 <token> <fence|-> <acquired ms> <expires ms> <released 0|1>
    /// <owner>` (the owner last: it may contain spaces). A grant writes `-` for the fence: it is
    /// the message's own sequence, unknown until the server stores it.
    pub(crate) fn encode(&self, grant: bool) -> String {
        let fence = if grant {
            OWN.to_owned()
        } else {
            self.fence.to_string()
        };
        encode_record(
            &[
                &self.token.to_hex(),
                &fence,
                &self.acquired_ms,
                &self.expires_ms,
                &u8::from(self.released),
            ],
            &self.owner,
        )
    }

    /// The record in a live message of slot `slot`; `None` for anything this store did not
    /// write.
    pub(crate) fn decode(slot: u32, msg: &Stored) -> Option<Self> {
        if msg.op != Op::Put {
            return None;
        }
        let mut f = RecordFields::parse(std::str::from_utf8(&msg.payload).ok()?, 6)?;
        let token = f.token()?;
        let fence = match f.text()? {
            OWN => msg.seq,
            n => n.parse().ok()?,
        };
        let (acquired_ms, expires_ms, released) = (f.number()?, f.number()?, f.flag()?);
        Some(Self {
            held: SlotRecord {
                slot,
                token,
                owner: f.text()?.to_owned(),
                fence,
                acquired_ms,
                expires_ms,
                released,
            },
            seq: msg.seq,
        })
    }
}

/// A lock's period ledger: its latest claim — the period id and window claimed, when (this
/// store's clients' clocks, ms) and to whom it was granted, the token it was granted to, and
/// whether its action started — with the sequence of the message read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub(crate) period: i64,
    pub(crate) at_ms: u64,
    pub(crate) by: String,
    /// The window claimed, `[from, until)` in ms; `None` in a ledger of an older version.
    pub(crate) window: Option<(i64, i64)>,
    /// The token the claim was granted to; `None` in a ledger of an older version.
    pub(crate) token: Option<Token>,
    /// True once the claim's action started (always, in a ledger of an older version: a claim
    /// was a run then).
    pub(crate) started: bool,
    /// When the latest claim that started was granted, ms ([`LedgerText::ran_at_ms`]).
    pub(crate) ran_at_ms: Option<i64>,
    pub(crate) seq: u64,
}

impl Ledger {
    /// The ledger of a claim granted at `at_ms` to `owner` with `token`, for `window`, not
    /// started, keeping the latest run of `previous` (the ledger it replaces).
    pub(crate) fn claim(
        window: PeriodWindow,
        at_ms: u64,
        owner: &str,
        token: Token,
        previous: Option<&Self>,
    ) -> Self {
        let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
        let ran = previous.and_then(|l| l.text().last_run_ms());
        Self::from_text(LedgerText::claim(window, at, owner, token, ran), 0)
    }

    /// This claim, marked started.
    pub(crate) fn started(&self) -> Self {
        let mut text = self.text();
        text.start();
        Self::from_text(text, self.seq)
    }

    /// The ledger's verdict on a claim of the window from `window_from_ms`
    /// ([`LedgerText::judge`]).
    pub(crate) fn judge(
        ledger: Option<&Self>,
        window_from_ms: i64,
        lock_live: bool,
    ) -> leasehold::store::ClaimVerdict {
        LedgerText::judge(ledger.map(Self::text).as_ref(), window_from_ms, lock_live)
    }

    /// The value ([`LedgerText`]'s two lines).
    pub(crate) fn encode(&self) -> String {
        self.text().encode()
    }

    /// The ledger in a live message; `None` for anything this store did not write. A value
    /// without the second line (an older version's) reads as a claim that started, its window
    /// unknown.
    pub(crate) fn decode(msg: &Stored) -> Option<Self> {
        if msg.op != Op::Put {
            return None;
        }
        let text = LedgerText::decode(std::str::from_utf8(&msg.payload).ok()?)?;
        Some(Self::from_text(text, msg.seq))
    }

    fn from_text(text: LedgerText, seq: u64) -> Self {
        Self {
            period: text.period,
            at_ms: u64::try_from(text.at_ms).unwrap_or_default(),
            by: text.by,
            window: text.window,
            token: text.token,
            started: text.started,
            ran_at_ms: text.ran_at_ms,
            seq,
        }
    }

    fn text(&self) -> LedgerText {
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
    pub(crate) fn at_epoch_ms(&self) -> i64 {
        i64::try_from(self.at_ms).unwrap_or(i64::MAX)
    }

    pub(crate) fn record(&self) -> PeriodRecord {
        self.text().record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(seq: u64, op: Op, text: &str) -> Stored {
        Stored {
            subject: "$KV.lh.a.s0".to_owned(),
            seq,
            op,
            payload: bytes::Bytes::from(text.to_owned()),
        }
    }

    #[test]
    fn a_grant_takes_its_own_sequence_as_fence_and_keeps_it() {
        let mut record = Record {
            held: SlotRecord {
                slot: 0,
                token: Token::random(),
                owner: "node a".to_owned(),
                fence: 0,
                acquired_ms: 1,
                expires_ms: 2,
                released: false,
            },
            seq: 0,
        };
        let granted = Record::decode(0, &stored(41, Op::Put, &record.encode(true)));
        assert_eq!(granted.as_ref().map(|r| (r.fence, r.seq)), Some((41, 41)));
        record.fence = 41;
        let extended = Record::decode(0, &stored(57, Op::Put, &record.encode(false)));
        assert_eq!(
            extended.map(|r| (r.fence, r.seq, r.held.owner)),
            Some((41, 57, "node a".to_owned()))
        );
        assert_eq!(
            Record::decode(0, &stored(58, Op::Gone, &record.encode(false))),
            None
        );
        assert_eq!(Record::decode(0, &stored(58, Op::Put, "other")), None);
    }

    #[test]
    fn ledgers_round_trip_and_older_ones_read_as_started() {
        let window = PeriodWindow {
            id: 4,
            from_ms: 1_000,
            until_ms: 2_000,
        };
        let token = Token::random();
        let claim = Ledger::claim(window, 1_500, "host a (pid 7)", token, None);
        let text = claim.encode();
        assert_eq!(
            text.lines().next(),
            Some("leasehold-ledger/1 4 1500 host a (pid 7)"),
            "the first line is an older version's whole value"
        );
        let read = Ledger::decode(&stored(9, Op::Put, &text));
        assert_eq!(
            read,
            Some(Ledger {
                seq: 9,
                ..claim.clone()
            })
        );
        let started = Ledger {
            seq: 10,
            ..claim.started()
        };
        assert_eq!(started.ran_at_ms, Some(1_500));
        let read = Ledger::decode(&stored(10, Op::Put, &started.encode()));
        assert_eq!(read.as_ref(), Some(&started));
        let record = started.record();
        assert_eq!(
            (record.from, record.until, record.started),
            (time(1_000), time(2_000), true)
        );
        // Written by an older version: a run, its window unknown.
        let old = Ledger::decode(&stored(3, Op::Put, "leasehold-ledger/1 7 1500 host b"))
            .unwrap_or_else(|| panic!("an older version's ledger must parse"));
        assert_eq!(
            (old.period, old.by.as_str(), old.token, old.started),
            (7, "host b", None, true)
        );
        let record = old.record();
        assert_eq!((record.from, record.until), (time(1_500), time(1_500)));
        assert_eq!(
            Ledger::decode(&stored(3, Op::Put, "leasehold-ledger/1 7 1500 b\nother")),
            None
        );
        assert_eq!(Ledger::decode(&stored(3, Op::Gone, &text)), None);
    }
}
