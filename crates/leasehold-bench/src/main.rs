//! `leasehold-bench`: leasehold beside the floor — the fewest raw round trips the backend needs
//! for one acquire and one release, issued with the same client — in one run, interleaved so
//! that drift on a shared machine hits both sides alike.
//!
//! ```text
//! cargo run --release -p leasehold-bench -- --backend postgres --seconds 10
//! ```
//!
//! Prints one markdown table row per scenario: ops/s of each side and their ratio. With
//! `--backend redis` it also runs `rslock` beside them, 64 tasks on distinct locks, 8 tasks
//! contending for one lock, and hand-off latency with and without release notifications:
//!
//! ```text
//! cargo run --release -p leasehold-bench -- --backend redis --seconds 10
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod dynamodb;
mod floor;
mod measure;
mod redis;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore};

use crate::args::Args;
use crate::floor::Floor;
use crate::measure::{Row, interleave};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    if args.backend == "redis" {
        return match redis::run(&args.url, args.seconds, args.handoffs).await {
            Ok(report) => {
                print!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("leasehold-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match run(&args).await {
        Ok(rows) => {
            println!("| backend | scenario | leasehold ops/s | floor ops/s | ratio |");
            println!("|---|---|---:|---:|---:|");
            for row in rows {
                println!("{row}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("leasehold-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let (store, floor): (Arc<dyn LeaseStore>, Floor) =
        floor::open(&args.backend, &args.url).await?;
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(30))
        .build()?;
    let elector = Elector::with_options(Arc::clone(&store), options);
    let lock = format!("bench-{}", leasehold::Token::random().to_hex());
    let floor_lock = leasehold::LockName::new(format!("{lock}-floor"))?;
    // Warm up both sides (connections, prepared statements, table creation).
    for _ in 0..20 {
        elector.run_if_leader(&lock, |_| async {}).await?;
        floor.round_trip(&floor_lock).await?;
    }
    let total = Duration::from_secs_f64(args.seconds);
    let row = interleave(
        &args.backend,
        "uncontended run_if_leader",
        total,
        || async {
            let ran = elector.run_if_leader(&lock, |_| async {}).await?;
            if ran.is_none() {
                return Err("uncontended lock was busy".into());
            }
            Ok(())
        },
        || floor.round_trip(&floor_lock),
    )
    .await?;
    Ok(vec![row])
}
