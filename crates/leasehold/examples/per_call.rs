//! Runs N uncontended `run_if_leader` calls (`ours`) or N raw acquire + release pairs on the same
//! store (`floor`), for counting instructions per call, which does not depend on machine load:
//!
//! ```text
//! cargo build --release -p leasehold --example per_call
//! for n in 1000 21000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/per_call ours $n; done   # (I(21000) - I(1000)) / 20000 per call
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::store::AcquireRequest;
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName, MemoryStore, Token};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next()) else {
        eprintln!("usage: per_call ours|floor N");
        std::process::exit(2);
    };
    let n: u32 = n.parse()?;
    let store = Arc::new(MemoryStore::new());
    let elector = Elector::with_options(
        store.clone(),
        ElectionOptions::builder().wait(Duration::ZERO).build()?,
    );
    let lock = LockName::new("per-call")?;
    let start = Instant::now();
    for _ in 0..n {
        match mode.as_str() {
            "ours" => {
                elector
                    .run_if_leader(&lock, |_| async { 1u64 })
                    .await?
                    .ok_or("lock busy")?;
            }
            "floor" => {
                let req = AcquireRequest::new(
                    lock.clone(),
                    1,
                    "floor",
                    Token::random(),
                    Duration::from_secs(60),
                );
                let lease = store
                    .try_acquire(&req)
                    .await?
                    .granted()
                    .ok_or("lock busy")?;
                store.release(&lease, Duration::ZERO).await?;
            }
            other => return Err(format!("unknown mode {other:?}").into()),
        }
    }
    println!(
        "{mode}: {n} calls, {:?} per call",
        start.elapsed() / n.max(1)
    );
    Ok(())
}
