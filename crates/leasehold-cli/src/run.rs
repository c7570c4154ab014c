//! `leasehold run`: acquire the lock, run the command under the lease, stop it if the lease is
//! lost, forward signals, release.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, Event, LeaderGuard, LeaseStore, LockName, LockState, LostReason,
    OptionsError, Period, PeriodRecord, Release, SETTLE_TIMEOUT,
};
use nix::sys::signal::Signal;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::{Instant, sleep_until, timeout};

use crate::args::{OnLost, RunArgs};
use crate::child::Child;
use crate::exit::{self, Failure};
use crate::say;
use crate::signals::Signals;
use crate::store::StoreUrl;
use crate::time_text::{human, printable, rfc3339, until};

/// The lease when neither `--lease` nor a longer `--min-lease` is given.
const DEFAULT_LEASE: Duration = Duration::from_secs(60);
/// How long to wait for the store to answer the final release before giving up on it (the
/// lease then ends at its expiry).
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the skip message may spend asking who holds the lock.
const STATE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs `leasehold run`. `signals` must be installed before anything else happens, so that a
/// SIGTERM can never kill leasehold between acquiring the lease and starting the command.
pub(crate) async fn run(
    args: RunArgs,
    url: StoreUrl,
    mut signals: Signals,
) -> Result<ExitCode, Failure> {
    let options = options(&args)?;
    let period = period(&args)?;
    let lock = args.lock.clone();
    let interrupted = |signal: Signal| {
        Failure::interrupted(
            signal as i32,
            format!("got {signal} while waiting for lock {lock}; command not run"),
        )
    };
    let store = tokio::select! {
        opened = url.open() => opened?,
        signal = signals.recv() => return Err(interrupted(signal)),
    };
    let elector = Elector::with_options(Arc::clone(&store), options);
    let mut events = elector.subscribe();
    let guard = tokio::select! {
        acquired = acquire(&elector, &lock, period) => acquired?,
        signal = signals.recv() => {
            // The store may still grant the request in flight: release that lease before
            // exiting, or it would stay held for the whole --lease.
            settle(&elector, signal, &lock).await;
            return Err(interrupted(signal));
        }
    };
    let guard = match guard {
        Ok(guard) => guard,
        Err(refusal) => {
            if !args.quiet {
                let line = match (refusal, period) {
                    (Some(record), Some(period)) => already_ran_message(&args, period, &record),
                    _ => skip_message(&*store, &args).await,
                };
                say::err(&line);
            }
            return Ok(exit::code(args.skipped_exit_code));
        }
    };
    let lease = guard.lease();
    let mut env = vec![
        ("LEASEHOLD_LOCK", lease.lock.to_string()),
        ("LEASEHOLD_FENCE", lease.fence.to_string()),
        ("LEASEHOLD_SLOT", lease.slot.to_string()),
        ("LEASEHOLD_OWNER", lease.owner.clone()),
    ];
    if let Some(id) = lease.period {
        env.push(("LEASEHOLD_PERIOD", id.to_string()));
    }
    tracing::info!(lock = %lock, slot = lease.slot, fence = lease.fence, "leasehold: elected");
    let mut child = match Child::spawn(&args.command, &env, args.foreground) {
        Ok(child) => child,
        Err(failure) => {
            release(guard, &lock, false).await;
            return Err(failure);
        }
    };
    let ended = supervise(&mut child, &guard, &args, &mut signals, &mut events).await;
    let lost = ended
        .as_ref()
        .is_ok_and(|e| e.lost.is_some() || e.lost_unseen);
    release(guard, &lock, lost).await;
    let ending = ended?;
    Ok(exit::code(if ending.killed {
        exit::LEASE_LOST
    } else if ending.lost_unseen && args.on_lost == OnLost::Kill {
        exit::LOST_BEFORE_END
    } else {
        exit::of_status(ending.status)
    }))
}

/// Waits up to `--wait` for the lock, claiming `period` of the ledger if given.
/// `Err(None)` on contention, `Err(Some(record))` when the period already ran.
async fn acquire(
    elector: &Elector,
    lock: &LockName,
    period: Option<Period>,
) -> Result<Result<LeaderGuard, Option<PeriodRecord>>, Failure> {
    Ok(match period {
        Some(period) => elector.try_acquire_for(lock, period).await?,
        None => elector.try_acquire(lock).await?.ok_or(None),
    })
}

