//! Fairness across processes: three processes with 4, 4 and 1 tasks loop on one lock; does
//! every task get about as many turns as every other, whichever process it is in?
//!
//! Each process is this binary run with `--contend LOCK --tasks N`: it opens its own client,
//! says `ready`, waits for `go` on stdin, runs its tasks for the measuring time and prints one
//! line of JSON with its per-task counts. The memory store lives in one process, so there the
//! three "processes" are three electors (each with its own local line) on the shared store.

use std::cell::Cell;
use std::io::Write as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use leasehold::{ElectionOptions, Elector, LockName, MemoryStore};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::time::timeout;

use crate::BoxError;
use crate::backend::{Backend, open_client};
use crate::measure::{Tally, contend};
use crate::outcome::Figure;
use crate::scenario::Config;
use crate::scenario::contended::SECTION;
use crate::target::Target;

/// Tasks per process.
const PROCESSES: [usize; 3] = [4, 4, 1];
/// How long each task waits for the lock per call.
const WAIT: Duration = Duration::from_secs(2);
/// How long a child may take to open its client and to report.
const CHILD_GRACE: Duration = Duration::from_secs(30);

/// What one process did: sections per task, calls that gave up, calls that failed.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Counts {
    per_task: Vec<u64>,
    skips: u64,
    errors: u64,
    first_error: Option<String>,
}

fn options() -> Result<ElectionOptions, BoxError> {
    Ok(ElectionOptions::builder()
        .wait(WAIT)
        .lease(Duration::from_secs(2))
        .build()?)
}

/// `tasks` tasks of one elector looping `run_if_leader` around the section for `d`.
async fn run_tasks(elector: &Elector, lock: &LockName, tasks: usize, d: Duration) -> Counts {
    let skips = Cell::new(0u64);
    let skips = &skips;
    let tally = contend(d, tasks, |_| async move {
        let ran = elector
            .run_if_leader(lock, |_| tokio::time::sleep(SECTION))
            .await?
            .is_some();
        if !ran {
            skips.set(skips.get() + 1);
        }
        Ok(ran)
    })
    .await
    .unwrap_or_default();
    Counts {
        per_task: tally.per_task,
        skips: skips.get(),
        errors: tally.failures.saturating_sub(skips.get()),
        first_error: tally.first_error,
    }
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let d = cfg.total();
    let lock = t.lock("fairness", 0)?;
    let counts = if t.backend == Backend::Memory {
        let electors = PROCESSES
            .iter()
            .map(|_| Ok(Elector::with_options(t.store.clone(), options()?)))
            .collect::<Result<Vec<_>, BoxError>>()?;
        join_all(
            electors
                .iter()
                .zip(PROCESSES)
                .map(|(e, n)| run_tasks(e, &lock, n, d)),
        )
        .await
    } else {
        in_children(t, &lock, d).await?
    };
    let mut tally = Tally::default();
    let mut errors = 0;
    for c in counts {
        tally.ops += c.per_task.iter().sum::<u64>();
        tally.per_task.extend(c.per_task);
        tally.failures += c.skips;
        errors += c.errors;
        if tally.first_error.is_none() {
            tally.first_error = c.first_error;
        }
    }
    if errors > 0 {
        return Err(format!(
            "{errors} calls failed: {}",
            tally.first_error.unwrap_or_default()
        )
        .into());
    }
    tally.time = d;
    // The serial limit: one task alone, raw, around the same section — no hand-off at all.
    let serial = t.lock("fairness-serial", 0)?;
    let slots = &[serial];
    let mut limit = contend(d, 1, |_| t.floor.section(slots, SECTION)).await?;
    limit.per_task.clear();
    Ok(vec![
        Figure::rate("leasehold", tally),
        Figure::rate("serial limit", limit.check("serial limit")?),
    ])
}

/// Starts one child per process, starts them together, and collects their counts.
async fn in_children(t: &Target, lock: &LockName, d: Duration) -> Result<Vec<Counts>, BoxError> {
    let mut children = Vec::new();
    for tasks in PROCESSES {
        children.push(ChildProcess::start(t, lock, tasks, d).await?);
    }
    for c in &mut children {
        c.stdin.write_all(b"go\n").await?;
        c.stdin.flush().await?;
    }
    let mut counts = Vec::new();
    for c in children {
        counts.push(c.finish(d).await?);
    }
    Ok(counts)
}

struct ChildProcess {
    child: Child,
    stdin: ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl ChildProcess {
    async fn start(
        t: &Target,
        lock: &LockName,
        tasks: usize,
        d: Duration,
    ) -> Result<Self, BoxError> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--contend", lock.as_str(), "--tasks", &tasks.to_string()])
            .args(["--seconds", &d.as_secs_f64().to_string()])
            .args(["--backend", t.backend.name(), "--url", &t.url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or("the child's stdin is not piped")?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the child's stdout is not piped")?;
        let mut lines = BufReader::new(stdout).lines();
        match timeout(CHILD_GRACE, lines.next_line()).await {
            Ok(Ok(Some(line))) if line == "ready" => Ok(Self {
                child,
                stdin,
                lines,
            }),
            other => Err(format!("a contending process did not start: {other:?}").into()),
        }
    }

    async fn finish(mut self, d: Duration) -> Result<Counts, BoxError> {
        let line = timeout(d + CHILD_GRACE, self.lines.next_line())
            .await
            .map_err(|_| "a contending process did not report")??
            .ok_or("a contending process ended without reporting")?;
        self.child.wait().await?;
        Ok(serde_json::from_str(&line)?)
    }
}

/// The child side (`--contend LOCK --tasks N --seconds S`): opens a client, says `ready`, waits
/// for `go` on stdin, runs `tasks` tasks on `lock` for `d` and prints its counts as JSON.
pub(crate) async fn contend_in_child(
    backend: Backend,
    url: &str,
    lock: &str,
    tasks: usize,
    d: Duration,
) -> Result<(), BoxError> {
    let store = open_client(backend, url, &Arc::new(MemoryStore::new())).await?;
    let elector = Elector::with_options(store, options()?);
    let lock = LockName::new(lock)?;
    // One call first, so connections are open before the clock starts.
    elector.state(&lock).await?;
    let mut out = std::io::stdout();
    writeln!(out, "ready")?;
    out.flush()?;
    // Blocks this (single-threaded) runtime until the parent says go: nothing runs meanwhile.
    std::io::stdin().read_line(&mut String::new())?;
    let counts = run_tasks(&elector, &lock, tasks, d).await;
    writeln!(out, "{}", serde_json::to_string(&counts)?)?;
    out.flush()?;
    Ok(())
}
