//! Reading a lock's keys, and the forced release that deletes what it read.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use bytes::Bytes;
use leasehold::store::{
    ForceRound, ForcedRound, MAX_SLOTS, StoreResult, holders_below, lowest_free_slot,
};
use leasehold::{Holder, Lease, LockName};

use super::session::judge;
use super::{Protocol, delete_marker};
use crate::classify::Published;
use crate::keys::{KeyOf, Keys};
use crate::link::Conn;
use crate::record::{Ledger, Op, Record, SessionRecord, Stored, decode_ledger};

/// The most messages one read of a lock returns: every slot (the server answers at most 1024
/// messages per batch direct get, and refuses a `multi_last` matching more keys with status 413,
/// a permanent error: only a lock used with all 1024 slots *and* a period ledger has more).
const LOCK_BATCH: u32 = MAX_SLOTS;

/// The most locks one batch direct get of many locks names (`state_many`): as many lock
/// filters as a session read names subjects, fewer when the locks' slots could not all fit one
/// answer of [`LOCK_BATCH`] messages.
const MANY_LOCKS_BATCH: usize = 256;

/// The keys of a lock as read: the leases this store wrote, the latest sequence of every slot
/// key, and the ledger.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    /// The leases held, by slot (a record under a session ends when the session does).
    pub(crate) records: Vec<Record>,
    /// Per slot with a message: its sequence and whether it holds the slot: a lease held, or a
    /// value another program wrote, which is never overwritten (not a marker, nor a record
    /// under a session that is gone or revoked it).
    pub(super) last: BTreeMap<u32, (u64, bool)>,
    /// The session records the lock's records name, as read.
    pub(super) sessions: HashMap<String, SessionRecord>,
    /// The period ledger, if the lock has one.
    pub(crate) ledger: Option<Ledger>,
    /// The sequence of the ledger key's latest message (0: none).
    pub(super) ledger_seq: u64,
    /// The highest sequence among the latest messages of every key of the lock (0: none): the
    /// last sequence of the lock's filter, which a period start expects.
    pub(super) lock_seq: u64,
}

impl Slots {
    pub(crate) fn read(keys: &Keys, messages: &[Stored]) -> Self {
        let mut slots = Self::default();
        for msg in messages {
            slots.lock_seq = slots.lock_seq.max(msg.seq);
            match keys.parse_subject(&msg.subject) {
                Some(KeyOf::Slot(_, slot)) => {
                    slots.last.insert(slot, (msg.seq, msg.op == Op::Put));
                    slots.records.extend(Record::decode(slot, msg));
                }
                Some(KeyOf::Ledger(_)) => {
                    slots.ledger_seq = msg.seq;
                    slots.ledger = decode_ledger(msg);
                }
                Some(KeyOf::Session(_)) | None => {}
            }
        }
        slots.records.sort_by_key(|r| r.held.slot);
        slots
    }

    /// Drops the records whose session is gone or revoked them (their slots are free), and
    /// times the others by their session, judged with `sessions` as read.
    fn judge(&mut self, sessions: &HashMap<String, SessionRecord>) {
        let last = &mut self.last;
        self.records.retain_mut(|r| {
            let held = judge(r, sessions);
            if !held && let Some(slot) = last.get_mut(&r.held.slot) {
                slot.1 = false;
            }
            held
        });
    }

    /// The lowest slot in `0..slots` without a live message.
    pub(super) fn lowest_free(&self, slots: u32) -> Option<u32> {
        lowest_free_slot(slots, |s| self.last.get(&s).is_some_and(|(_, live)| *live))
    }

    /// The sequence a write to `slot` must expect.
    pub(super) fn expected(&self, slot: u32) -> u64 {
        self.last.get(&slot).map_or(0, |(seq, _)| *seq)
    }
}

impl Protocol {
    /// Every key of `lock`, and the session records its records name (a second read, only when
    /// some record names a session).
    pub(crate) async fn read_lock(&self, lock: &LockName) -> StoreResult<Slots> {
        let messages = self.lock_messages(lock).await?;
        let mut slots = Slots::read(&self.keys, &messages);
        if slots.records.iter().any(|r| r.session.is_some()) {
            let sessions = self.sessions_of(&slots.records).await?;
            slots.judge(&sessions);
            slots.sessions = sessions;
        }
        Ok(slots)
    }