/// After `signal` cut the wait for `lock` short: waits (at most [`SETTLE_TIMEOUT`]) for the
/// store to answer an acquisition still in flight, whose lease is then released at once.
async fn settle(elector: &Elector, signal: Signal, lock: &LockName) {
    if elector.settled_within(Duration::ZERO).await {
        return;
    }
    say::err(&format!(
        "got {signal} while waiting for lock {lock}; waiting up to {} for the store to \
         answer the request in flight, to release the lock if it grants it",
        human(SETTLE_TIMEOUT)
    ));
    elector.settled_within(SETTLE_TIMEOUT).await;
}

/// Options from the flags; a rejected combination is a usage error that names the flags.
fn options(args: &RunArgs) -> Result<ElectionOptions, Failure> {
    let lease = args.lease.unwrap_or(DEFAULT_LEASE.max(args.min_lease));
    let mut builder = ElectionOptions::builder()
        .max_leaders(args.slots)
        .wait(args.wait)
        .lease(lease)
        .min_lease(args.min_lease)
        .auto_extend(!args.no_auto_extend);
    if let Some(id) = &args.node_id {
        builder = builder.node_id(id.clone());
    }
    builder.build().map_err(|e| {
        Failure::usage(match e {
            OptionsError::MinLeaseExceedsLease { min_lease, lease } => format!(
                "--min-lease ({}) must not exceed --lease ({})",
                human(min_lease),
                human(lease)
            ),
            OptionsError::LeaseTooShortForAutoExtend { lease, min } => format!(
                "--lease {} is too short to renew while the command runs: use at least {} \
                 or pass --no-auto-extend",
                human(lease),
                human(min)
            ),
            OptionsError::LeaseTooShort(lease) => {
                format!("--lease must be at least 1ms, got {}", human(lease))
            }
            OptionsError::BadNodeId(id) => format!(
                "--node-id must be non-empty printable text without control characters, got {id:?}"
            ),
            other => format!("invalid options: {other}"),
        })
    })
}

/// The `--once-per` period, validated; `--slots` above 1 cannot be combined with it.
fn period(args: &RunArgs) -> Result<Option<Period>, Failure> {
    let Some(length) = args.once_per else {
        return Ok(None);
    };
    if args.slots != 1 {
        return Err(Failure::usage(format!(
            "--once-per needs a single-holder lock: the period ledger keeps one record per lock, \
             so it cannot be combined with --slots {}",
            args.slots
        )));
    }
    let period = Period::every(length)
        .map_err(|e| Failure::usage(format!("--once-per {}: {e}", human(length))))?;
    match args.period_offset {
        None => Ok(Some(period)),
        Some(offset) => period
            .offset(offset)
            .map(Some)
            .map_err(|e| Failure::usage(format!("--period-offset {}: {e}", human(offset)))),
    }
}

/// The one line printed when the period ledger refuses the run: which period, when and where
/// it already ran.
fn already_ran_message(args: &RunArgs, period: Period, record: &PeriodRecord) -> String {
    let program = args
        .command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "lock {}: period {} ({} to {}, --once-per {}) already ran at {} on {}; skipped `{program}`",
        args.lock,
        record.period,
        rfc3339(period.start_of(record.period)),
        rfc3339(period.start_of(record.period.saturating_add(1))),
        human(period.length()),
        rfc3339(record.at),
        printable(&record.by),
    )
}

/// The one line printed on contention, naming the holder when the store says who it is.
async fn skip_message(store: &dyn LeaseStore, args: &RunArgs) -> String {
    let program = args
        .command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock = &args.lock;
    let state = timeout(STATE_TIMEOUT, store.state(lock, args.slots)).await;
    let held_by = match state {
        Ok(Ok(state)) if !state.is_free() => describe_holders(&state),
        _ => "held elsewhere".to_owned(),
    };
    let waited = if args.wait.is_zero() {
        String::new()
    } else {
        format!(" after waiting {}", human(args.wait))
    };
    format!("lock {lock} is {held_by}{waited}; skipped `{program}`")
}

