//! `leasehold run`: acquire the lock, run the command under the lease, stop it if the lease is
//! lost, forward signals, release, and write the `--metrics-file`.

mod shards;
mod stopping;
mod supervise;

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, LeaderGuard, LeaseStore, LockName, Outcome, Period, PeriodRecord,
    error::{LeaseError, OptionsError},
    limits::{LET_GO_PATIENCE, SETTLE_TIMEOUT},
    options::DEFAULT_LEASE,
    store::Release,
};
use nix::sys::signal::Signal;
use tokio::time::timeout;

use self::stopping::{LeaseSource, kill_grace};
use self::supervise::Supervision;
use crate::args::{OnLost, RunArgs};
use crate::child::{Child, Family};
use crate::exit::{self, Failure};
use crate::metrics_file::{MetricsFile, RunRecord};
use crate::say;
use crate::signals::Signals;
use crate::store::StoreUrl;
use crate::time_text::{human, printable, rfc3339};
use crate::waiting;

/// How long to wait for the store to answer the final release before giving up on it (the
/// lease then ends at its expiry).
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `leasehold run`. `signals` must be installed before anything else happens, so that a
/// SIGTERM can never kill leasehold between acquiring the lease and starting the command.
/// Bad flags are usage errors before anything runs; every later outcome is also written to the
/// `--metrics-file`.
pub(crate) async fn run(
    args: RunArgs,
    url: StoreUrl,
    mut signals: Signals,
) -> Result<ExitCode, Failure> {
    let options = options(&args)?;
    let grace = grace(&args, options.lease())?;
    if let Some(shards) = args.shards {
        return shards::run(args, shards, url, signals, (options, grace))
            .await
            .map(exit::code);
    }
    let period = period(&args)?;
    let metrics = args
        .metrics_file
        .as_deref()
        .map(MetricsFile::at)
        .transpose()?;
    let mut record = RunRecord::starting();
    let outcome = attempt(
        &args,
        url,
        &mut signals,
        (options, grace),
        period,
        &mut record,
    )
    .await;
    record.exit_code = match &outcome {
        Ok(code) => *code,
        Err(failure) => failure.code(),
    };
    if let Some(file) = &metrics {
        file.write(&args.lock, &record);
    }
    outcome.map(exit::code)
}

