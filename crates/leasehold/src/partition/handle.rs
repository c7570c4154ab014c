//! Joining a set, and `Partition`: the handle of one membership — its shard events, its view of
//! the assignment, and leaving.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cleanup::Cleanup;
use crate::elect::elector::Elector;
use crate::error::Result;
use crate::hold::guard::LeaderContext;
use crate::hold::watchdog::renewal_period;
use crate::limits::MAX_SLOTS;
use crate::name::LockName;
use crate::outcome::Outcome;
use crate::partition::error::PartitionError;
use crate::partition::event::ShardEvent;
use crate::partition::member::{Member, Mine, Setup};
use crate::partition::read::member_owner;
use crate::partition::set::{PartitionSet, check_derived, members_name, shard_name};
use crate::partition::view::Assignment;

impl PartitionSet {
    /// Joins the set as a member through `elector` (its store, node id and tenant): takes a
    /// member slot that names this node and its weight, then runs a task that takes and hands
    /// over shards as the assignment says, until the returned [`Partition`] leaves or is
    /// dropped.
    ///
    /// The shard leases and member slots use the set's lease (else the elector's), wait 0 and
    /// renewal on: on a store that renews in batches they all renew in the elector's one
    /// heartbeat. Every member must have its own node id
    /// ([`node_id`](crate::ElectionOptionsBuilder::node_id)): two members with one id count
    /// as one, with the weight of the one that joined last. A node restarted with the same
    /// node id while its old process's member slot is still live therefore counts once, with
    /// its new weight.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// use std::sync::Arc;
    /// use leasehold::{Elector, MemoryStore, partition::{PartitionSet, ShardEvent}};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let set = PartitionSet::builder("tenants", 8).build()?;
    /// let mut partition = set.join(&elector).await?;
    /// // Alone in the set, this node gets every shard.
    /// for _ in 0..8 {
    ///     let Some(ShardEvent::Acquired(shard, lease)) = partition.next().await else { panic!() };
    ///     assert_eq!(lease.lock().as_str(), format!("tenants.shard-{shard}"));
    /// }
    /// partition.leave().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Name`](crate::Error::Name) or [`Error::Partition`](crate::Error::Partition)
    /// when the set's derived lock names do not fit the elector's tenant,
    /// [`Error::Partition`](crate::Error::Partition) with [`PartitionError::Full`] when the
    /// member group has no free slot, [`Error::Options`](crate::Error::Options) when the
    /// member slot's owner (the node id, and `#` and the weight unless it is 1) would pass
    /// [`MAX_NODE_ID_LEN`](crate::limits::MAX_NODE_ID_LEN), [`Error::Store`](crate::Error::Store)
    /// when the store fails.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it answers releases any member slot it took (in the
    /// background); no shard is taken before it answers.
    pub async fn join(&self, elector: &Elector) -> Result<Partition> {
        let scoped = elector.lock_name(self.name())?;
        check_derived(self.name().as_str(), scoped.as_str(), self.shards())?;
        let base = elector.options();
        let lease = self.lease().unwrap_or(base.lease());
        let shard_options = base
            .to_builder()
            .lease(lease)
            .wait(Duration::ZERO)
            .min_lease(Duration::ZERO)
            .auto_extend(true)
            .max_leaders(1)
            .fair_turns(false)
            .build()?;
        // The member slot names this node and its weight (see `read::member_owner`).
        let member_options = shard_options
            .to_builder()
            .max_leaders(MAX_SLOTS)
            .node_id(member_owner(base.node_id(), self.weight()))
            .build()?;
        let name = self.name().as_str();
        let shard_locks = (0..self.shards())
            .map(|k| LockName::new(shard_name(name, k)))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let scoped_shard_locks = shard_locks
            .iter()
            .map(|lock| elector.lock_name(lock))
            .collect::<Result<Vec<_>>>()?;
        let member_lock = LockName::new(members_name(name))?;
        let scoped_member_lock = elector.lock_name(&member_lock)?;
        let members = elector.reconfigured(member_options);
        // The member slot before the first shard, so that the others see this member at once.
        let first = match members.try_acquire(&member_lock).await? {
            Outcome::Elected(guard) => vec![guard],
            _ => {
                return Err(PartitionError::Full {
                    name: name.to_owned(),
                }
                .into());
            }
        };
        let period = renewal_period(lease);
        let setup = Setup {
            node: Arc::from(base.node_id()),
            shards: self.shards(),
            period,
            drain: self.drain().unwrap_or(period),
            scoped: scoped.as_str().to_owned(),
            member_lock,
            scoped_member_lock,
            shard_locks,
            scoped_shard_locks,
            members,
            shard_elector: elector.reconfigured(shard_options),
        };
        let (events_tx, events) = mpsc::unbounded_channel();
        let (view_tx, view) = watch::channel(Arc::new(Assignment::default()));
        let mine: Mine = Arc::new(Mutex::new(BTreeMap::new()));
        let stop = CancellationToken::new();
        let member = Member::new(setup, first, events_tx, view_tx, Arc::clone(&mine));
        let task = tokio::spawn(member.run(stop.clone()));
        Ok(Partition {
            set: self.clone(),
            node: Arc::from(base.node_id()),
            events,
            view,
            mine,
            stop,
            task: Some(task),
            cleanup: elector.shared.cleanup.clone(),
        })
    }
}

