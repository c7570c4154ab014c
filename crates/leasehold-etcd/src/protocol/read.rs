//! Reading a lock's keys, and the forced release that deletes what it read.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use leasehold::store::{ForceRound, ForcedRound, StoreResult, lowest_free_slot};
use leasehold::{Lease, LockName};

use super::{Protocol, revoke_quietly, secs_ms, txn};
use crate::keys::Keys;
use crate::record::{Ledger, Record, decode_ledger, now_ms};

/// How many keys one forced-release transaction deletes (etcd allows 128 operations by default).
const FORCE_CHUNK: usize = 100;

/// Whether the foreign-key warning was logged (once per process: waiters poll often).
static FOREIGN_WARNED: AtomicBool = AtomicBool::new(false);

/// The slot keys of a lock as read: the leases this store wrote, and every slot whose key exists.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    /// The leases, by slot.
    pub(crate) records: Vec<Record>,
    /// Every slot with a key, including keys another program wrote (which are never overwritten,
    /// so such a slot is never granted).
    pub(super) taken: Vec<u32>,
    /// The period ledger, if the lock has one.
    pub(crate) ledger: Option<Ledger>,
}

impl Slots {
    fn read(keys: &Keys, kvs: &[KeyValue]) -> Self {
        let mut records: Vec<Record> = kvs
            .iter()
            .filter_map(|kv| Record::decode(keys, kv))
            .collect();
        records.sort_by_key(|r| r.slot);
        let taken: Vec<u32> = kvs
            .iter()
            .filter_map(|kv| keys.parse(kv.key()).map(|(_, slot)| slot))
            .collect();
        if taken.len() > records.len() && !FOREIGN_WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "a slot key under the etcd prefix holds a value leasehold did not write; that slot is never granted (warned once per process)"
            );
        }
        let ledger = kvs
            .iter()
            .find(|kv| keys.is_ledger(kv.key()))
            .and_then(decode_ledger);
        Self {
            records,
            taken,
            ledger,
        }
    }

    /// The lowest slot in `0..slots` without a key.
    pub(super) fn lowest_free(&self, slots: u32) -> Option<u32> {
        lowest_free_slot(slots, |s| self.taken.contains(&s))
    }
}

impl Protocol {
    /// Every slot of `lock` (linearizable read).
    pub(crate) async fn read_lock(&self, lock: &LockName) -> StoreResult<Slots> {
        let prefix = self.keys.lock(lock);
        let resp = self
            .link
            .idempotent("a read", |mut c| {
                let prefix = prefix.clone();
                async move { c.get(prefix, Some(GetOptions::new().with_prefix())).await }
            })
            .await?;
        Ok(Slots::read(&self.keys, resp.kvs()))
    }

    /// The record of `lease`'s slot, if it holds one of this store's (linearizable read).
    pub(super) async fn read_slot(&self, lease: &Lease) -> StoreResult<Option<Record>> {
        let key = self.keys.slot(&lease.lock, lease.slot);
        let resp = self
            .link
            .idempotent("a read", |mut c| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })
            .await?;
        Ok(Slots::read(&self.keys, resp.kvs())
            .records
            .into_iter()
            .next())
    }

    /// Brings the expiry of each record on a session whose stored expiry has passed up to date: its
    /// holder kept it since through its session, without rewriting it. The session's remaining TTL
    /// (one `LeaseTimeToLive` per distinct session; etcd counts it in whole seconds, rounded down),
    /// less what etcd added to the TTL asked, is then the latest the lease can end. A stored expiry
    /// that has not passed is the lease's as granted, and stays.
    pub(crate) async fn session_expiries<'a>(
        &self,
        records: impl IntoIterator<Item = &'a mut Record>,
    ) -> StoreResult<()> {
        let mut records: Vec<&mut Record> = records.into_iter().collect();
        let now = now_ms();
        let ids: BTreeSet<i64> = records
            .iter()
            .filter(|r| r.session && r.expires_ms <= now)
            .map(|r| r.lease_id)
            .collect();
        for id in ids {
            let resp = self
                .link
                .idempotent("a session read", |mut c| async move {
                    c.lease_time_to_live(id, None).await
                })
                .await?;
            let (left, granted) = (resp.ttl(), resp.granted_ttl());
            for r in records.iter_mut().filter(|r| r.session && r.lease_id == id) {
                let extra = granted.saturating_sub(r.asked).max(0);
                let until = now.saturating_add(secs_ms(left.saturating_sub(extra)));
                r.expires_ms = r.expires_ms.max(until);
            }
        }
        Ok(())
    }
}

/// The lock's slots as a failed acquisition transaction read them back (its `or_else` get).
pub(super) fn slots_read_back(keys: &Keys, resp: TxnResponse) -> Slots {
    resp.op_responses()
        .into_iter()
        .find_map(|r| match r {
            TxnOpResponse::Get(g) => Some(Slots::read(keys, g.kvs())),
            _ => None,
        })
        .unwrap_or_default()
}

#[async_trait]
impl ForceRound for Protocol {
    /// One round of a forced release ([`forced_release`](leasehold::store::forced_release)):
    /// deletes every live slot of `lock` among `slots` whatever its token (compare-and-swap on
    /// what was read; a changed lock is read again by the next round), revokes their etcd leases
    /// unless they are sessions (which other locks' keys share: their holders learn at their next
    /// renewal that these keys are gone), and returns the holders as they were.
    async fn force_round(&self, lock: &LockName, slots: u32) -> StoreResult<ForcedRound> {
        let (link, keys) = (&*self.link, &self.keys);
        let held: Vec<Record> = self
            .read_lock(lock)
            .await?
            .records
            .into_iter()
            .filter(|r| r.slot < slots)
            .collect();
        let mut round = ForcedRound::default();
        for chunk in held.chunks(FORCE_CHUNK) {
            let compares: Vec<Compare> = chunk
                .iter()
                .map(|r| {
                    Compare::mod_revision(keys.slot(lock, r.slot), CompareOp::Equal, r.mod_revision)
                })
                .collect();
            let deletes: Vec<TxnOp> = chunk
                .iter()
                .map(|r| TxnOp::delete(keys.slot(lock, r.slot), None))
                .collect();
            if txn(
                link,
                "a forced release",
                Txn::new().when(compares).and_then(deletes),
            )
            .await?
            .succeeded()
            {
                for r in chunk {
                    if !r.session {
                        revoke_quietly(link, r.lease_id).await;
                    }
                    round.freed.push(r.holder());
                }
            } else {
                round.changed = true;
            }
        }
        Ok(round)
    }
}
