//! `leasehold run --shards N`: join the partition set named by `--lock`, and run one command per
//! shard this node owns, each supervised as `run` supervises its one command
//! ([`Supervision`]): stopped before its shard's lease can be granted elsewhere, gracefully on
//! a hand-over, at once on a loss.
//!
//! A command that exits on its own while its shard is still owned is started again after a
//! back-off ([`RESTART_FIRST`], doubling up to [`RESTART_MAX`]; back to the first after a run of
//! [`RESTART_RESET`]): a worker per shard is expected to keep working its shard. SIGINT or
//! SIGTERM to leasehold leaves the set: every shard is handed over, its command stopped first.

use std::sync::Arc;
use std::time::Duration;

use leasehold::partition::{PartitionSet, ShardEvent, ShardLease};
use leasehold::{ElectionOptions, Elector, Event, limits::SETTLE_TIMEOUT};
use nix::sys::signal::Signal;
use tokio::sync::broadcast;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::supervise::Supervision;
use crate::args::RunArgs;
use crate::child::{Child, Family};
use crate::exit::{self, Failure};
use crate::say;
use crate::signals::{Forwarded, Signals};
use crate::store::StoreUrl;
use crate::time_text::human;

/// The first wait before a command that exited on its own is started again for its shard.
pub(crate) const RESTART_FIRST: Duration = Duration::from_secs(1);

/// The longest wait before a command is started again: the wait doubles at each quick exit up
/// to this.
pub(crate) const RESTART_MAX: Duration = Duration::from_secs(60);

/// A command that ran at least this long before exiting is started again after
/// [`RESTART_FIRST`]: its exit is not counted as a quick failure.
pub(crate) const RESTART_RESET: Duration = Duration::from_secs(60);

/// How much longer than `--kill-grace` a hand-over waits for the command to be gone before the
/// shard's lease is released anyway (the set's drain is the grace plus this): SIGKILL comes at
/// the grace, and this covers reaping it and what it started.
pub(crate) const HAND_OVER_MARGIN: Duration = Duration::from_secs(1);

/// How many forwarded signals may wait for a slow shard before older ones are dropped.
const FORWARD_CAPACITY: usize = 16;