/// This node's membership of a [`PartitionSet`]: the shards it owns as they come and go, and
/// the whole set's assignment as it last read it.
///
/// It is a [`Stream`](futures::Stream) of [`ShardEvent`]s (also [`next`](Self::next)): each
/// shard this node acquires comes as [`ShardEvent::Acquired`] with its [`ShardLease`] (its own
/// fence and lost signal); a shard handed over comes as [`ShardEvent::Released`] after its
/// lease was released, a shard whose lease was lost as [`ShardEvent::Lost`].
///
/// [`leave`](Self::leave) hands every shard over at once (the others take them without waiting
/// for the leases to expire); dropping the handle does the same in the background
/// ([`Elector::settled`](crate::Elector::settled) waits for it).
///
/// [`ShardLease`]: crate::partition::ShardLease
#[must_use = "dropping the partition leaves the set"]
pub struct Partition {
    set: PartitionSet,
    node: Arc<str>,
    events: mpsc::UnboundedReceiver<ShardEvent>,
    view: watch::Receiver<Arc<Assignment>>,
    mine: Mine,
    stop: CancellationToken,
    task: Option<JoinHandle<Result<()>>>,
    cleanup: Cleanup,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("set", &self.set)
            .field("node", &self.node)
            .field("owned", &self.owned())
            .finish_non_exhaustive()
    }
}

impl Partition {
    /// The set joined.
    pub fn set(&self) -> &PartitionSet {
        &self.set
    }

    /// This member's node id.
    pub fn node_id(&self) -> &str {
        &self.node
    }

    /// The next change in this node's shards; `None` once the member has stopped (it only
    /// stops when the handle leaves, or its runtime shuts down).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an event not yet returned stays for the next call.
    pub async fn next(&mut self) -> Option<ShardEvent> {
        self.events.recv().await
    }

    /// The next change if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<ShardEvent> {
        self.events.try_recv().ok()
    }

    /// The shards this node owns now, in order (a shard being handed over is no longer
    /// counted).
    pub fn owned(&self) -> Vec<u32> {
        self.mine().keys().copied().collect()
    }

    /// The lease context of `shard`, if this node owns it now.
    pub fn context(&self, shard: u32) -> Option<LeaderContext> {
        self.mine().get(&shard).cloned()
    }

    /// The assignment as this member last read and computed it.
    pub fn assignment(&self) -> Arc<Assignment> {
        Arc::clone(&self.view.borrow())
    }

    /// A receiver that sees each new view of the assignment.
    pub fn watch(&self) -> watch::Receiver<Arc<Assignment>> {
        self.view.clone()
    }

    /// Waits until this member sees the set settled (every shard owned by the member the
    /// assignment gives it to) and returns that view.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only watches.
    pub async fn wait_settled(&mut self) -> Arc<Assignment> {
        let mut view = self.view.clone();
        match view.wait_for(|a| a.is_settled()).await {
            Ok(settled) => Arc::clone(&settled),
            Err(_) => self.assignment(),
        }
    }

    /// Leaves the set: releases this node's member slots (so the others stop giving it
    /// shards), then hands over every shard at once — each shard's
    /// [`ending`](crate::partition::ShardLease::ending) resolves, and its lease is released
    /// when its [`ShardLease`](crate::partition::ShardLease) is dropped (at most the set's
    /// drain later) — so the other members take them without waiting for the leases to
    /// expire. The events of the hand-over are no longer delivered.
    ///
    /// # Errors
    ///
    /// The first release the store failed ([`Error::Store`](crate::Error::Store)); such a
    /// lease is retried in the background or ends at its expiry.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future lets the leave go on in the background, as dropping the handle
    /// does.
    pub async fn leave(mut self) -> Result<()> {
        self.stop.cancel();
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(left) => left,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Ok(()),
        }
    }

    fn mine(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, LeaderContext>> {
        self.mine.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl futures::Stream for Partition {
    type Item = ShardEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ShardEvent>> {
        self.events.poll_recv(cx)
    }
}

impl Drop for Partition {
    /// Leaves in the background: the member task releases the member slots and hands over
    /// every shard, counted among the elector's cleanup tasks.
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            self.cleanup.spawn_on(&runtime, async move {
                let _ = task.await;
            });
        }
    }
}
