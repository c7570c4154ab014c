//! Reading a partition set from the store: its members (one read of the member group) and the
//! owners of its shards (a batched read of the shard locks on a store that reads in batches,
//! else a listing of the store's live locks, or one state read per shard on a store that
//! cannot list).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::elect::elector::Elector;
use crate::error::Result;
use crate::name::LockName;
use crate::partition::set::shard_of;
use crate::store::list::ListCursor;

/// The member group as read: each member's weight, and the group's fingerprint (every live
/// slot's number, fence and owner), which changes whenever a member joins, leaves or renews a
/// slot under a new lease.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Members {
    pub(crate) weights: BTreeMap<Arc<str>, u32>,
    pub(crate) fingerprint: Vec<(u32, u64, String)>,
}

/// Reads the member group `lock` (its full name, with the tenant's namespace) through
/// [`LeaseStore::holders`](crate::LeaseStore::holders): every live slot, whatever the group's
/// size, in one read where the store can.
pub(crate) async fn members(elector: &Elector, lock: &LockName) -> Result<Members> {
    let holders = elector
        .store()
        .holders(lock)
        .await
        .map_err(|e| crate::Error::Store {
            lock: lock.to_string(),
            source: e,
        })?;
    let mut read = Members::default();
    for h in holders {
        *read.weights.entry(Arc::from(h.owner.as_str())).or_insert(0) += 1;
        read.fingerprint.push((h.slot, h.fence, h.owner));
    }
    read.fingerprint.sort_unstable();
    Ok(read)
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
