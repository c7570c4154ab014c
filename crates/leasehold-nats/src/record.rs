//! What the keys hold: the latest message of a subject as read back, the lease record in a slot
//! key's value (and the session it names, in a header), the session record, and the period
//! ledger's value.

use std::time::{Duration, SystemTime};

use leasehold::store::{
    RecordFields, SlotRecord, StoredLedger, Token, encode_record, host_epoch_ms, time_at_ms,
};

/// Written in place of the fence by a grant: the fence is the granting message's own sequence.
const OWN: &str = "-";

/// The header naming the session a lock record is held under (its id). A record without it is
/// a lease of its own, kept alive by its own `Nats-TTL` (what the previous version wrote, and a
/// release with linger).
pub(crate) const SESSION_HEADER: &str = "Leasehold-Session";

/// The first word of a session record's value.
const SESSION_TAG: &str = "leasehold-session/1";

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
    /// The session the message names ([`SESSION_HEADER`]), if any.
    pub(crate) session: Option<String>,
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
    /// The session it is held under (its `expires_ms` then is the session's, as last known);
    /// `None` for a lease kept by its own TTL.
    pub(crate) session: Option<String>,
}

impl Record {
    /// The value: `leasehold/1 <token> <fence|-> <acquired ms> <expires ms> <released 0|1>
    /// <owner>` (the owner last: it may contain spaces). A grant writes `-` for the fence: it is
    /// the message's own sequence, unknown until the server stores it.
    pub(crate) fn encode(&self, grant: bool) -> String {
        let fence = if grant {
            OWN.to_owned()
        } else {
            self.held.fence.to_string()
        };
        encode_record(
            &[
                &self.held.token.to_hex(),
                &fence,
                &self.held.acquired_ms,
                &self.held.expires_ms,
                &u8::from(self.held.released),
            ],
            &self.held.owner,
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
            session: msg.session.clone(),
        })
    }
}

/// One revoked lease in a session record: the slot key and the token of a lease forced out
/// while the session lived, kept until the session's holder has seen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Revoked {
    /// The KV key of the slot (`<lock>.s<n>`).
    pub(crate) key: String,
    pub(crate) token: Token,
}

/// A session record (the key `=session.<id>`): the lease length its holder renews it with,
/// when it ends by its holder's clock, and the leases forced out of it that its holder has not
/// seen yet; with the sequence of the message read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionRecord {
    pub(crate) id: String,
    pub(crate) ttl: Duration,
    pub(crate) expires_ms: u64,
    pub(crate) revoked: Vec<Revoked>,
    pub(crate) seq: u64,
}

impl SessionRecord {
    /// The value: `leasehold-session/1 <ttl ms> <expires ms>`, then one line `<slot key>
    /// <token>` per revoked lease.
    pub(crate) fn encode(&self) -> String {
        let mut value = format!("{SESSION_TAG} {} {}", self.ttl.as_millis(), self.expires_ms);
        for r in &self.revoked {
            value.push('\n');
            value.push_str(&r.key);
            value.push(' ');
            value.push_str(&r.token.to_hex());
        }
        value
    }

