//! The blocking form of a partition set's membership.

use std::sync::Arc;
use std::time::Duration;

use crate::blocking::{Elector, Private};
use crate::error::Result;
use crate::hold::guard::LeaderContext;
use crate::partition::{Assignment, PartitionSet, ShardEvent};

impl Elector {
    /// Joins `set` as a member (see [`PartitionSet::join`]); the member runs on this elector's
    /// private runtime, and its events are read on the calling thread.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use leasehold::{blocking, MemoryStore, partition::{PartitionSet, ShardEvent}};
    ///
    /// let elector = blocking::Elector::new(Arc::new(MemoryStore::new()))?;
    /// let set = PartitionSet::builder("regions", 3).build()?;
    /// let mut partition = elector.join_partition(&set)?;
    /// let mut leases = Vec::new();
    /// while leases.len() < 3 {
    ///     match partition.next_event_timeout(Duration::from_secs(5)) {
    ///         Some(ShardEvent::Acquired(_, lease)) => leases.push(lease),
    ///         Some(_) => {}
    ///         None => panic!("no shard within 5 s"),
    ///     }
    /// }
    /// assert_eq!(partition.owned(), [0, 1, 2]);
    /// drop(leases); // the work on each shard has ended
    /// partition.leave()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`PartitionSet::join`].
    pub fn join_partition(&self, set: &PartitionSet) -> Result<Partition> {
        let inner = self.runtime.block_on(set.join(&self.inner))?;
        Ok(Partition {
            inner: Some(inner),
            runtime: Arc::clone(&self.runtime),
        })
    }
}

/// A blocking [`Partition`](crate::partition::Partition): the same membership, its events read
/// on the calling thread. Dropping it leaves the set (in the background, waited for when the
/// elector's runtime goes).
///
/// A shard's work runs on the caller's threads: check
/// [`ShardLease::is_ending`](crate::partition::ShardLease::is_ending) between steps and drop the
/// lease when the work stopped, so that a hand-over can go on.
#[must_use = "dropping the partition leaves the set"]
pub struct Partition {
    inner: Option<crate::partition::Partition>,
    runtime: Arc<Private>,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Partition").field(&self.inner).finish()
    }
}

impl Partition {
    fn inner(&self) -> Option<&crate::partition::Partition> {
        self.inner.as_ref()
    }

    /// The next change in this node's shards, waiting for it; `None` once the member stopped.
    pub fn next_event(&mut self) -> Option<ShardEvent> {
        let inner = self.inner.as_mut()?;
        self.runtime.block_on(inner.next())
    }

    /// The next change, waiting at most `timeout`; `None` if none came.
    pub fn next_event_timeout(&mut self, timeout: Duration) -> Option<ShardEvent> {
        let inner = self.inner.as_mut()?;
        self.runtime
            .block_on(async { tokio::time::timeout(timeout, inner.next()).await })
            .ok()
            .flatten()
    }

    /// The next change if one is waiting, without waiting.
    pub fn try_next_event(&mut self) -> Option<ShardEvent> {
        self.inner.as_mut()?.try_next()
    }

    /// The shards this node owns now.
    pub fn owned(&self) -> Vec<u32> {
        self.inner()
            .map(crate::partition::Partition::owned)
            .unwrap_or_default()
    }

    /// The lease context of `shard`, if this node owns it now.
    pub fn context(&self, shard: u32) -> Option<LeaderContext> {
        self.inner()?.context(shard)
    }

    /// The assignment as this member last read and computed it.
    pub fn assignment(&self) -> Arc<Assignment> {
        self.inner()
            .map(crate::partition::Partition::assignment)
            .unwrap_or_default()
    }

    /// Leaves the set, handing every shard over (see
    /// [`Partition::leave`](crate::partition::Partition::leave)).
    ///
    /// # Errors
    ///
    /// The first release the store failed.
    pub fn leave(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.runtime.block_on(inner.leave()),
            None => Ok(()),
        }
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // Inside the runtime, so that the leave is spawned on it (and waited for when the
            // runtime goes).
            let _entered = self.runtime.enter();
            drop(inner);
        }
    }
}
