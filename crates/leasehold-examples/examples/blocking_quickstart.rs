//! Blocking quick start: the same elector for synchronous code, no runtime of your own needed.
//!
//! Run: `cargo run -p leasehold-examples --example blocking_quickstart`
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, MemoryStore, Outcome, blocking};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(30))
        .auto_extend(true) // a private runtime thread renews the lease while the closure runs
        .build()?;
    let elector = blocking::Elector::with_options(Arc::new(MemoryStore::new()), options)?;

    // The closure runs on this thread if elected; Ok(None) on contention.
    let report = elector.run_if_leader("nightly-report", |ctx| {
        // A closure cannot be cancelled from outside: long loops should check ctx.is_lost().
        format!("report written with fence {}", ctx.fence())
    })?;
    match report {
        Some(line) => println!("elected: {line}"),
        None => println!("skipped: another node is running nightly-report"),
    }

    // Code that manages the lease itself holds a guard; dropping it also releases.
    if let Outcome::Elected(guard) = elector.try_acquire("migrations")? {
        println!("holding migrations with fence {}", guard.fence());
        let second = elector.run_if_leader("migrations", |_ctx| "ran twice?")?;
        println!("second run while held: {second:?}");
        guard.release()?;
    }

    // run() for closures returning Result keeps skipped and failed apart.
    match elector.run("import", |_ctx| Err::<u32, _>("input file missing"))? {
        Outcome::Elected(rows) => println!("imported {rows} rows"),
        Outcome::Taken(_) | Outcome::AlreadyRan(_) => println!("import skipped: running elsewhere"),
        Outcome::ActionFailed(e) => println!("import ran here and failed: {e}"),
    }
    Ok(())
}