/// Acquires the lock and runs the command under it; the exit code. `record` notes what happened
/// on the way (skipped, the fence, whether the command started).
async fn attempt(
    args: &RunArgs,
    url: StoreUrl,
    signals: &mut Signals,
    (options, grace): (ElectionOptions, Duration),
    period: Option<Period>,
    record: &mut RunRecord,
) -> Result<u8, Failure> {
    let lock = args.lock.clone();
    let interrupted = |signal: Signal| {
        Failure::interrupted(
            signal as i32,
            format!("got {signal} while waiting for lock {lock}; command not run"),
        )
    };
    let began = tokio::time::Instant::now();
    let store = tokio::select! {
        opened = url.open_shared(args.wait) => opened?,
        signal = signals.recv() => return Err(interrupted(signal)),
    };
    // --wait covers the whole wait: time spent reaching the store counts.
    let options = match options
        .to_builder()
        .wait(args.wait.saturating_sub(began.elapsed()))
        .build()
    {
        Ok(options) => options,
        Err(e) => return Err(Failure::usage(format!("invalid options: {e}"))),
    };
    let elector = Elector::with_options(Arc::clone(&store), options);
    let mut events = elector.subscribe();
    let own = elector.options().node_id().to_owned();
    let progress = async {
        if args.quiet || args.wait.is_zero() {
            std::future::pending::<Infallible>().await
        } else {
            let (wait, every) = (args.wait, args.progress_every);
            waiting::report(&*store, &lock, args.slots, &own, wait, every, say::err).await
        }
    };
    // Whenever leasehold goes on without a lease, the store may still grant an attempt that
    // timed out or was in flight: that lease is released first, or it would stay held for the
    // whole --lease (the runtime is not waited for at exit).
    let guard = tokio::select! {
        acquired = acquire(&elector, &lock, period) => match acquired {
            Ok(acquired) => acquired,
            Err(failure) => {
                settle(&elector, &format!("the store failed while waiting for lock {lock}")).await;
                return Err(failure);
            }
        },
        signal = signals.recv() => {
            settle(&elector, &format!("got {signal} while waiting for lock {lock}")).await;
            return Err(interrupted(signal));
        }
        never = progress => match never {},
    };
    let guard = match guard {
        Outcome::Elected(guard) => guard,
        Outcome::ActionFailed(never) => match never {},
        refusal => {
            settle(&elector, &format!("lock {lock} is held elsewhere")).await;
            record.skipped = true;
            if !args.quiet {
                let line = match (refusal, period) {
                    (Outcome::AlreadyRan(ran), Some(period)) => {
                        already_ran_message(args, period, &ran)
                    }
                    (_, Some(period)) => {
                        let line = skip_message(&*store, args).await;
                        claimed_note(&*store, &lock, period, line).await
                    }
                    _ => skip_message(&*store, args).await,
                };
                say::err(&line);
            }
            return Ok(args.skipped_exit_code);
        }
    };
    let lease = guard.lease();
    record.fence = Some(lease.fence);
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
    // Before the command starts, so that nothing it leaves behind is missed.
    let mut family = Family::prepare();
    let mut child = match Child::spawn(&args.command, &env, args.foreground) {
        Ok(child) => child,
        Err(failure) => {
            release(&elector, guard, &lock, Some("the command was not started")).await;
            return Err(failure);
        }
    };
    family.adopt(&child);
    record.ran = true;
    let ended = Supervision {
        child: &mut child,
        family: &mut family,
        guard: &guard,
        lock: &lock,
        shard: None,
        args,
        grace,
    }
    .watch(signals, &mut events)
    .await;
    // A loss found only by the release is reported there, once, like every other loss.
    let unreported = match &ended {
        Ok(e) if e.reported => None,
        Ok(e) => Some(format!(
            "`{}` had finished ({}) and may have overlapped with another holder; {}",
            child.name(),
            exit::describe_status(e.status),
            match args.on_lost {
                OnLost::Kill => format!("exit code {}", exit::LOST_BEFORE_END),
                OnLost::Continue => "passing its status on (--on-lost continue)".to_owned(),
            }
        )),
        Err(_) => Some(format!("`{}` was no longer watched", child.name())),
    };
    let lost_at_release = release(&elector, guard, &lock, unreported.as_deref()).await;
    let ending = ended?;
    let lost_unseen = ending.lost_unseen.is_some() || lost_at_release;
    Ok(if ending.killed {
        exit::LEASE_LOST
    } else if lost_unseen && args.on_lost == OnLost::Kill {
        exit::LOST_BEFORE_END
    } else {
        exit::of_status(ending.status)
    })
}

/// Waits up to `--wait` for the lock, claiming `period` of the ledger if given.
async fn acquire(
    elector: &Elector,
    lock: &LockName,
    period: Option<Period>,
) -> Result<Outcome<LeaderGuard>, Failure> {
    Ok(match period {
        Some(period) => elector.try_acquire_for(lock, period).await?,
        None => elector.try_acquire(lock).await?,
    })
}

/// The wait for the lock ended without a lease (`why`, for the message): waits (at most
/// [`SETTLE_TIMEOUT`]) for the store to answer an acquisition still in flight, whose lease is
/// then released at once.
async fn settle(elector: &Elector, why: &str) {
    // Already settled: nothing to say (a zero `settled_within` would warn).
    if tokio::time::timeout(Duration::ZERO, elector.settled())
        .await
        .is_ok()
    {
        return;
    }
    say::err(&format!(
        "{why}; waiting up to {} for the store to answer the request in flight, to release \
         the lock if it grants it",
        human(SETTLE_TIMEOUT)
    ));
    elector.settled_within(SETTLE_TIMEOUT).await;
}

/// Options from the flags; a rejected combination is a usage error that names the flags.
fn options(args: &RunArgs) -> Result<ElectionOptions, Failure> {
    let lease = args.lease.unwrap_or(DEFAULT_LEASE.max(args.min_lease));
    // --kill-grace is checked against this lease in `grace`, once the options are valid.
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
            OptionsError::Lease(LeaseError::MinLeaseExceedsLease { min_lease, lease }) => format!(
                "--min-lease ({}) must not exceed --lease ({})",
                human(min_lease),
                human(lease)
            ),
            OptionsError::Lease(LeaseError::TooShortForAutoExtend { lease, min }) => format!(
                "--lease {} is too short to renew while the command runs: use at least {} \
                 or pass --no-auto-extend",
                human(lease),
                human(min)
            ),
            OptionsError::Lease(LeaseError::TooShort { lease }) => {
                format!("--lease must be at least 1ms, got {}", human(lease))
            }
            OptionsError::BadNodeId(id) => format!(
                "--node-id must be non-empty printable text without control characters, got {id:?}"
            ),
            other => format!("invalid options: {other}"),
        })
    })
}

