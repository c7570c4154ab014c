//! Watching the command under the lease: forwarding signals, stopping it (and everything it
//! started) before the store can grant the lock to anyone else, and holding the lock while what
//! it left behind still runs. The rule of when to stop is in [`stopping`](super::stopping).
//! Under `--shards` one supervision runs per owned shard, and a hand-over of the shard stops
//! the command gracefully.

use std::process::ExitStatus;
use std::time::Duration;

use leasehold::partition::{ShardEnd, ShardLease};
use leasehold::{Event, LeaderContext, LockName, LostReason};
use nix::sys::signal::Signal;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};

use super::stopping::{kill_at, term_at};
use crate::args::{Leftovers, OnLost, RunArgs};
use crate::child::{Child, Family, Remaining};
use crate::exit::{self, Failure};
use crate::say;
use crate::signals::SignalSource;
use crate::time_text::human;

/// How often what the command left behind is counted while the lock is held for it (processes
/// that are not leasehold's children end without a SIGCHLD to leasehold).
const LEFTOVER_POLL: Duration = Duration::from_millis(100);

/// How the supervised command ended.
#[derive(Debug)]
pub(super) struct Ending {
    pub(super) status: ExitStatus,
    /// True if leasehold stopped the command because the lease was (or was about to be) lost.
    pub(super) killed: bool,
    /// Set if the command ended on its own, and only then was the lease found lost (leasehold
    /// itself was stopped or starved meanwhile, so it could not act on the loss in time).
    pub(super) lost_unseen: Option<LostReason>,
    /// True once a loss (or the stop before one) has been reported, in the one line of
    /// [`say::lost`].
    pub(super) reported: bool,
}

/// Why leasehold is stopping the command's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The lease was lost, or is about to run out without a renewal.
    Lease,
    /// The command exited and `--leftovers kill` stops what it left running.
    Leftovers,
    /// The shard is being handed over (`--shards`): its lease is held until the command stops.
    HandOver,
}

/// A stop under way: SIGTERM was sent at `since`; SIGKILL is due at `kill_at` (`None` once sent).
#[derive(Debug, Clone, Copy)]
struct Stop {
    cause: Cause,
    since: Instant,
    kill_at: Option<Instant>,
}

/// The command, what it started, and the lease it runs under.
pub(super) struct Supervision<'a> {
    pub(super) child: &'a mut Child,
    pub(super) family: &'a mut Family,
    /// The lease the command runs under.
    pub(super) guard: &'a LeaderContext,
    /// Its lock, for messages.
    pub(super) lock: &'a LockName,
    /// Under `--shards`: the shard, whose hand-over stops the command.
    pub(super) shard: Option<&'a ShardLease>,
    pub(super) args: &'a RunArgs,
    /// `--kill-grace`, checked against the lease.
    pub(super) grace: Duration,
}

/// What the watch has seen so far.
#[derive(Debug, Default)]
struct Seen {
    /// The command's status, once it has exited.
    status: Option<ExitStatus>,
    lost: Option<LostReason>,
    lost_unseen: Option<LostReason>,
    stop: Option<Stop>,
    reported: bool,
    leftovers_said: bool,
}

