//! The main job: several replicas of a service try to run the same nightly job. Exactly one runs it
//! and passes its fence to the resource it writes; the others skip.
//!
//! The replicas are simulated as tasks sharing one `MemoryStore`, so the example needs no server;
//! with `leasehold-sql` they would be processes or hosts sharing a database. Their timers are
//! deliberately out of phase: replica *i* starts `i × 150 ms` after the first, while the job itself
//! takes 100 ms. Without `min_lease` a late replica would find the lock free again and run the job a
//! second time; with it, the lock stays held for the rest of the window and every late replica
//! skips.
//!
//! Run: `cargo run -p leasehold --example nightly_job` (add `-- --nodes 5` for more replicas).
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use leasehold::{ElectionOptions, Elector, LeaseStore, LockState, MemoryStore};

const JOB: &str = "nightly-report";

/// The resource the job writes to. It remembers the highest fence it has accepted and rejects a
/// write with a lower one, so a replica that lost its lease (paused, partitioned) can never
/// overwrite the work of the replica that took over. A database does the same with
/// `UPDATE ... SET ..., fence = $fence WHERE id = $id AND fence <= $fence`.
#[derive(Default)]
struct ReportTable {
    inner: Mutex<(u64, Vec<String>)>,
}

impl ReportTable {
    fn write(&self, fence: u64, row: String) -> Result<(), String> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if fence < inner.0 {
            return Err(format!(
                "rejected a stale write: fence {fence} < {}",
                inner.0
            ));
        }
        inner.0 = fence;
        inner.1.push(row);
        Ok(())
    }

    fn rows(&self) -> Vec<String> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }
}

/// What one replica did.
enum Outcome {
    Ran {
        fence: u64,
    },
    Skipped {
        holder: Option<String>,
        left: Duration,
    },
}

async fn replica(
    node: String,
    start_after: Duration,
    store: Arc<dyn LeaseStore>,
    table: Arc<ReportTable>,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let options = ElectionOptions::builder()
        .node_id(node.clone()) // recorded as the lease's owner; defaults to hostname:pid
        .wait(Duration::ZERO) // do not queue up: if another replica has it, skip tonight's run
        .lease(Duration::from_secs(60)) // how long the store keeps the lock if this node dies
        .auto_extend(true) // renew while the job runs, however long it takes
        .min_lease(Duration::from_secs(30)) // hold the lock at least this long: late timers skip
        .build()?;
    let elector = Elector::with_options(store, options);

    tokio::time::sleep(start_after).await; // this replica's timer fires
    let ran = elector
        .run_if_leader(JOB, |ctx| {
            let table = Arc::clone(&table);
            let node = node.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await; // the actual work
                table.write(
                    ctx.fence(),
                    format!("report built by {node} under fence {}", ctx.fence()),
                )?;
                Ok::<_, String>(ctx.fence())
            }
        })
        .await?;
    match ran {
        Some(Ok(fence)) => Ok(Outcome::Ran { fence }),
        Some(Err(e)) => Err(e.into()),
        None => {
            // Best-effort snapshot, for the log line only: never decide anything from it.
            let state = elector.state(JOB).await?;
            let holder = state.holder();
            Ok(Outcome::Skipped {
                holder: holder.map(|h| h.owner.clone()),
                left: holder.map_or(Duration::ZERO, |h| {
                    LockState::time_left(h, SystemTime::now())
                }),
            })
        }
    }
}

fn node_count() -> Result<usize, String> {
    let mut args = std::env::args().skip(1);
    let mut nodes = 3;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--nodes" => {
                let value = args.next().ok_or("--nodes needs a number")?;
                nodes = value
                    .parse()
                    .map_err(|_| format!("--nodes: not a number: {value:?}"))?;
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: nightly_job [--nodes N]"
                ));
            }
        }
    }
    if nodes == 0 {
        return Err("--nodes must be at least 1".to_owned());
    }
    Ok(nodes)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let nodes = node_count()?;
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let table = Arc::new(ReportTable::default());

    let mut replicas = Vec::with_capacity(nodes);
    for i in 0..nodes {
        let node = format!("node-{}", i + 1);
        let start_after = Duration::from_millis(150) * u32::try_from(i)?;
        let task = tokio::spawn(replica(
            node.clone(),
            start_after,
            Arc::clone(&store),
            Arc::clone(&table),
        ));
        replicas.push((node, task));
    }

    let mut ran = 0;
    for (node, task) in replicas {
        match task.await?? {
            Outcome::Ran { fence } => {
                ran += 1;
                println!("{node}: elected, ran {JOB} with fence {fence}");
            }
            Outcome::Skipped { holder, left } => {
                let holder = holder.as_deref().unwrap_or("nobody (lease just ended)");
                println!("{node}: skipped, {JOB} is held by {holder} for another {left:.1?}");
            }
        }
    }

    println!(
        "summary: {nodes} replicas, {ran} ran the job, {} skipped",
        nodes - ran
    );
    for row in table.rows() {
        println!("report table: {row}");
    }
    if ran != 1 {
        return Err(format!("expected exactly one replica to run the job, {ran} did").into());
    }
    Ok(())
}