/// `--kill-grace` (or its default) for `lease`: it must fit a third of the lease.
fn grace(args: &RunArgs, lease: Duration) -> Result<Duration, Failure> {
    let source = if args.lease.is_some() {
        LeaseSource::Flag
    } else if args.min_lease > DEFAULT_LEASE {
        LeaseSource::MinLease
    } else {
        LeaseSource::Default
    };
    kill_grace(args.kill_grace, lease, source)
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

/// The one line printed when the period ledger refuses the run: which period ran, when and
/// where, and the period this run asked for when its length or offset differs.
fn already_ran_message(args: &RunArgs, period: Period, record: &PeriodRecord) -> String {
    let program = args
        .command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let length = if record.length() == period.length() {
        format!("--once-per {}", human(period.length()))
    } else {
        format!(
            "periods of {}, which this run's --once-per {} overlaps",
            human(record.length()),
            human(period.length())
        )
    };
    format!(
        "lock {}: period {} ({} to {}, {length}) already ran at {} on {}; skipped `{program}`",
        args.lock,
        record.period,
        rfc3339(record.from),
        rfc3339(record.until),
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
    let held_by = waiting::who_holds(store, lock, args.slots).await;
    let waited = if args.wait.is_zero() {
        String::new()
    } else {
        format!(" after waiting {}", human(args.wait))
    };
    format!("lock {lock} is {held_by}{waited}; skipped `{program}`")
}

/// `line` (a skip under `--once-per`), with what the ledger says when this period is claimed but
/// its run has not started: the holder may still run it, or let it go to the next run.
async fn claimed_note(
    store: &dyn LeaseStore,
    lock: &LockName,
    period: Period,
    line: String,
) -> String {
    let Ok(Some(record)) = store.period_record(lock).await else {
        return line;
    };
    let now = std::time::SystemTime::now();
    let window_start = period.start_of(period.id_at(now));
    if record.started || record.at < window_start {
        return line;
    }
    format!(
        "{line} (period {} is claimed, not run: granted at {} to {}; if it never starts, the next \
         run of this period takes it over)",
        record.period,
        rfc3339(record.at),
        printable(&record.by)
    )
}

/// Releases the lease (or shortens it to the remaining `--min-lease`), bounded in time. A store
/// that fails or does not answer is reported but does not change the exit code: the command's
/// outcome is what matters. After a transient failure the core retries the release in the
/// background for up to [`LET_GO_PATIENCE`], which this waits for; a lease still unreleased
/// then ends at its expiry. `unreported`: what a loss found only now means, if no loss was
/// reported yet (then reported once, as every loss); true if such a loss was found.
async fn release(
    elector: &Elector,
    guard: LeaderGuard,
    lock: &LockName,
    unreported: Option<&str>,
) -> bool {
    match timeout(RELEASE_TIMEOUT, guard.release()).await {
        Ok(Ok(Release::Released)) => tracing::info!(lock = %lock, "leasehold: released"),
        Ok(Ok(Release::NotHeld)) => {
            if let Some(consequence) = unreported {
                say::lost(
                    lock,
                    "it was no longer held when released: it expired or was force-released",
                    consequence,
                );
                return true;
            }
        }
        Ok(Err(e)) if e.as_store().is_some_and(|e| e.is_transient()) => {
            say::err(&format!(
                "could not release lock {lock}: {e}; retrying for up to {} (or it ends at its \
                 expiry)",
                human(LET_GO_PATIENCE)
            ));
            elector.settled_within(SETTLE_TIMEOUT).await;
        }
        Ok(Err(e)) => say::err(&format!(
            "could not release lock {lock}: {e}; it ends at its expiry"
        )),
        Err(_) => say::err(&format!(
            "the store did not answer the release of lock {lock} within {}; it ends at its expiry",
            human(RELEASE_TIMEOUT)
        )),
    }
    false
}
