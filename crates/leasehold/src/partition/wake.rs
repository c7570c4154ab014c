//! What wakes a member before its next period: the release signals of the member group (a
//! member leaving frees its slot) and of each shard the member is to take while another member
//! still holds it (that member's hand-over ends with a release). On a store whose signals reach
//! every client, a graceful leave and the last step of a join then take a round trip instead of
//! up to a period; where a store has no signal, or misses one, the period still comes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::name::LockName;
use crate::store::contract::LeaseStore;
use crate::store::signal::ReleaseSignal;

/// The signals a member listens to between periods.
#[derive(Default)]
pub(crate) struct Wake {
    group: Option<ReleaseSignal>,
    /// Per shard awaited: its lock's release signal.
    shards: BTreeMap<u32, ReleaseSignal>,
}

impl Wake {
    /// Listens to the member group's releases (`group`, the name in the store), if `store`
    /// signals them.
    pub(crate) fn new(store: &Arc<dyn LeaseStore>, group: &LockName) -> Self {
        Self {
            group: store.release_signal(group),
            shards: BTreeMap::new(),
        }
    }

    /// Listens to the releases of exactly the shards in `awaited` (`locks[s]` naming shard
    /// `s` in the store): a signal kept from before still reports a release it saw meanwhile.
    pub(crate) fn await_shards(
        &mut self,
        store: &Arc<dyn LeaseStore>,
        locks: &[LockName],
        awaited: &BTreeSet<u32>,
    ) {
        self.shards.retain(|s, _| awaited.contains(s));
        for &s in awaited {
            if self.shards.contains_key(&s) {
                continue;
            }
            if let Some(signal) = locks
                .get(s as usize)
                .and_then(|lock| store.release_signal(lock))
            {
                self.shards.insert(s, signal);
            }
        }
    }

    /// Resolves at the next release of the member group or of an awaited shard; never when
    /// there is nothing to listen to.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a release seen while no call was waiting is reported by the next call.
    pub(crate) async fn released(&mut self) {
        let waits: Vec<_> = self
            .group
            .iter_mut()
            .chain(self.shards.values_mut())
            .map(|signal| Box::pin(signal.released()))
            .collect();
        if waits.is_empty() {
            std::future::pending::<()>().await;
        }
        futures::future::select_all(waits).await;
    }
}
