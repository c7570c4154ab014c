//! `ShardJobs`: a periodic job that runs once per shard this node owns in a partition set, the
//! partition equivalent of [`LeaderJobs`](crate::LeaderJobs).

use std::collections::BTreeSet;
use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use leasehold::partition::{Assignment, Partition, PartitionSet, ShardEnd, ShardEvent, ShardLease};
use leasehold::{CancellationToken, Elector, LeaderContext};
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{info, warn};

use crate::error::Error;

type Action = Arc<
    dyn Fn(u32, LeaderContext) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// A periodic job run once per shard this node owns in a [`PartitionSet`]: joined with the app,
/// left on shutdown.
///
/// Each owned shard runs `action(shard, ctx)` at once when it is acquired, then every `period`
/// after a run ends, for as long as the shard is owned; `ctx` is the shard's own lease (its fence
/// is the shard's). An error is logged at WARN and the next period runs. When the shard is
/// handed over (the set rebalanced, or this node leaves) a running action may finish, within the
/// set's drain (then it is dropped); when the shard's lease is lost the running action is
/// dropped at once. Cancelling the shutdown token leaves the set: every shard is handed over at
/// once, so the other members take them without waiting for leases to expire.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::{sync::Arc, time::Duration};
/// use leasehold::{CancellationToken, Elector, MemoryStore, partition::PartitionSet};
/// use leasehold_axum::ShardJobs;
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let set = PartitionSet::builder("tenants", 8).build()?;
/// let shutdown = CancellationToken::new();
/// let jobs = ShardJobs::every(set, Duration::from_secs(30), |shard, ctx| async move {
///     tracing::info!(shard, fence = ctx.fence(), "syncing the tenants of this shard");
///     Ok::<_, String>(())
/// })
/// .start(elector, shutdown.clone())
/// .await?;
/// let status = jobs.wait_settled().await;
/// assert_eq!(status.owned, (0..8).collect::<Vec<_>>()); // alone in the set, it owns all 8
/// jobs.shutdown().await; // hands every shard over
/// # Ok(()) }
/// ```
#[must_use = "a shard job does nothing until started"]
pub struct ShardJobs {
    set: PartitionSet,
    period: Duration,
    action: Action,
}

impl std::fmt::Debug for ShardJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardJobs")
            .field("set", &self.set)
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl ShardJobs {
    /// A job that runs `action` for each owned shard of `set`, every `period` (from the end of
    /// one run to the start of the next).
    pub fn every<F, Fut, E>(set: PartitionSet, period: Duration, action: F) -> Self
    where
        F: Fn(u32, LeaderContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display + 'static,
    {
        let action: Action = Arc::new(move |shard, ctx| {
            let run = action(shard, ctx);
            Box::pin(async move { run.await.map_err(|e| e.to_string()) })
        });
        Self {
            set,
            period,
            action,
        }
    }

    /// Joins the set through `elector` and starts the job; cancelling `shutdown` leaves the set.
    ///
    /// # Errors
    ///
    /// [`Error::Leasehold`] when the store fails, or the set's names do not fit the elector's
    /// tenant, or the set's member group is full ([`Partition`] joining).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it answers releases any member slot taken in the background;
    /// nothing runs.
    pub async fn start(
        self,
        elector: Elector,
        shutdown: CancellationToken,
    ) -> Result<RunningShards, Error> {
        let partition = self.set.join(&elector).await?;
        let node = partition.node_id().to_owned();
        let view = partition.watch();
        let owned = Arc::new(Mutex::new(BTreeSet::new()));
        let drain = self
            .set
            .drain()
            .unwrap_or_else(|| self.set.lease().unwrap_or(elector.options().lease()) / 3);
        info!(set = %self.set.name(), shards = self.set.shards(), node = %node,
            "shard job started");
        let task = tokio::spawn(drive(
            partition,
            shutdown.clone(),
            Shared {
                action: self.action,
                period: self.period,
                drain,
                owned: Arc::clone(&owned),
            },
        ));
        Ok(RunningShards {
            view: ShardsView {
                set: self.set,
                node,
                view,
                owned,
            },
            shutdown,
            task,
        })
    }
}

/// What every shard's task shares.
#[derive(Clone)]
struct Shared {
    action: Action,
    period: Duration,
    drain: Duration,
    owned: Arc<Mutex<BTreeSet<u32>>>,
}

impl Shared {
    fn owned(&self) -> std::sync::MutexGuard<'_, BTreeSet<u32>> {
        self.owned.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts a task per acquired shard until shutdown, then leaves the set.
async fn drive(mut partition: Partition, shutdown: CancellationToken, shared: Shared) {
    let mut work = JoinSet::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            event = partition.next() => match event {
                Some(ShardEvent::Acquired(shard, lease)) => {
                    work.spawn(run_shard(lease, shared.clone()));
                    info!(shard, "shard job: shard acquired");
                }
                Some(ShardEvent::Lost(shard, reason)) => {
                    warn!(shard, %reason, "shard job: shard lost");
                }
                Some(_) => {}
                None => break,
            },
            Some(_) = work.join_next() => {}
        }
    }
    let (left, ()) = tokio::join!(partition.leave(), async {
        while work.join_next().await.is_some() {}
    });
    if let Err(e) = left {
        warn!(error = %e, "shard job: leaving the set failed; unreleased shards end at their expiry");
    }
}