    /// The session record `id` in a live message; `None` for a removed one or anything this
    /// store did not write.
    pub(crate) fn decode(id: &str, msg: &Stored) -> Option<Self> {
        if msg.op != Op::Put {
            return None;
        }
        let text = std::str::from_utf8(&msg.payload).ok()?;
        let mut lines = text.split('\n');
        let mut head = lines.next()?.split(' ');
        if head.next()? != SESSION_TAG {
            return None;
        }
        let ttl = Duration::from_millis(head.next()?.parse().ok()?);
        let expires_ms = head.next()?.parse().ok()?;
        let revoked = lines
            .map(|line| {
                let (key, token) = line.split_once(' ')?;
                Some(Revoked {
                    key: key.to_owned(),
                    token: Token::from_hex(token)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            id: id.to_owned(),
            ttl,
            expires_ms,
            revoked,
            seq: msg.seq,
        })
    }

    /// True if the lease of `token` was forced out of this session.
    pub(crate) fn revokes(&self, token: Token) -> bool {
        self.revoked.iter().any(|r| r.token == token)
    }
}

/// A lock's period ledger: its latest claim ([`LedgerText`]: the period id and window claimed,
/// when — this store's clients' clocks, ms — and to whom it was granted, the token it was granted
/// to, and whether its action started), with the sequence of the message read.
pub(crate) type Ledger = StoredLedger<u64>;

/// The ledger in a live message; `None` for anything this store did not write. A value without
/// the second line (an older version's) reads as a claim that started, its window unknown.
pub(crate) fn decode_ledger(msg: &Stored) -> Option<Ledger> {
    if msg.op != Op::Put {
        return None;
    }
    Ledger::decode(&msg.payload, msg.seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::store::{PeriodWindow, Token};

    fn stored(seq: u64, op: Op, text: &str) -> Stored {
        Stored {
            subject: "$KV.lh.a.s0".to_owned(),
            seq,
            op,
            payload: bytes::Bytes::from(text.to_owned()),
            session: None,
        }
    }

    #[test]
    fn session_records_round_trip_with_their_revoked_leases() {
        let mut session = SessionRecord {
            id: "ab".to_owned(),
            ttl: Duration::from_millis(3_000),
            expires_ms: 1_234,
            revoked: Vec::new(),
            seq: 0,
        };
        let read = SessionRecord::decode("ab", &stored(5, Op::Put, &session.encode()));
        assert_eq!(
            read,
            Some(SessionRecord {
                seq: 5,
                ..session.clone()
            })
        );
        let token = Token::random();
        session.revoked.push(Revoked {
            key: "a=2Eb.s1".to_owned(),
            token,
        });
        let read = SessionRecord::decode("ab", &stored(6, Op::Put, &session.encode()));
        assert!(read.as_ref().is_some_and(|s| s.revokes(token)));
        assert!(read.is_some_and(|s| !s.revokes(Token::random())));
        assert_eq!(
            SessionRecord::decode("ab", &stored(7, Op::Gone, &session.encode())),
            None
        );
        assert_eq!(
            SessionRecord::decode("ab", &stored(7, Op::Put, "leasehold/1 x")),
            None
        );
        assert_eq!(
            SessionRecord::decode("ab", &stored(7, Op::Put, "leasehold-session/1 3000 5\nbad")),
            None
        );
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
            session: None,
        };
        let granted = Record::decode(0, &stored(41, Op::Put, &record.encode(true)));
        assert_eq!(
            granted.as_ref().map(|r| (r.held.fence, r.seq)),
            Some((41, 41))
        );
        record.held.fence = 41;
        let extended = Record::decode(0, &stored(57, Op::Put, &record.encode(false)));
        assert_eq!(
            extended.map(|r| (r.held.fence, r.seq, r.held.owner)),
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
        let claim = Ledger::claim(window, 1_500, "host a (pid 7)", token, None, 0);
        let text = claim.text.encode();
        assert_eq!(
            text.lines().next(),
            Some("leasehold-ledger/1 4 1500 host a (pid 7)"),
            "the first line is an older version's whole value"
        );
        let read = decode_ledger(&stored(9, Op::Put, &text));
        assert_eq!(
            read,
            Some(Ledger {
                version: 9,
                ..claim.clone()
            })
        );
        let started = Ledger {
            version: 10,
            ..claim.started()
        };
        assert_eq!(started.text.ran_at_ms, Some(1_500));
        let read = decode_ledger(&stored(10, Op::Put, &started.text.encode()));
        assert_eq!(read.as_ref(), Some(&started));
        let record = started.record();
        assert_eq!(
            (record.from, record.until, record.started),
            (time(1_000), time(2_000), true)
        );
        // Written by an older version: a run, its window unknown.
        let old = decode_ledger(&stored(3, Op::Put, "leasehold-ledger/1 7 1500 host b"))
            .unwrap_or_else(|| panic!("an older version's ledger must parse"));
        assert_eq!(
            (
                old.text.period,
                old.text.by.as_str(),
                old.text.token,
                old.text.started
            ),
            (7, "host b", None, true)
        );
        let record = old.record();
        assert_eq!((record.from, record.until), (time(1_500), time(1_500)));
        assert_eq!(
            decode_ledger(&stored(3, Op::Put, "leasehold-ledger/1 7 1500 b\nother")),
            None
        );
        assert_eq!(decode_ledger(&stored(3, Op::Gone, &text)), None);
    }
}
