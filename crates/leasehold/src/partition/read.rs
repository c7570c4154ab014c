//! Reading a partition set from the store: its members (one read of the member group) and the
//! owners of its shards (a batched read of the shard locks on a store that reads in batches,
//! else a listing of the store's live locks, or one state read per shard on a store that
//! cannot list).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::elect::elector::Elector;
use crate::error::Result;
use crate::name::LockName;
use crate::partition::set::shard_of;
use crate::store::lease::Holder;
use crate::store::list::ListCursor;

/// The member group as read: each member's weight, and the group's fingerprint (every live
/// slot's number, fence and owner), which changes whenever a member joins, leaves or renews a
/// slot under a new lease.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Members {
    pub(crate) weights: BTreeMap<Arc<str>, u32>,
    pub(crate) fingerprint: Vec<(u32, u64, String)>,
}

/// What separates a node id from its weight in a member slot's owner.
const WEIGHT_MARK: char = '#';

/// The owner a member records in its member slot: its node id, then `#` and its weight — left
/// out for weight 1 unless the node id itself reads as carrying a weight (so `node-a` is
/// `node-a` of weight 1, `node-a#3` is `node-a` of weight 3, and a node id `n#2` of weight 1 is
/// written `n#2#1`). [`parse_member`] reads every such owner back as it was written.
pub(crate) fn member_owner(node: &str, weight: u32) -> String {
    if weight == 1 && parse_member(node) == (node, 1) {
        node.to_owned()
    } else {
        format!("{node}{WEIGHT_MARK}{weight}")
    }
}

/// The node id and weight a member slot's owner records (see [`member_owner`]): a suffix `#w`,
/// `w` a weight written without a sign or leading zero, from 1 to
/// [`MAX_PARTITION_WEIGHT`](crate::limits::MAX_PARTITION_WEIGHT), is the weight; any other
/// owner is a node id of weight 1.
pub(crate) fn parse_member(owner: &str) -> (&str, u32) {
    let Some((node, weight)) = owner.rsplit_once(WEIGHT_MARK) else {
        return (owner, 1);
    };
    let canonical = !node.is_empty()
        && !weight.is_empty()
        && !weight.starts_with('0')
        && weight.bytes().all(|b| b.is_ascii_digit());
    match weight.parse::<u32>() {
        Ok(w) if canonical && (1..=crate::limits::MAX_PARTITION_WEIGHT).contains(&w) => (node, w),
        _ => (owner, 1),
    }
}

/// Reads the member group `lock` (its full name, with the tenant's namespace) through
/// [`LeaseStore::holders`](crate::LeaseStore::holders): every live slot, whatever the group's
/// size, in one read where the store can.
///
/// **A node id counts once**, however many live slots name it: a node restarted with the same
/// node id (a stable pod name) takes a fresh slot while its old process's slot is still live,
/// and a member renewing its membership under a new lease (the nudge) holds a fresh slot beside
/// the old one for a moment. The weight that counts is the one in the newest of its slots (the
/// latest `acquired_at`; on a tie, the larger weight): a restarted process carries the node's
/// configuration as it is now, so a node restarted with another weight counts with the new one
/// at once, and its old slot running out later changes nothing.
pub(crate) async fn members(elector: &Elector, lock: &LockName) -> Result<Members> {
    let holders = elector
        .store()
        .holders(lock)
        .await
        .map_err(|e| crate::Error::Store {
            lock: lock.to_string(),
            source: e,
        })?;
    Ok(count_members(holders))
}

/// The member group from its live slots: see [`members`].
pub(crate) fn count_members(holders: Vec<Holder>) -> Members {
    let mut newest: BTreeMap<Arc<str>, (SystemTime, u32)> = BTreeMap::new();
    let mut fingerprint = Vec::with_capacity(holders.len());
    for h in holders {
        let (node, weight) = parse_member(&h.owner);
        let seen = (h.acquired_at, weight);
        newest
            .entry(Arc::from(node))
            .and_modify(|kept| *kept = (*kept).max(seen))
            .or_insert(seen);
        fingerprint.push((h.slot, h.fence, h.owner));
    }
    fingerprint.sort_unstable();
    Members {
        weights: newest.into_iter().map(|(node, (_, w))| (node, w)).collect(),
        fingerprint,
    }
}

/// Where the shards of one set are: their (scoped) name prefix, their count, and their
/// (scoped) lock names, in shard order.
pub(crate) struct ShardNames<'a> {
    pub(crate) scoped: &'a str,
    pub(crate) shards: u32,
    pub(crate) locks: &'a [LockName],
}