fn describe_holders(state: &LockState) -> String {
    let one = |h: &leasehold::Holder| {
        format!(
            "{} (fence {}, expires in {})",
            printable(&h.owner),
            h.fence,
            human(until(h.expires_at))
        )
    };
    match state.holders.as_slice() {
        [h] if state.slots == 1 => format!("held by {}", one(h)),
        holders => format!(
            "full ({} of {} slots held: {})",
            holders.len(),
            state.slots,
            holders.iter().map(one).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// How the supervised command ended.
#[derive(Debug)]
struct Ending {
    status: std::process::ExitStatus,
    /// Set if the lease was lost while the command ran.
    lost: Option<LostReason>,
    /// True if leasehold stopped the command because of the loss.
    killed: bool,
    /// True if the command ended on its own, and only then was the lease found lost (leasehold
    /// itself was stopped or starved meanwhile, so it could not act on the loss in time).
    lost_unseen: bool,
}

/// Waits for the command while watching the lease and forwarding signals.
async fn supervise(
    child: &mut Child,
    guard: &LeaderGuard,
    args: &RunArgs,
    signals: &mut Signals,
    events: &mut broadcast::Receiver<Event>,
) -> Result<Ending, Failure> {
    let lock = &args.lock;
    let mut events_open = true;
    let mut lost = None;
    let mut kill_at: Option<Instant> = None;
    loop {
        let escalate = async {
            match kill_at {
                Some(at) => sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            status = child.wait() => {
                let status = status.map_err(|e| {
                    Failure::usage(format!("lost track of `{}`: {e}", child.name()))
                })?;
                let lost_unseen = lost.is_none() && guard.is_lost();
                return Ok(ended_on_its_own(child, status, lost, lost_unseen, args));
            }
            signal = signals.recv() => {
                tracing::info!(%signal, "leasehold: forwarding signal to the command");
                child.deliver(signal);
            }
            event = events.recv(), if events_open => match event {
                Ok(Event::RenewalFailing { error, .. }) if lost.is_none() => say::err(&format!(
                    "renewing the lease on lock {lock} is failing ({error}); retrying until the \
                     lease runs out, when `{}` {}", child.name(), match args.on_lost {
                        OnLost::Kill => "is stopped",
                        OnLost::Continue => "keeps running (--on-lost continue)",
                    })),
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => events_open = false,
            },
            reason = guard.lost(), if lost.is_none() => {
                // Noticed late (leasehold was stopped or starved): the command may have ended
                // meanwhile, and then there is nothing left to stop.
                if let Ok(Some(status)) = child.try_wait() {
                    return Ok(ended_on_its_own(child, status, None, true, args));
                }
                lost = Some(reason);
                match args.on_lost {
                    OnLost::Kill => {
                        say::err(&format!(
                            "lease on lock {lock} lost ({reason}); stopping `{}` (SIGTERM, \
                             SIGKILL after {})", child.name(), human(args.kill_grace)));
                        child.deliver(Signal::SIGTERM);
                        kill_at = Some(leasehold::store::deadline_after(Instant::now(), args.kill_grace));
                    }
                    OnLost::Continue => say::err(&format!(
                        "lease on lock {lock} lost ({reason}); `{}` keeps running \
                         (--on-lost continue) and may overlap with another holder",
                        child.name())),
                }
            }
            () = escalate => {
                say::err(&format!("`{}` still running {} after SIGTERM; sending SIGKILL",
                    child.name(), human(args.kill_grace)));
                child.deliver(Signal::SIGKILL);
                kill_at = None;
            }
        }
    }
}

/// The command ended by itself. `lost_unseen`: the lease was found lost only now, too late to
/// stop the command, which may have overlapped with another holder (reported here).
fn ended_on_its_own(
    child: &Child,
    status: std::process::ExitStatus,
    lost: Option<LostReason>,
    lost_unseen: bool,
    args: &RunArgs,
) -> Ending {
    if lost_unseen {
        let outcome = match args.on_lost {
            OnLost::Kill => format!("exiting {}", exit::LOST_BEFORE_END),
            OnLost::Continue => "passing its status on (--on-lost continue)".to_owned(),
        };
        say::err(&format!(
            "`{}` finished ({}), but the lease on lock {} ran out before leasehold saw it \
             finish (was leasehold stopped or starved?): exclusivity was not guaranteed, it \
             may have overlapped with another holder; {outcome}",
            child.name(),
            exit::describe_status(status),
            args.lock,
        ));
    }
    Ending {
        status,
        lost,
        killed: lost.is_some() && args.on_lost == OnLost::Kill,
        lost_unseen,
    }
}

/// Releases the lease (or shortens it to the remaining `--min-lease`), bounded in time. Problems
/// are reported but do not change the exit code: the command's outcome is what matters, and an
/// unreleased lease ends at its expiry.
async fn release(guard: LeaderGuard, lock: &LockName, already_lost: bool) {
    match timeout(RELEASE_TIMEOUT, guard.release()).await {
        Ok(Ok(Release::Released)) => tracing::info!(lock = %lock, "leasehold: released"),
        Ok(Ok(Release::NotHeld)) if already_lost => {}
        Ok(Ok(Release::NotHeld)) => say::err(&format!(
            "lock {lock} was no longer held when released (expired or force-released)"
        )),
        Ok(Err(e)) => say::err(&format!(
            "could not release lock {lock}: {e}; it ends at its expiry"
        )),
        Err(_) => say::err(&format!(
            "the store did not answer the release of lock {lock} within {}; it ends at its expiry",
            human(RELEASE_TIMEOUT)
        )),
    }
}