    /// The live holders below `slots` of each of `locks`, at the same place: one batch direct
    /// get of the latest message of every key of up to [`MANY_LOCKS_BATCH`] locks at a time
    /// (`multi_last` naming each lock's filter), then the session records their records name,
    /// read after every lock as [`read_lock`](Self::read_lock) does. A batch the server refuses
    /// (a lock with keys beyond `slots`, so more messages than one answer carries) is read one
    /// lock at a time instead.
    pub(crate) async fn holders_many(
        &self,
        locks: &[LockName],
        slots: u32,
    ) -> StoreResult<Vec<Vec<Holder>>> {
        let per_read =
            (LOCK_BATCH as usize / (slots as usize).saturating_add(1)).clamp(1, MANY_LOCKS_BATCH);
        let mut messages: HashMap<LockName, Vec<Stored>> = HashMap::new();
        for chunk in locks.chunks(per_read) {
            let filters: Vec<String> = chunk.iter().map(|l| self.keys.lock(l)).collect();
            let body = serde_json::json!({ "multi_last": filters, "batch": LOCK_BATCH });
            let read = match self.read_batch(body).await {
                Err(e) if !e.is_transient() && chunk.len() > 1 => {
                    self.read_one_by_one(chunk).await?
                }
                read => read?,
            };
            for msg in read {
                if let Some(lock) = self
                    .keys
                    .parse_subject(&msg.subject)
                    .as_ref()
                    .and_then(KeyOf::lock)
                {
                    messages.entry(lock.clone()).or_default().push(msg);
                }
            }
        }
        let mut read: Vec<Slots> = locks
            .iter()
            .map(|lock| Slots::read(&self.keys, messages.get(lock).map_or(&[], Vec::as_slice)))
            .collect();
        let sessions = self
            .sessions_of(read.iter().flat_map(|s| &s.records))
            .await?;
        Ok(read
            .iter_mut()
            .map(|lock| {
                lock.judge(&sessions);
                holders_below(lock.records.iter().map(|r| &r.held), slots)
            })
            .collect())
    }

    /// The latest message of every key of each of `locks`, one batch direct get per lock.
    async fn read_one_by_one(&self, locks: &[LockName]) -> StoreResult<Vec<Stored>> {
        let mut out = Vec::new();
        for lock in locks {
            out.extend(self.lock_messages(lock).await?);
        }
        Ok(out)
    }

    /// The latest message of every key of `lock`: one batch direct get.
    async fn lock_messages(&self, lock: &LockName) -> StoreResult<Vec<Stored>> {
        let body = serde_json::json!({ "multi_last": [self.keys.lock(lock)], "batch": LOCK_BATCH });
        self.read_batch(body).await
    }
}

impl Protocol {
    /// The record of `lease`'s slot, if it holds one of this store's.
    pub(super) async fn read_slot(
        &self,
        conn: &Conn,
        lease: &Lease,
    ) -> StoreResult<Option<Record>> {
        let subject = self.keys.slot(&lease.lock, lease.slot);
        Ok(self
            .read_one(conn, &subject)
            .await?
            .and_then(|msg| Record::decode(lease.slot, &msg)))
    }
}

#[async_trait]
impl ForceRound for Protocol {
    /// One round of a forced release ([`forced_release`](leasehold::store::forced_release)):
    /// frees every held slot of `lock` among `slots` whatever its token, and returns the holders
    /// as they were: a record under a session is first revoked in its session record (so that
    /// its holder's next renewal answers `NotHeld` for it, and only for it), then every record
    /// gets a delete marker (compare-and-set on what was read; a changed lock is read again by
    /// the next round).
    async fn force_round(&self, lock: &LockName, slots: u32) -> StoreResult<ForcedRound> {
        let conn = self.link.conn().await?;
        let read = self.read_lock(lock).await?;
        let held = read.records.iter().filter(|r| r.held.slot < slots);
        let mut round = ForcedRound::default();
        for r in held {
            if let Some(session) = r.session.as_ref().and_then(|id| read.sessions.get(id)) {
                let key = self.keys.slot_key(lock, r.held.slot);
                if !self
                    .revoke(conn, session.clone(), key, r.held.token)
                    .await?
                {
                    // The session is gone meanwhile: the slot is free already.
                    continue;
                }
                round.freed.push(r.held.holder());
            }
            let subject = self.keys.slot(lock, r.held.slot);
            match self
                .publish(
                    conn,
                    "a forced release",
                    subject,
                    delete_marker(r.seq),
                    Bytes::new(),
                )
                .await?
            {
                Published::Stored(_) if r.session.is_none() => round.freed.push(r.held.holder()),
                Published::Stored(_) => {}
                Published::Conflict => round.changed = true,
            }
        }
        Ok(round)
    }
}
