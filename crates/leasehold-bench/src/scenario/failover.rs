//! Failover: a holder dies without releasing; how long until a waiting contender holds the lock,
//! next to the lease.
//!
//! On every backend with a server (and SQLite, whose file other processes share) the holder is a
//! child process — this binary run with `--hold` — that takes the lock with `auto_extend` on and is
//! then SIGKILLed. The memory store lives in this process, so there the holder's store calls are
//! cut off instead (every operation fails) and its guard dropped: its release never lands.

use std::io::Write as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaderGuard, LockName, MemoryStore};
use leasehold_testkit::fault::{Fault, FaultControl, FaultyStore};
use rand::Rng;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, timeout};

use crate::BoxError;
use crate::backend::{Backend, open_client};
use crate::measure::Tally;
use crate::outcome::Figure;
use crate::scenario::Config;
use crate::target::Target;

/// The holder's lease.
const LEASE: Duration = Duration::from_secs(1);
/// How long a child holder lives at most if nobody kills it.
const CHILD_LIFETIME: Duration = Duration::from_secs(120);

/// The holder's options: renew the lease while holding, as a real leader does.
fn holder_options(lease: Duration) -> Result<ElectionOptions, BoxError> {
    Ok(ElectionOptions::builder()
        .wait(Duration::from_secs(5))
        .lease(lease)
        .auto_extend(true)
        .build()?)
}

/// A holder that can be killed.
enum Holder {
    Child(Child),
    InProcess {
        guard: LeaderGuard,
        faults: FaultControl,
    },
}

impl Holder {
    async fn start(t: &Target, lock: &LockName) -> Result<Self, BoxError> {
        if t.backend == Backend::Memory {
            let (store, faults) = FaultyStore::new(t.store.clone());
            let elector = Elector::with_options(store, holder_options(LEASE)?);
            let guard = elector
                .try_acquire(lock)
                .await?
                .elected()
                .ok_or("failover lock busy")?;
            return Ok(Self::InProcess { guard, faults });
        }
        let mut child = Command::new(std::env::current_exe()?)
            .args([
                "--hold",
                lock.as_str(),
                "--backend",
                t.backend.name(),
                "--url",
                &t.url,
            ])
            .args(["--lease-ms", &LEASE.as_millis().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the holder's stdout is not piped")?;
        let mut lines = BufReader::new(stdout).lines();
        match timeout(Duration::from_secs(30), lines.next_line()).await {
            Ok(Ok(Some(line))) if line == "held" => Ok(Self::Child(child)),
            other => {
                let _ = child.start_kill();
                Err(format!("the holder process did not take the lock: {other:?}").into())
            }
        }
    }

    /// Stops the holder without a release.
    async fn kill(self) -> Result<(), BoxError> {
        match self {
            Self::Child(mut child) => {
                child.start_kill()?; // SIGKILL
                child.wait().await?;
            }
            Self::InProcess { guard, faults } => {
                faults.fail_all_ops(Fault::permanent());
                drop(guard);
            }
        }
        Ok(())
    }
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let options = ElectionOptions::builder()
        .wait(LEASE * 10)
        .lease(Duration::from_secs(30))
        .build()?;
    let waiter = Elector::with_options(t.store.clone(), options);
    let mut tally = Tally::default();
    for i in 0..cfg.failovers {
        let lock = t.lock("failover", i)?;
        let holder = Holder::start(t, &lock).await?;
        let (w, l) = (waiter.clone(), lock.clone());
        let task = tokio::spawn(async move {
            let taken = w.try_acquire(&l).await;
            (Instant::now(), taken)
        });
        sleep(Duration::from_millis(rand::rng().random_range(400..900))).await;
        let killed = Instant::now();
        holder.kill().await?;
        let (at, taken) = task.await?;
        taken?
            .elected()
            .ok_or("the waiter gave up")?
            .release()
            .await?;
        tally.latencies.push(at - killed);
    }
    Ok(vec![
        Figure::latency("leasehold", tally),
        Figure::reference("lease", LEASE.as_secs_f64() * 1000.0),
    ])
}

/// The child side of the failover scenario (`--hold LOCK`): takes `lock` with `auto_extend` on,
/// says `held` on stdout, and holds it until killed (or for two minutes at most).
pub(crate) async fn hold_until_killed(
    backend: Backend,
    url: &str,
    lock: &str,
    lease: Duration,
) -> Result<(), BoxError> {
    let store = open_client(backend, url, &Arc::new(MemoryStore::new())).await?;
    let elector = Elector::with_options(store, holder_options(lease)?);
    let guard = elector
        .try_acquire(lock)
        .await?
        .elected()
        .ok_or("the lock was busy")?;
    let mut out = std::io::stdout();
    writeln!(out, "held")?;
    out.flush()?;
    sleep(CHILD_LIFETIME).await;
    guard.release().await?;
    Ok(())
}