/// The owner of every shard. On a store that [reads in
/// batches](crate::LeaseStore::reads_in_batches), one [`state_many`](crate::LeaseStore::state_many)
/// of the shard locks: a few requests, however many other locks the store holds. Elsewhere one
/// listing of the store's live locks where the store lists them (pages of at most
/// [`MAX_LIST_LOCKS`](crate::limits::MAX_LIST_LOCKS)), else one state read per shard.
pub(crate) async fn owners(
    shard_elector: &Elector,
    names: &ShardNames<'_>,
) -> Result<Vec<Option<Arc<str>>>> {
    let store = shard_elector.store();
    if store.reads_in_batches() {
        return owners_by_state(shard_elector, names).await;
    }
    let mut owners: Vec<Option<Arc<str>>> = vec![None; names.shards as usize];
    let mut after: Option<ListCursor> = None;
    loop {
        let page = match store.list_locks(after.as_ref()).await {
            Ok(page) => page,
            Err(e) if e.unsupported().is_some() && after.is_none() => {
                return owners_by_state(shard_elector, names).await;
            }
            Err(e) => return Err(shards_error(names, e)),
        };
        for listed in page.locks {
            if let Some(k) = shard_of(names.scoped, names.shards, listed.lock.as_str())
                && let Some(h) = listed.holders.first()
            {
                owners[k as usize] = Some(Arc::from(h.owner.as_str()));
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(owners),
        }
    }
}

/// The owner of every shard, from the state of each shard's lock (one read per shard, or a few
/// on a store that reads in batches).
async fn owners_by_state(
    shard_elector: &Elector,
    names: &ShardNames<'_>,
) -> Result<Vec<Option<Arc<str>>>> {
    let states = shard_elector
        .store()
        .state_many(names.locks, 1)
        .await
        .map_err(|e| shards_error(names, e))?;
    Ok(states
        .into_iter()
        .map(|state| state.holders.first().map(|h| Arc::from(h.owner.as_str())))
        .collect())
}

fn shards_error(names: &ShardNames<'_>, source: crate::store::StoreError) -> crate::Error {
    crate::Error::Store {
        lock: format!("{}.shard-*", names.scoped),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::limits::MAX_PARTITION_WEIGHT;

    #[test]
    fn a_member_slots_owner_reads_back_as_the_node_and_weight_written() {
        let nodes = [
            "a", "node-a", "n#2", "n#", "#", "#3", "n#02", "n#65", "n#+1", "n#1", "n#64#1", "a#b",
        ];
        for node in nodes {
            for weight in 1..=MAX_PARTITION_WEIGHT {
                let owner = member_owner(node, weight);
                assert_eq!(parse_member(&owner), (node, weight), "{node:?} {weight}");
            }
        }
        // Weight 1 is the node id alone, unless the id itself reads as carrying a weight.
        assert_eq!(member_owner("node-a", 1), "node-a");
        assert_eq!(member_owner("node-a", 3), "node-a#3");
        assert_eq!(member_owner("n#2", 1), "n#2#1");
        assert_eq!(member_owner("n#02", 1), "n#02");
        assert_eq!(parse_member("n#65"), ("n#65", 1));
        assert_eq!(parse_member("#3"), ("#3", 1));
    }

    fn slot(slot: u32, owner: &str, acquired_s: u64) -> Holder {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(acquired_s);
        Holder {
            slot,
            owner: owner.to_owned(),
            fence: u64::from(slot) + 1,
            acquired_at: at,
            expires_at: at + Duration::from_secs(15),
        }
    }

    fn weights(of: &Members) -> Vec<(&str, u32)> {
        of.weights.iter().map(|(n, w)| (&**n, *w)).collect()
    }

    #[test]
    fn a_node_id_counts_once_with_its_newest_slots_weight() {
        // A restart with the same node id: the old process's slot is still live.
        let read = count_members(vec![slot(0, "a", 10), slot(1, "b", 10), slot(2, "b", 20)]);
        assert_eq!(weights(&read), [("a", 1), ("b", 1)]);
        assert_eq!(
            read.fingerprint.len(),
            3,
            "every live slot is in the fingerprint"
        );
        // Restarted with another weight: the newest slot's counts, whichever slot it is in.
        let up = count_members(vec![slot(0, "b#3", 20), slot(1, "b", 10), slot(2, "a", 5)]);
        assert_eq!(weights(&up), [("a", 1), ("b", 3)]);
        let down = count_members(vec![slot(0, "b#3", 10), slot(1, "b", 20)]);
        assert_eq!(weights(&down), [("b", 1)]);
        // Granted at the same instant: the larger weight, whatever the order read.
        let tie = count_members(vec![slot(0, "b#2", 10), slot(1, "b#5", 10)]);
        let tie_back = count_members(vec![slot(1, "b#5", 10), slot(0, "b#2", 10)]);
        assert_eq!(weights(&tie), [("b", 5)]);
        assert_eq!(tie, tie_back);
        assert_eq!(count_members(Vec::new()), Members::default());
    }
}