impl Supervision<'_> {
    /// Waits for the command and everything it started while watching the lease and forwarding
    /// signals. A loss is reported here, once, in the one line of [`say::lost`].
    pub(super) async fn watch(
        mut self,
        signals: &mut impl SignalSource,
        events: &mut broadcast::Receiver<Event>,
    ) -> Result<Ending, Failure> {
        let lock = self.lock;
        let shard = self.shard;
        let stops_for_lease = self.args.on_lost == OnLost::Kill;
        let mut seen = Seen::default();
        let mut events_open = true;
        let mut terminal = self.child.terminal_stops();
        let mut hinted = false;
        let mut poll = interval(LEFTOVER_POLL);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let grace = self.grace;
        loop {
            // The lease's local deadline moves at every renewal; a stop is due `grace` before it.
            let term = (stops_for_lease && seen.stop.is_none_or(|s| s.cause != Cause::Lease))
                .then(|| term_at(self.guard.local_deadline(), grace));
            let kill = seen.stop.and_then(|s| s.kill_at);
            let term_due = async move {
                match term {
                    Some(at) => sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let kill_due = async move {
                match kill {
                    Some(at) => sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let handing_over = async move {
                match shard {
                    Some(shard) if shard.ending().await == ShardEnd::HandOver => {}
                    // A loss is seen by the `lost()` branch.
                    _ => std::future::pending().await,
                }
            };
            let running = seen.status.is_none();
            tokio::select! {
                biased;
                status = self.child.wait(), if running => {
                    let status = status.map_err(|e| {
                        Failure::usage(format!("lost track of `{}`: {e}", self.child.name()))
                    })?;
                    if let Some(ending) = self.exited(status, &mut seen).await {
                        return Ok(ending);
                    }
                }
                signal = signals.recv() => {
                    tracing::info!(%signal, "leasehold: forwarding signal to the command");
                    if running {
                        self.child.deliver(signal);
                    } else {
                        self.family.deliver(signal, true);
                    }
                }
                event = events.recv(), if events_open => match event {
                    Ok(Event::RenewalFailing { lock: failing, error, .. })
                        if !seen.reported && failing == *lock => {
                        let then = match self.args.on_lost {
                            OnLost::Kill => format!("retrying; if it is not renewed before what is \
                                left of it is within --kill-grace ({}), {} is stopped",
                                human(grace), self.what(&seen)),
                            OnLost::Continue => format!("retrying until it runs out; {} keeps \
                                running either way (--on-lost continue)", self.what(&seen)),
                        };
                        say::err(&format!(
                            "renewing the lease on lock {lock} is failing ({error}); {then}"
                        ));
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => events_open = false,
                },
                reason = self.guard.lost(), if seen.lost.is_none() => {
                    // Noticed late (leasehold was stopped or starved): the command may have
                    // ended meanwhile, and then this is a loss seen only after it finished.
                    if running && let Ok(Some(status)) = self.child.try_wait() {
                        if let Some(ending) = self.exited(status, &mut seen).await {
                            return Ok(ending);
                        }
                        continue;
                    }
                    seen.lost = Some(reason);
                    if !seen.reported {
                        seen.reported = true;
                        let consequence = if stops_for_lease {
                            self.stop(&mut seen, Cause::Lease)
                        } else {
                            format!("{} keeps running (--on-lost continue) and may overlap with \
                                another holder", self.what(&seen))
                        };
                        say::lost(lock, &reason.to_string(), &consequence);
                    }
                }
                () = term_due => {
                    // Still not renewed: what is left of the lease is within the grace.
                    let deadline = self.guard.local_deadline();
                    if Instant::now() >= term_at(deadline, grace) {
                        let left = deadline.saturating_duration_since(Instant::now());
                        let cause = if self.args.no_auto_extend {
                            format!("it runs out in {} without renewal (--no-auto-extend), \
                                within --kill-grace {}", human(left), human(grace))
                        } else {
                            format!("not renewed in time: it runs out in {}, within --kill-grace \
                                {}", human(left), human(grace))
                        };
                        let consequence = self.stop(&mut seen, Cause::Lease);
                        if !seen.reported {
                            seen.reported = true;
                            say::lost(lock, &cause, &consequence);
                        }
                    }
                }
                () = handing_over, if seen.stop.is_none() => {
                    // Routine when the set rebalances: logged, not said.
                    let stopping = self.stop(&mut seen, Cause::HandOver);
                    tracing::info!(lock = %lock, "leasehold: handing the shard over: {stopping}");
                }
                () = kill_due => {
                    let since = seen.stop.map_or(Duration::ZERO, |s| s.since.elapsed());
                    self.deliver(Signal::SIGKILL, &seen);
                    say::err(&format!("{} still running {} after SIGTERM; sent SIGKILL",
                        self.what(&seen), human(since)));
                    if let Some(stop) = seen.stop.as_mut() {
                        stop.kill_at = None;
                    }
                }
                signal = terminal.next(), if running && !hinted => {
                    hinted = true;
                    say::err(&terminal_stop_hint(self.child.name(), signal));
                }
                () = self.family.sigchld() => {
                    self.family.reap();
                }
                _ = poll.tick(), if !running => {}
            }
            if let Some(status) = seen.status
                && !self.family.remaining().any()
            {
                return Ok(self.ending(status, &seen));
            }
        }
    }

    /// The command exited with `status`: the ending if nothing it started is left, else `None`
    /// (the lock is held for what is left, or what is left is being stopped).
    async fn exited(&mut self, status: ExitStatus, seen: &mut Seen) -> Option<Ending> {
        seen.status = Some(status);
        self.family.main_reaped();
        if seen.lost.is_none() && !seen.reported && self.guard.is_lost() {
            // Known at once: the lease is already marked lost.
            let reason = self.guard.lost().await;
            seen.lost_unseen = Some(reason);
            self.report_unseen(reason, status);
            seen.reported = true;
        }
        let remaining = self.family.remaining();
        if !remaining.any() {
            return Some(self.ending(status, seen));
        }
        if seen.stop.is_some() {
            // Already stopping: what is left gets SIGKILL when due.
            return None;
        }
        if seen.lost_unseen.is_some() && self.args.on_lost == OnLost::Kill {
            self.stop(seen, Cause::Lease);
            return None;
        }
        if !seen.leftovers_said {
            seen.leftovers_said = true;
            say::err(&self.leftovers_line(status, remaining, seen));
        }
        None
    }

    /// The one line when the command exits while processes it started still run; under
    /// `--leftovers kill` it also stops them.
    fn leftovers_line(
        &mut self,
        status: ExitStatus,
        remaining: Remaining,
        seen: &mut Seen,
    ) -> String {
        let head = format!(
            "`{}` exited ({}) but {} it started {} still running",
            self.child.name(),
            exit::describe_status(status),
            remaining.describe(),
            if remaining == Remaining::Counted(1) {
                "is"
            } else {
                "are"
            },
        );
        match self.args.leftovers {
            Leftovers::Wait => format!(
                "{head}; holding lock {} (and renewing it) until they exit; --leftovers kill \
                 stops them instead",
                self.lock
            ),
            Leftovers::Kill => {
                let stopping = self.stop(seen, Cause::Leftovers);
                format!("{head}; {stopping} (--leftovers kill)")
            }
        }
    }

    /// Starts stopping every process of the command: SIGTERM now, SIGKILL after the grace but,
    /// for the lease, never after its local deadline. Returns what is done, for the message.
    fn stop(&mut self, seen: &mut Seen, cause: Cause) -> String {
        let now = Instant::now();
        let bound = (cause == Cause::Lease).then(|| self.guard.local_deadline());
        let kill = kill_at(now, self.grace, bound);
        match seen.stop.as_mut() {
            // Stopping the leftovers already: the lease now bounds when SIGKILL comes.
            Some(stop) => {
                stop.cause = Cause::Lease;
                stop.kill_at = stop.kill_at.map(|at| at.min(kill));
            }
            None => {
                self.deliver(Signal::SIGTERM, seen);
                seen.stop = Some(Stop {
                    cause,
                    since: now,
                    kill_at: Some(kill),
                });
            }
        }
        let what = self.what(seen);
        let line = format!(
            "stopping {what} (SIGTERM, SIGKILL after {} at most)",
            human(self.grace)
        );
        match cause {
            Cause::Lease if self.shard.is_none() => {
                format!("{line}; exit code {}", exit::LEASE_LOST)
            }
            Cause::Lease | Cause::Leftovers | Cause::HandOver => line,
        }
    }

    /// Sends `signal` to the command while it runs (its group) and to every other process it
    /// started that leasehold can see.
    fn deliver(&self, signal: Signal, seen: &Seen) {
        let running = seen.status.is_none();
        if running {
            self.child.deliver(signal);
        }
        self.family.deliver(signal, !running);
    }

    /// What is being watched, for messages: the command, or what it left behind.
    fn what(&self, seen: &Seen) -> String {
        if seen.status.is_none() {
            format!("`{}`", self.child.name())
        } else {
            format!("what `{}` left running", self.child.name())
        }
    }

    /// Reports a loss found only once the command had finished.
    fn report_unseen(&self, reason: LostReason, status: ExitStatus) {
        let outcome = match (self.shard, self.args.on_lost) {
            (Some(_), _) => "the shard's command starts again only where the shard is owned \
                again"
                .to_owned(),
            (None, OnLost::Kill) => format!("exit code {}", exit::LOST_BEFORE_END),
            (None, OnLost::Continue) => "passing its status on (--on-lost continue)".to_owned(),
        };
        let name = self.child.name();
        say::lost(
            self.lock,
            &format!(
                "{reason}; noticed only after `{name}` finished: was leasehold stopped or \
                 starved?"
            ),
            &format!(
                "`{name}` finished ({}) but exclusivity was not guaranteed: it may have \
                 overlapped with another holder; {outcome}",
                exit::describe_status(status),
            ),
        );
    }

    /// The ending, once the command and everything it started are gone.
    fn ending(&self, status: ExitStatus, seen: &Seen) -> Ending {
        Ending {
            status,
            killed: seen.stop.is_some_and(|s| s.cause == Cause::Lease)
                && self.args.on_lost == OnLost::Kill
                && seen.lost_unseen.is_none(),
            lost_unseen: seen.lost_unseen,
            reported: seen.reported,
        }
    }
}

/// The one-time hint when the command, in its own process group, was stopped for using the
/// terminal: without it the run would just hang.
fn terminal_stop_hint(name: &str, signal: Signal) -> String {
    let did = if signal == Signal::SIGTTOU {
        "wrote to or configured the terminal"
    } else {
        "read from the terminal"
    };
    format!(
        "`{name}` is stopped ({signal}): it {did}, which it cannot do from its own process \
         group; run an interactive command with --foreground, or redirect its stdin \
         (e.g. < /dev/null). Still waiting for it: SIGTERM to leasehold ends it and releases \
         the lock"
    )
}