/// Runs `leasehold run --shards N` until SIGINT or SIGTERM (or a failure that would repeat for
/// every shard, such as a command that cannot be started); the exit code.
pub(super) async fn run(
    args: RunArgs,
    shards: u32,
    url: StoreUrl,
    mut signals: Signals,
    (options, grace): (ElectionOptions, Duration),
) -> Result<u8, Failure> {
    let set = PartitionSet::builder(args.lock.as_str(), shards)
        .lease(options.lease())
        .drain(grace.saturating_add(HAND_OVER_MARGIN))
        .build()
        .map_err(|e| Failure::usage(format!("--lock {} --shards {shards}: {e}", args.lock)))?;
    let interrupted = |signal: Signal| {
        Failure::interrupted(
            signal as i32,
            format!(
                "got {signal} while joining the partition set {}; no command run",
                args.lock
            ),
        )
    };
    let store = tokio::select! {
        opened = url.open_shared(Duration::ZERO) => opened?,
        signal = signals.recv() => return Err(interrupted(signal)),
    };
    let elector = Elector::with_options(store, options);
    let joined = tokio::select! {
        joined = set.join(&elector) => joined,
        signal = signals.recv() => {
            elector.settled_within(SETTLE_TIMEOUT).await;
            return Err(interrupted(signal));
        }
    };
    let mut partition = joined?;
    tracing::info!(set = %args.lock, shards, node = partition.node_id(), "leasehold: joined");
    let args = Arc::new(args);
    let (forward, _) = broadcast::channel::<Signal>(FORWARD_CAPACITY);
    let mut workers: JoinSet<Result<(), Failure>> = JoinSet::new();
    let outcome: Result<u8, Failure> = loop {
        tokio::select! {
            event = partition.next() => match event {
                Some(ShardEvent::Acquired(shard, lease)) => {
                    tracing::info!(set = %args.lock, shard, fence = lease.fence(),
                        "leasehold: shard acquired");
                    let work = Work {
                        args: Arc::clone(&args),
                        shards,
                        grace,
                        signals: Forwarded(forward.subscribe()),
                        events: elector.subscribe(),
                    };
                    workers.spawn(work.run(lease));
                }
                Some(ShardEvent::Released(shard)) => {
                    tracing::info!(set = %args.lock, shard, "leasehold: shard handed over");
                }
                Some(ShardEvent::Lost(shard, reason)) => {
                    tracing::warn!(set = %args.lock, shard, %reason, "leasehold: shard lost");
                }
                Some(_) => {}
                None => break Err(Failure::store(
                    leasehold::ErrorKind::Transient,
                    format!("the member of partition set {} stopped", args.lock),
                )),
            },
            signal = signals.recv() => match signal {
                Signal::SIGINT | Signal::SIGTERM => {
                    say::err(&format!("got {signal}: leaving partition set {}, stopping \
                        every shard's command", args.lock));
                    break Ok(exit::signal_code(signal as i32));
                }
                other => {
                    tracing::info!(signal = %other, "leasehold: forwarding signal to every command");
                    let _ = forward.send(other);
                }
            },
            Some(done) = workers.join_next() => match done {
                Ok(Ok(())) => {}
                Ok(Err(failure)) => break Err(failure),
                Err(e) => break Err(Failure::usage(format!("a shard's supervision failed: {e}"))),
            },
        }
    };
    // Every shard is handed over: each command is stopped (SIGTERM, SIGKILL after the grace)
    // before its lease is released.
    let (left, ()) = tokio::join!(partition.leave(), async {
        while workers.join_next().await.is_some() {}
    });
    if let Err(e) = left {
        say::err(&format!(
            "leaving partition set {}: {e}; the shards not released end at their expiry",
            args.lock
        ));
    }
    elector.settled_within(SETTLE_TIMEOUT).await;
    outcome
}

/// What each shard's supervision needs.
struct Work {
    args: Arc<RunArgs>,
    shards: u32,
    grace: Duration,
    signals: Forwarded,
    events: broadcast::Receiver<Event>,
}

impl Work {
    /// Runs the command for the shard of `lease` until the shard's work must end, starting it
    /// again after a back-off when it exits on its own; then drops the lease (a hand-over
    /// releases it). An error only when the command cannot be started at all.
    async fn run(mut self, lease: ShardLease) -> Result<(), Failure> {
        let shard = lease.shard();
        let lock = lease.lock().clone();
        let env = vec![
            ("LEASEHOLD_LOCK", lock.to_string()),
            ("LEASEHOLD_FENCE", lease.fence().to_string()),
            ("LEASEHOLD_SHARD", shard.to_string()),
            ("LEASEHOLD_SHARDS", self.shards.to_string()),
            ("LEASEHOLD_OWNER", lease.lease().owner),
        ];
        let mut backoff = RESTART_FIRST;
        while !lease.is_ending() {
            let mut family = Family::prepare_own();
            let mut child = Child::spawn(&self.args.command, &env, false)?;
            family.adopt(&child);
            let started = Instant::now();
            let ending = Supervision {
                child: &mut child,
                family: &mut family,
                guard: &lease,
                lock: &lock,
                shard: Some(&lease),
                args: &self.args,
                grace: self.grace,
            }
            .watch(&mut self.signals, &mut self.events)
            .await?;
            if lease.is_ending() {
                break;
            }
            if started.elapsed() >= RESTART_RESET {
                backoff = RESTART_FIRST;
            }
            say::err(&format!(
                "shard {shard} (lock {lock}): `{}` exited ({}); starting it again in {} while \
                 this node owns the shard",
                child.name(),
                exit::describe_status(ending.status),
                human(backoff)
            ));
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = lease.ending() => break,
            }
            backoff = backoff.saturating_mul(2).min(RESTART_MAX);
        }
        drop(lease);
        Ok(())
    }
}
