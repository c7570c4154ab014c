//! What a slot node and a ledger node hold, and how a slot node is judged from its data and
//! `Stat`.
//!
//! A slot node's data is `leasehold/1 <status> <grant version> <ttl ms> <cap ms|-> <acquired ms>
//! <token> <owner>` (the owner last: it may contain spaces), where status is `held`, `linger`
//! (released with a linger: held until it ends, no longer extendable) or `free`.
//!
//! * **Expiry** = `min(mtime + ttl, cap)`: `mtime` is the clock of the leader that applied the
//!   last write (grant or extension), so expiries are the ensemble's time; `cap` keeps a
//!   release with linger from ever lengthening a lease.
//! * **Fence** = the node's `czxid` + the data version the grant wrote (`grant version`). Slot
//!   nodes are never deleted by the store, so their data version only grows, and every grant
//!   writes a higher one; if someone deletes a slot node by hand, the node created next has a
//!   higher `czxid` than every zxid the old node ever saw, which is more than its `czxid` plus its
//!   version. So fences strictly increase per `(lock, slot)`, across leader changes and restarts.

use std::time::{Duration, SystemTime};

use leasehold::store::{LedgerText, RecordFields, ceil_millis, encode_record, time_at_ms};
use leasehold::{Holder, Lease, LockName, store::Token};
use zookeeper_client::Stat;

/// A point in time from ms since the epoch.
pub(crate) fn time(ms: i64) -> SystemTime {
    time_at_ms(u64::try_from(ms).unwrap_or(0))
}

/// Milliseconds rounded up, as an i64.
pub(crate) fn ms_ceil(d: Duration) -> i64 {
    i64::try_from(ceil_millis(d)).unwrap_or(i64::MAX)
}

/// A slot's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Held,
    Linger,
    Free,
}

/// The data of a slot node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) status: Status,
    pub(crate) grant_version: i32,
    pub(crate) ttl_ms: i64,
    pub(crate) cap_ms: Option<i64>,
    pub(crate) acquired_ms: i64,
    pub(crate) token: Token,
    pub(crate) owner: String,
}

impl Record {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let status = match self.status {
            Status::Held => "held",
            Status::Linger => "linger",
            Status::Free => "free",
        };
        let cap = self
            .cap_ms
            .map_or_else(|| "-".to_owned(), |c| c.to_string());
        encode_record(
            &[
                &status,
                &self.grant_version,
                &self.ttl_ms,
                &cap,
                &self.acquired_ms,
                &self.token.to_hex(),
            ],
            &self.owner,
        )
        .into_bytes()
    }

    /// `None` for data this store did not write.
    pub(crate) fn decode(data: &[u8]) -> Option<Self> {
        let mut f = RecordFields::parse(std::str::from_utf8(data).ok()?, 7)?;
        let status = match f.text()? {
            "held" => Status::Held,
            "linger" => Status::Linger,
            "free" => Status::Free,
            _ => return None,
        };
        Some(Self {
            status,
            grant_version: f.number()?,
            ttl_ms: f.number()?,
            cap_ms: match f.text()? {
                "-" => None,
                c => Some(c.parse().ok()?),
            },
            acquired_ms: f.number()?,
            token: f.token()?,
            owner: f.text()?.to_owned(),
        })
    }
}

/// A slot node as read: its number, data and `Stat`.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) slot: u32,
    /// `None` when the data is not this store's (such a slot is never granted).
    pub(crate) record: Option<Record>,
    pub(crate) stat: Stat,
}

impl Node {
    /// The end of the lease, ensemble time in ms.
    pub(crate) fn end_ms(&self) -> Option<i64> {
        let r = self.record.as_ref()?;
        let end = self.stat.mtime.saturating_add(r.ttl_ms);
        Some(r.cap_ms.map_or(end, |cap| end.min(cap)))
    }
    /// The fence of the grant the node holds.
    pub(crate) fn fence(&self) -> Option<u64> {
        let r = self.record.as_ref()?;
        u64::try_from(self.stat.czxid.saturating_add(i64::from(r.grant_version))).ok()
    }
    /// True while the holder may still use (and extend) its lease: not free and not ended at
    /// `now` (the ensemble's time, a lower bound).
    pub(crate) fn live_for_holder(&self, now: i64) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.status != Status::Free)
            && self.end_ms().is_some_and(|end| now < end)
    }
    /// True while others must leave the slot alone: not free, and `now` (a lower bound of the
    /// ensemble's time) less than `tolerance` ms past its end. A foreign node is always taken.
    pub(crate) fn live_for_others(&self, now: i64, tolerance: i64) -> bool {
        match &self.record {
            None => true,
            Some(r) => {
                r.status != Status::Free
                    && self
                        .end_ms()
                        .is_some_and(|end| now < end.saturating_add(tolerance))
            }
        }
    }
    /// True if `lease` is this node's grant, not yet released.
    pub(crate) fn is(&self, lease: &Lease) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.token == lease.token && r.status == Status::Held)
            && self.fence() == Some(lease.fence)
    }
    /// This node's grant as a lease of `lock`.
    pub(crate) fn lease(&self, lock: &LockName) -> Option<Lease> {
        let r = self.record.as_ref()?;
        Some(Lease {
            lock: lock.clone(),
            slot: self.slot,
            owner: r.owner.clone(),
            token: r.token,
            fence: self.fence()?,
            acquired_at: time(r.acquired_ms),
            expires_at: time(self.end_ms()?),
            period: None,
        })
    }
    /// This node's grant as a holder.
    pub(crate) fn holder(&self) -> Option<Holder> {
        let r = self.record.as_ref()?;
        Some(Holder {
            slot: self.slot,
            owner: r.owner.clone(),
            fence: self.fence()?,
            acquired_at: time(r.acquired_ms),
            expires_at: time(self.end_ms()?),
        })
    }
}

