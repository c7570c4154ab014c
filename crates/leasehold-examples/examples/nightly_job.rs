//! The main job: several replicas of a service run the same nightly report. Their timers fire a
//! second apart (clocks, cron and start-up never line up); the first to fire runs the night's
//! report and passes its fence to the table it writes, and every later one finds the night
//! already done in the store's **period ledger** — however late it fires within the night, and
//! although the lock itself is free again by then.
//!
//! The replicas are tasks sharing one `MemoryStore`, so the example needs no server; with
//! `leasehold-sql` (or any other store) they would be processes or hosts sharing a database.
//! Every replica uses the library's default options (it only names itself).
//!
//! Run: `cargo run -p leasehold-examples --example nightly_job` (add `-- --nodes 5` for more
//! replicas).
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore, MemoryStore, Outcome, Period};

const JOB: &str = "nightly-report";

/// How far apart the replicas' timers fire.
const TIMER_GAP: Duration = Duration::from_secs(1);

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

/// One replica: its timer fires after `start_after`, then it runs tonight's report unless the
/// ledger says tonight already ran.
async fn replica(
    node: String,
    start_after: Duration,
    store: Arc<dyn LeaseStore>,
    table: Arc<ReportTable>,
) -> Result<Outcome<(u64, i64), String>, Box<dyn std::error::Error + Send + Sync>> {
    // The library's defaults: a 15 s lease renewed while the job runs, the job dropped if the
    // lease is ever lost. Only the name recorded in the store is set (default: hostname:pid).
    let options = ElectionOptions::builder().node_id(node.clone()).build()?;
    let elector = Elector::with_options(store, options);
    // One period a day, from midnight UTC, by the store's clock.
    let nightly = Period::every(Duration::from_secs(24 * 3600))?;

    tokio::time::sleep(start_after).await; // this replica's timer fires
    let outcome = elector
        .run_once_per(JOB, nightly, |ctx| {
            let table = Arc::clone(&table);
            let node = node.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await; // the actual work
                let night = ctx.lease().period.unwrap_or_default();
                table.write(
                    ctx.fence(),
                    format!("night {night}: built by {node} under fence {}", ctx.fence()),
                )?;
                Ok::<_, String>((ctx.fence(), night))
            }
        })
        .await?;
    Ok(outcome)
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
    if !(1..=20).contains(&nodes) {
        return Err(format!("--nodes must be from 1 to 20, not {nodes}"));
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
        let start_after = TIMER_GAP * u32::try_from(i)?;
        let task = tokio::spawn(replica(
            node.clone(),
            start_after,
            Arc::clone(&store),
            Arc::clone(&table),
        ));
        replicas.push((node, start_after, task));
    }

    let (mut nights, mut done) = (Vec::new(), 0);
    for (node, start_after, task) in replicas {
        let fired = start_after.as_secs();
        match task.await?? {
            Outcome::Elected((fence, night)) => {
                nights.push(night);
                println!("{node} (timer at +{fired}s): ran {JOB} for tonight with fence {fence}");
            }
            Outcome::AlreadyRan(record) => {
                done += 1;
                println!("{node} (timer at +{fired}s): tonight is done: {record}");
            }
            Outcome::Taken(_) => {
                println!("{node} (timer at +{fired}s): skipped, another replica holds {JOB}");
            }
            Outcome::ActionFailed(e) => return Err(format!("{node}: {e}").into()),
        }
    }

    let ran = nights.len();
    println!("summary: {nodes} replicas, {ran} ran tonight's report, {done} found it done");
    for row in table.rows() {
        println!("report table: {row}");
    }
    // Each night runs once: one run, unless the replicas' timers straddled midnight UTC, when
    // the first timer of the new night runs it too.
    let mut distinct = nights.clone();
    distinct.dedup();
    if ran == 0 || distinct.len() != ran || ran + done != nodes {
        return Err(format!(
            "expected each night to run exactly once and the other replicas to find it done; \
             runs for nights {nights:?}, {done} found it done"
        )
        .into());
    }
    Ok(())
}
