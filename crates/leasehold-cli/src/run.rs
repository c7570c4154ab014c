//! `leasehold run`: acquire the lock, run the command under the lease, stop it if the lease is
//! lost, forward signals, release.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    Elector, GroupElector, GroupOptions, LeaderGuard, LeaseStore, LockName, LockState, LostReason,
    OptionsError, Release,
};
use nix::sys::signal::Signal;
use tokio::time::{Instant, sleep_until, timeout};

use crate::args::{OnLost, RunArgs};
use crate::child::Child;
use crate::exit::{self, Failure};
use crate::say;
use crate::signals::Signals;
use crate::store::StoreUrl;
use crate::time_text::{human, printable, until};

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
    let lock = args.lock.clone();
    let acquire = async {
        let store = url.open().await?;
        let guard = acquire(Arc::clone(&store), &lock, options).await?;
        Ok::<_, Failure>((store, guard))
    };
    let (store, guard) = tokio::select! {
        acquired = acquire => acquired?,
        signal = signals.recv() => {
            return Err(Failure::interrupted(signal as i32,
                format!("got {signal} while waiting for lock {lock}; command not run")));
        }
    };
    let Some(guard) = guard else {
        if !args.quiet {
            say::err(&skip_message(&*store, &args).await);
        }
        return Ok(exit::code(args.skipped_exit_code));
    };
    let lease = guard.lease();
    let env = [
        ("LEASEHOLD_LOCK", lease.lock.to_string()),
        ("LEASEHOLD_FENCE", lease.fence.to_string()),
        ("LEASEHOLD_SLOT", lease.slot.to_string()),
        ("LEASEHOLD_OWNER", lease.owner.clone()),
    ];
    tracing::info!(lock = %lock, slot = lease.slot, fence = lease.fence, "leasehold: elected");
    let mut child = match Child::spawn(&args.command, &env, args.foreground) {
        Ok(child) => child,
        Err(failure) => {
            release(guard, &lock, false).await;
            return Err(failure);
        }
    };
    let ended = supervise(&mut child, &guard, &args, &mut signals).await;
    release(guard, &lock, ended.as_ref().is_ok_and(|e| e.lost.is_some())).await;
    let ending = ended?;
    Ok(exit::code(if ending.killed {
        exit::LEASE_LOST
    } else {
        exit::of_status(ending.status)
    }))
}

/// Options from the flags; a rejected combination is a usage error that names the flags.
fn options(args: &RunArgs) -> Result<GroupOptions, Failure> {
    let lease = args.lease.unwrap_or(DEFAULT_LEASE.max(args.min_lease));
    let mut builder = GroupOptions::builder()
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

/// Waits up to `--wait` for the lock. `Ok(None)` on contention.
async fn acquire(
    store: Arc<dyn LeaseStore>,
    lock: &LockName,
    options: GroupOptions,
) -> Result<Option<LeaderGuard>, Failure> {
    let guard = if options.max_leaders() == 1 {
        Elector::with_options(store, options.election().clone())
            .try_acquire(lock)
            .await?
    } else {
        GroupElector::new(store, options).try_acquire(lock).await?
    };
    Ok(guard)
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
}

/// Waits for the command while watching the lease and forwarding signals.
async fn supervise(
    child: &mut Child,
    guard: &LeaderGuard,
    args: &RunArgs,
    signals: &mut Signals,
) -> Result<Ending, Failure> {
    let lock = &args.lock;
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
                if lost.is_none() && guard.is_lost() {
                    say::err(&format!(
                        "lease on lock {lock} ran out as `{}` ended; it may have overlapped \
                         with another holder", child.name()));
                }
                return Ok(Ending { status, lost, killed: lost.is_some() && args.on_lost == OnLost::Kill });
            }
            signal = signals.recv() => {
                tracing::info!(%signal, "leasehold: forwarding signal to the command");
                child.deliver(signal);
            }
            reason = guard.lost(), if lost.is_none() => {
                lost = Some(reason);
                match args.on_lost {
                    OnLost::Kill => {
                        say::err(&format!(
                            "lease on lock {lock} lost ({reason}); stopping `{}` (SIGTERM, \
                             SIGKILL after {})", child.name(), human(args.kill_grace)));
                        child.deliver(Signal::SIGTERM);
                        kill_at = Some(leasehold::deadline_after(Instant::now(), args.kill_grace));
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