/// Runs the action for one shard until the shard's work must end.
async fn run_shard(lease: ShardLease, shared: Shared) {
    let shard = lease.shard();
    shared.owned().insert(shard);
    while !lease.is_ending() {
        let run = (shared.action)(shard, lease.context());
        tokio::pin!(run);
        let outcome = tokio::select! {
            outcome = &mut run => Some(outcome),
            end = lease.ending() => match end {
                // Within the drain the lease is still held: let the run finish.
                ShardEnd::HandOver => tokio::time::timeout(shared.drain, &mut run).await.ok(),
                _ => None,
            },
        };
        match outcome {
            Some(Err(e)) => warn!(shard, error = %e, "shard job failed"),
            Some(Ok(())) => {}
            None => warn!(shard, "shard job stopped: its shard's lease ended"),
        }
        tokio::select! {
            () = tokio::time::sleep(shared.period) => {}
            _ = lease.ending() => break,
        }
    }
    shared.owned().remove(&shard);
    drop(lease);
}

/// A started [`ShardJobs`].
#[must_use = "dropping it does not stop the job: keep it, and await `stopped()` or `shutdown()`"]
#[derive(Debug)]
pub struct RunningShards {
    view: ShardsView,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

/// What a status report needs of a running shard job: the set, this node, the assignment as
/// last read and the shards the job runs for. Cloned into a [`Management`](crate::Management)
/// report by [`Management::shards`](crate::Management::shards).
#[derive(Debug, Clone)]
pub(crate) struct ShardsView {
    set: PartitionSet,
    node: String,
    view: watch::Receiver<Arc<Assignment>>,
    owned: Arc<Mutex<BTreeSet<u32>>>,
}

impl ShardsView {
    fn owned(&self) -> Vec<u32> {
        self.owned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect()
    }

    fn assignment(&self) -> Arc<Assignment> {
        Arc::clone(&self.view.borrow())
    }

    /// The job's state now.
    pub(crate) fn status(&self) -> ShardJobsStatus {
        let view = self.assignment();
        ShardJobsStatus {
            set: self.set.name().to_string(),
            node: self.node.clone(),
            shards: self.set.shards(),
            owned: self.owned(),
            members: view.members().iter().map(|m| m.node.to_string()).collect(),
            settled: view.is_settled(),
        }
    }
}

/// The state of a [`ShardJobs`] on this node, serializable for a status route.
///
/// ```
/// # let status = leasehold_axum::ShardJobsStatus {
/// #     set: "tenants".into(), node: "web-1".into(), shards: 4, owned: vec![0, 2],
/// #     members: vec!["web-1".into(), "web-2".into()], settled: true };
/// assert_eq!(
///     serde_json::to_string(&status)?,
///     r#"{"set":"tenants","node":"web-1","shards":4,"owned":[0,2],"members":["web-1","web-2"],"settled":true}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardJobsStatus {
    /// The partition set's name.
    pub set: String,
    /// This node's id.
    pub node: String,
    /// The set's shard count.
    pub shards: u32,
    /// The shards this node runs the job for now, in order.
    pub owned: Vec<u32>,
    /// The live members, as this node last read them.
    pub members: Vec<String>,
    /// True when this node last saw every shard with the member the assignment gives it to.
    pub settled: bool,
}

impl RunningShards {
    /// The shards this node runs the job for now, in order.
    pub fn owned(&self) -> Vec<u32> {
        self.view.owned()
    }

    /// The whole set's assignment as this node last read it.
    pub fn assignment(&self) -> Arc<Assignment> {
        self.view.assignment()
    }

    /// This node's view, for a status route (or add the job to a
    /// [`Management`](crate::Management) report with
    /// [`Management::shards`](crate::Management::shards)).
    pub fn status(&self) -> ShardJobsStatus {
        self.view.status()
    }

    /// The view a [`Management`](crate::Management) report keeps.
    pub(crate) fn view(&self) -> ShardsView {
        self.view.clone()
    }

    /// Waits until this node sees the set settled and runs the job for exactly the shards the
    /// assignment gives it; its status then.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only watches.
    pub async fn wait_settled(&self) -> ShardJobsStatus {
        let mut view = self.view.view.clone();
        loop {
            let status = self.status();
            let mine = self.assignment().owned_by(&self.view.node);
            if status.settled && status.owned == mine {
                return status;
            }
            tokio::select! {
                changed = view.changed() => if changed.is_err() { return status },
                () = tokio::time::sleep(SETTLE_POLL) => {}
            }
        }
    }

    /// A future that resolves when shutdown starts.
    pub fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        self.shutdown.clone().cancelled_owned()
    }

    /// Resolves once the set is left (after the token is cancelled): every shard's run has
    /// ended and its lease is released.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops waiting; the job goes on in the background.
    pub async fn stopped(self) {
        if let Err(e) = self.task.await {
            warn!(error = %e, "shard job ended abnormally");
        }
        info!(set = %self.view.set.name(), "shard job stopped");
    }

    /// Cancels the token and waits for [`stopped`](Self::stopped).
    ///
    /// # Cancel safety
    ///
    /// As for [`stopped`](Self::stopped).
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        self.stopped().await;
    }
}

/// How often [`RunningShards::wait_settled`] looks again at the shards the job runs for (they
/// start and end in tasks of their own, after the view changed).
const SETTLE_POLL: Duration = Duration::from_millis(50);
