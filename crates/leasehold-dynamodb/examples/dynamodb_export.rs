//! The `dynamodb-export` scenario: several nodes run the same scheduled export job against a
//! DynamoDB lease table; only the leader exports, and it hands its fence to the export target,
//! which rejects writes carrying a fence lower than one it has already accepted.
//!
//! Each node has its own DynamoDB client (as separate hosts would). The job runs every 500 ms,
//! period-aligned (the default): every node attempts each period near its start, and the table's
//! period ledger grants it to one of them, so nodes started out of phase skip instead of
//! exporting twice. Midway, one node stalls inside its export (a long GC pause, a frozen VM) for longer than
//! its lease: another node takes over and exports with a higher fence, and when the stalled node
//! wakes up its write is rejected as stale — the fence, not the timing, keeps the export correct.
//!
//! Run against dynalite (see `scripts/lib/dynamodb.sh`) or any DynamoDB endpoint:
//!
//! ```text
//! cargo run -p leasehold-dynamodb --example dynamodb_export -- --endpoint http://127.0.0.1:8000
//! LEASEHOLD_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo run -p leasehold-dynamodb --example dynamodb_export
//! ```
//!
//! Options: `--seconds N` (default 6), `--nodes N` (default 3), `--table NAME` (default
//! `leasehold_example_leases`, created if missing).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{Credentials, Region};
use leasehold::{CancellationToken, ElectionOptions, Elector, Job, LeaderContext, Schedule};
use leasehold_dynamodb::{DynamoDbOptions, DynamoDbStore};

const JOB: &str = "dynamodb-export";
const PERIOD: Duration = Duration::from_millis(500);
const LEASE: Duration = Duration::from_millis(1500);
const SKEW: Duration = Duration::from_millis(250);
const STALL: Duration = Duration::from_millis(3000);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The export target (a bucket, a warehouse table, a downstream API). It keeps the highest fence
/// it has accepted and refuses lower ones — the check a real target does with a conditional
/// write such as `attribute_not_exists(fence) OR fence <= :fence`.
#[derive(Default)]
struct ExportTarget {
    state: Mutex<TargetState>,
}

#[derive(Default)]
struct TargetState {
    highest_fence: u64,
    accepted: Vec<(String, u64, u64)>,
    rejected: Vec<(String, u64, u64)>,
}

impl ExportTarget {
    fn write(&self, node: &str, fence: u64, batch: u64) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if fence < state.highest_fence {
            state.rejected.push((node.to_owned(), fence, batch));
            return Err(format!(
                "export target rejected batch {batch} from {node}: fence {fence} < {}",
                state.highest_fence
            ));
        }
        state.highest_fence = fence;
        state.accepted.push((node.to_owned(), fence, batch));
        Ok(())
    }
}

struct Args {
    endpoint: String,
    seconds: u64,
    nodes: usize,
    table: String,
}

fn parse_args() -> Result<Args, String> {
    let mut endpoint = std::env::var("LEASEHOLD_TEST_DYNAMODB_ENDPOINT").ok();
    let (mut seconds, mut nodes, mut table) = (6, 3, "leasehold_example_leases".to_owned());
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--endpoint" => endpoint = Some(value()?),
            "--seconds" => seconds = value()?.parse().map_err(|_| "--seconds takes a number")?,
            "--nodes" => nodes = value()?.parse().map_err(|_| "--nodes takes a number")?,
            "--table" => table = value()?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let endpoint = endpoint.ok_or(
        "no endpoint: pass --endpoint http://127.0.0.1:8000 or set LEASEHOLD_TEST_DYNAMODB_ENDPOINT",
    )?;
    if nodes < 2 {
        return Err("--nodes must be at least 2 (someone has to take over)".into());
    }
    Ok(Args {
        endpoint,
        seconds: seconds.max(STALL.as_secs() + 2),
        nodes,
        table,
    })
}

/// The application's client: from the environment, pointed at `endpoint`, with dummy
/// credentials and region for an emulator when none are configured.
async fn client(endpoint: &str) -> Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).endpoint_url(endpoint);
    if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none()
    {
        loader = loader.region(Region::new("us-east-1"));
    }
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        loader = loader.credentials_provider(Credentials::new(
            "example", "example", None, None, "example",
        ));
    }
    Client::new(&loader.load().await)
}

