//! What a member hears about its own shards: `ShardEvent`, and the `ShardLease` an acquired
//! shard comes with.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::events::LostReason;
use crate::hold::guard::LeaderContext;

/// A change in the shards this node owns, in the order it happened.
#[derive(Debug)]
#[non_exhaustive]
pub enum ShardEvent {
    /// This node now owns the shard: the lease (its own fence, its own
    /// [`lost`](LeaderContext::lost)) and the signal to stop its work
    /// ([`ShardLease::ending`]). Keep the [`ShardLease`] for as long as the shard's work runs:
    /// a hand-over waits for it to be dropped (at most the set's
    /// [`drain`](crate::partition::PartitionSetBuilder::drain)).
    Acquired(u32, ShardLease),
    /// This node gave the shard up (the assignment moved it to another member, or this node
    /// left) and the store has released its lease: another member may take it now.
    Released(u32),
    /// The shard's lease was lost (not renewed before its local deadline, or the store no
    /// longer holds it for this node): its work must already have stopped, since another member
    /// may take it once the store's lease ends.
    Lost(u32, LostReason),
}

impl ShardEvent {
    /// The shard the event is about.
    ///
    /// ```
    /// use leasehold::partition::ShardEvent;
    /// assert_eq!(ShardEvent::Released(7).shard(), 7);
    /// ```
    pub fn shard(&self) -> u32 {
        match self {
            Self::Acquired(shard, _) | Self::Released(shard) | Self::Lost(shard, _) => *shard,
        }
    }
}

/// Why a shard's work must end ([`ShardLease::ending`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShardEnd {
    /// The shard is being handed over (the assignment moved it, or this node is leaving): its
    /// lease is still held, and is released once the [`ShardLease`] is dropped or the drain
    /// time has passed.
    HandOver,
    /// The lease was lost.
    Lost(LostReason),
}

/// One shard this node owns: its lease and the signal to stop its work.
///
/// It dereferences to the shard's [`LeaderContext`] (fence, lease, `lost()`, `extend`). Drop
/// it when the shard's work has ended: a hand-over releases the lease at that moment (or when
/// the set's drain time runs out, whichever comes first), so the next owner starts after this
/// one stopped. Work that outlives the drain runs without the lease: the context does not
/// report a release as a loss, but [`is_ending`](Self::is_ending) stays true, and the next
/// owner's fence is higher.
pub struct ShardLease {
    pub(crate) shard: u32,
    pub(crate) ctx: LeaderContext,
    pub(crate) ending: CancellationToken,
    /// Dropped with the lease: tells the member the work ended.
    pub(crate) _working: oneshot::Sender<()>,
}

impl std::fmt::Debug for ShardLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardLease")
            .field("shard", &self.shard)
            .field("fence", &self.ctx.fence())
            .field("ending", &self.ending.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ShardLease {
    /// The shard.
    pub fn shard(&self) -> u32 {
        self.shard
    }

    /// The shard's lease context (cheap to clone; hand it to the tasks doing the work).
    pub fn context(&self) -> LeaderContext {
        self.ctx.clone()
    }

    /// True once the work must end: a hand-over began or the lease was lost.
    pub fn is_ending(&self) -> bool {
        self.ending.is_cancelled() || self.ctx.is_lost()
    }

    /// Resolves when the shard's work must end: when a hand-over begins (the lease is still
    /// held, until this `ShardLease` is dropped or the drain time runs out) or when the lease is
    /// lost.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only watches; call it again to keep watching.
    pub async fn ending(&self) -> ShardEnd {
        tokio::select! {
            () = self.ending.cancelled() => ShardEnd::HandOver,
            reason = self.ctx.lost() => ShardEnd::Lost(reason),
        }
    }
}

impl std::ops::Deref for ShardLease {
    type Target = LeaderContext;

    fn deref(&self) -> &LeaderContext {
        &self.ctx
    }
}
