//! Async quick start: run a job only where elected, hand its fence to the resource, skip elsewhere.
//!
//! Run: `cargo run -p leasehold-examples --example quickstart`
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, MemoryStore, Outcome};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One store per deployment; every replica points its elector at it. MemoryStore coordinates
    // tasks in this process only; the SQL, Redis and DynamoDB stores coordinate machines.
    let store = Arc::new(MemoryStore::new());
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO) // the default: skip at once if another node holds the lock
        .lease(Duration::from_secs(30)) // the store frees the lock after this without renewal
        .auto_extend(true) // renew every lease/3 while the action runs
        .build()?;
    let elector = Elector::with_options(store, options);

    // Ok(Some(value)) when elected, Ok(None) on contention, Err only for real failures.
    match elector
        .run_if_leader("nightly-report", |ctx| async move { ctx.fence() })
        .await?
    {
        Some(fence) => println!("elected: ran nightly-report with fence {fence}"),
        None => println!("skipped: another node is running nightly-report"),
    }

    // While a lease is held elsewhere, the same call skips.
    let held = elector.try_acquire("nightly-report").await?.elected();
    let again = elector
        .run_if_leader("nightly-report", |_ctx| async { "ran twice?" })
        .await?;
    println!("second run while held: {again:?}");
    if let Some(guard) = held {
        guard.release().await?;
    }

    // run() keeps "skipped" apart from "the action failed".
    let outcome = elector
        .run("import", |_ctx| async {
            Err::<u32, _>("input file missing")
        })
        .await?;
    match outcome {
        Outcome::Elected(rows) => println!("imported {rows} rows"),
        Outcome::Taken(_) | Outcome::AlreadyRan(_) => println!("import skipped: running elsewhere"),
        Outcome::ActionFailed(e) => println!("import ran here and failed: {e}"),
    }
    Ok(())
}