/// Starts one node's schedule; it exports while it is the leader.
async fn node(
    name: String,
    args: &Args,
    target: Arc<ExportTarget>,
    stall_once: Arc<AtomicBool>,
    batches: Arc<AtomicU64>,
    stop: CancellationToken,
) -> Result<leasehold::schedule::ScheduleHandle, BoxError> {
    let store = DynamoDbStore::new(
        client(&args.endpoint).await,
        DynamoDbOptions::default()
            .with_table(args.table.clone())
            .with_clock_skew_tolerance(SKEW)
            .with_node_id(name.clone()),
    )?;
    let options = ElectionOptions::builder()
        .node_id(name.clone())
        .lease(LEASE)
        .build()?;
    let elector = Elector::with_options(Arc::new(store), options);
    let job = Job::every(JOB, PERIOD, move |ctx: LeaderContext| {
        let (name, target, stall_once, batches) = (
            name.clone(),
            Arc::clone(&target),
            Arc::clone(&stall_once),
            Arc::clone(&batches),
        );
        async move {
            let fence = ctx.fence();
            let batch = batches.fetch_add(1, Ordering::SeqCst);
            if batch == 3 && stall_once.swap(false, Ordering::SeqCst) {
                println!(
                    "  {name}: stalls for {STALL:?} inside export of batch {batch} (fence {fence})"
                );
                tokio::time::sleep(STALL).await;
            }
            target.write(&name, fence, batch)?;
            println!("  {name}: exported batch {batch} with fence {fence}");
            Ok::<_, String>(())
        }
    });
    Ok(Schedule::new(elector).job(job).start(stop)?)
}

async fn run(args: Args) -> Result<bool, BoxError> {
    let setup = DynamoDbStore::new(
        client(&args.endpoint).await,
        DynamoDbOptions::default()
            .with_table(args.table.clone())
            .with_clock_skew_tolerance(SKEW),
    )?;
    setup.create_table().await?;
    println!(
        "{} nodes export every {PERIOD:?} for {} s through table {} (lease {LEASE:?}, skew tolerance {SKEW:?})",
        args.nodes, args.seconds, args.table
    );

    let target = Arc::new(ExportTarget::default());
    let stall_once = Arc::new(AtomicBool::new(true));
    let batches = Arc::new(AtomicU64::new(0));
    let stop = CancellationToken::new();
    let mut handles = Vec::new();
    for i in 0..args.nodes {
        let name = format!("export-node-{i}");
        handles.push(
            node(
                name,
                &args,
                Arc::clone(&target),
                Arc::clone(&stall_once),
                Arc::clone(&batches),
                stop.clone(),
            )
            .await?,
        );
        tokio::time::sleep(PERIOD / u32::try_from(args.nodes).unwrap_or(1)).await; // out of phase
    }
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    stop.cancel();
    for handle in handles {
        handle.stopped().await;
    }

    // Every job released its lease when it stopped: nothing may remain locked (the wait allows
    // for a release still on its way to the table).
    let lock = leasehold::LockName::new(JOB)?;
    let deadline = tokio::time::Instant::now() + PERIOD + SKEW + Duration::from_secs(1);
    let after = loop {
        let state = leasehold::LeaseStore::state(&setup, &lock, 1).await?;
        if state.is_free() || tokio::time::Instant::now() >= deadline {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let state = target.state.lock().unwrap_or_else(|p| p.into_inner());
    let fences: Vec<u64> = state.accepted.iter().map(|(_, f, _)| *f).collect();
    let increasing = fences.windows(2).all(|w| w[0] < w[1]);
    println!("\nsummary");
    println!("  exports accepted:      {}", state.accepted.len());
    for node in 0..args.nodes {
        let name = format!("export-node-{node}");
        let n = state.accepted.iter().filter(|(w, ..)| *w == name).count();
        println!("    {name}: {n}");
    }
    println!("  stale writes rejected: {}", state.rejected.len());
    for (node, fence, batch) in &state.rejected {
        println!(
            "    {node}: batch {batch} with fence {fence} (below {})",
            state.highest_fence
        );
    }
    println!("  accepted fences strictly increase: {increasing}");
    println!(
        "  lock free once the last period ended: {}",
        after.is_free()
    );
    Ok(increasing && !state.accepted.is_empty() && after.is_free())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = match parse_args() {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("dynamodb_export: {msg}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("dynamodb_export: an invariant failed (see the summary)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("dynamodb_export: {e}");
            ExitCode::FAILURE
        }
    }
}