/// A slot node this client wrote, as the store remembers it: a release or an extension is then
/// one `set_data` at its version.
impl leasehold::store::OwnWrite for Node {
    fn is(&self, lease: &Lease) -> bool {
        Node::is(self, lease)
    }
    fn forgettable(&self, host_now_ms: u64) -> bool {
        // Ensemble time, compared with this host's: a guess either way, and a wrong one costs
        // one read.
        self.end_ms()
            .is_none_or(|end| u64::try_from(end).unwrap_or(0) <= host_now_ms)
    }
}

/// A lock's period ledger: its latest claim — the period id and window claimed, when (ensemble
/// time, ms) and to whom it was granted, the token it was granted to, whether its action started
/// and when the latest claim that started was granted — as the core's [`LedgerText`].
pub(crate) type Ledger = LedgerText;

/// The ledger node's data; `None` for data this store did not write. A ledger without the
/// second line (an older version's) reads as a claim that started, its window unknown.
pub(crate) fn decode_ledger(data: &[u8]) -> Option<Ledger> {
    LedgerText::decode(std::str::from_utf8(data).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_with_spaces_in_the_owner() {
        let r = Record {
            status: Status::Linger,
            grant_version: 7,
            ttl_ms: 1500,
            cap_ms: Some(99),
            acquired_ms: 12,
            token: Token::random(),
            owner: "host a (pid 7)".into(),
        };
        assert_eq!(Record::decode(&r.encode()), Some(r.clone()));
        let free = Record {
            status: Status::Free,
            cap_ms: None,
            ..r
        };
        assert_eq!(Record::decode(&free.encode()), Some(free));
        assert_eq!(Record::decode(b"something else"), None);
        let window = leasehold::store::PeriodWindow {
            id: 3,
            from_ms: -2,
            until_ms: 10,
        };
        let l = LedgerText::claim(window, 4, "a b", Token::random(), None);
        assert_eq!(decode_ledger(l.encode().as_bytes()), Some(l.clone()));
        let mut started = l;
        started.start();
        assert_eq!(
            decode_ledger(started.encode().as_bytes()),
            Some(started.clone())
        );
        let text = started.encode();
        assert_eq!(
            text.lines().next(),
            Some("leasehold-ledger/1 3 4 a b"),
            "the first line is an older version's whole ledger"
        );
    }

    #[test]
    fn an_older_versions_ledger_reads_as_a_run_of_unknown_window() {
        let old = decode_ledger(b"leasehold-ledger/1 7 1500 host b")
            .unwrap_or_else(|| panic!("an older version's ledger must parse"));
        assert_eq!(
            (old.period, old.by.as_str(), old.token, old.started),
            (7, "host b", None, true)
        );
        let record = old.record();
        assert_eq!(
            (record.from, record.until, record.at),
            (time(1500), time(1500), time(1500))
        );
        assert_eq!(decode_ledger(b"leasehold-ledger/1 7 1500 b\nother"), None);
    }

    #[test]
    fn expiry_is_mtime_plus_ttl_capped_and_fences_add_the_grant_version() {
        let stat = |czxid, mtime| Stat {
            czxid,
            mzxid: czxid,
            pzxid: czxid,
            ctime: mtime,
            mtime,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        };
        let r = Record {
            status: Status::Held,
            grant_version: 3,
            ttl_ms: 1000,
            cap_ms: None,
            acquired_ms: 0,
            token: Token::random(),
            owner: "o".into(),
        };
        let mut node = Node {
            slot: 0,
            record: Some(r),
            stat: stat(100, 5000),
        };
        assert_eq!(node.end_ms(), Some(6000));
        assert_eq!(node.fence(), Some(103));
        assert!(node.live_for_holder(5999) && !node.live_for_holder(6000));
        assert!(node.live_for_others(6099, 100) && !node.live_for_others(6100, 100));
        if let Some(r) = node.record.as_mut() {
            r.cap_ms = Some(5500);
        }
        assert_eq!(node.end_ms(), Some(5500));
        node.record = None;
        assert!(
            node.live_for_others(i64::MAX, 0),
            "foreign data is never taken"
        );
    }
}
