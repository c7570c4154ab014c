//! Reading a partition set from the store: its members (one read of the member group) and the
//! owners of its shards (a listing of the store's live locks, or one state read per shard on a
//! store that cannot list).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;

use crate::elect::elector::Elector;
use crate::error::Result;
use crate::name::LockName;
use crate::partition::set::shard_of;
use crate::store::list::ListCursor;

/// How many shard states are read at once on a store that cannot list its locks.
const STATE_READS_AT_ONCE: usize = 16;

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
/// (unscoped) lock names for the per-shard fallback.
pub(crate) struct ShardNames<'a> {
    pub(crate) scoped: &'a str,
    pub(crate) shards: u32,
    pub(crate) locks: &'a [LockName],
}

/// The owner of every shard: one listing of the store's live locks where the store lists them
/// (pages of at most [`MAX_LIST_LOCKS`](crate::limits::MAX_LIST_LOCKS)), else one state read per
/// shard through `shard_elector`.
pub(crate) async fn owners(
    shard_elector: &Elector,
    names: &ShardNames<'_>,
) -> Result<Vec<Option<Arc<str>>>> {
    let store = shard_elector.store();
    let mut owners: Vec<Option<Arc<str>>> = vec![None; names.shards as usize];
    let mut after: Option<ListCursor> = None;
    loop {
        let page = match store.list_locks(after.as_ref()).await {
            Ok(page) => page,
            Err(e) if e.unsupported().is_some() && after.is_none() => {
                return owners_one_by_one(shard_elector, names).await;
            }
            Err(e) => {
                return Err(crate::Error::Store {
                    lock: format!("{}.shard-*", names.scoped),
                    source: e,
                });
            }
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

async fn owners_one_by_one(
    shard_elector: &Elector,
    names: &ShardNames<'_>,
) -> Result<Vec<Option<Arc<str>>>> {
    let reads: Vec<_> = names
        .locks
        .iter()
        .map(|lock| {
            let (elector, lock) = (shard_elector.clone(), lock.clone());
            async move {
                let state = elector.state(lock).await?;
                Ok(state.holders.first().map(|h| Arc::from(h.owner.as_str())))
            }
        })
        .collect();
    let read: Vec<Result<Option<Arc<str>>>> = futures::stream::iter(reads)
        .buffered(STATE_READS_AT_ONCE)
        .collect()
        .await;
    read.into_iter().collect()
}
