//! A stable leader: three replicas run `Elector::lead` on one lock; one leads at a time, the
//! others wait. A watcher follows the leadership through `Elector::leadership`. Each term hands
//! over after a while (the action resigns); at the end, cancelling the token stops every replica
//! and leaves the lock free.
//!
//! Run: `cargo run -p leasehold-examples --example stable_leader`
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use leasehold::{CancellationToken, ElectionOptions, Elector, LeaseStore, MemoryStore, TermEnd};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // MemoryStore coordinates tasks in this process; with a SQL, Redis or DynamoDB store the
    // replicas are processes on different machines and the code is the same.
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let stop = CancellationToken::new();

    let watcher = Elector::new(Arc::clone(&store));
    let mut changes = watcher.leadership_every("reconciler", Duration::from_millis(100))?;
    let watching = tokio::spawn(async move {
        while let Some(change) = changes.next().await {
            match change.leader {
                Some(h) => println!("watcher: {} leads with fence {}", h.owner, h.fence),
                None => println!("watcher: nobody leads"),
            }
        }
    });

    let mut replicas = Vec::new();
    for n in 1..=3 {
        let options = ElectionOptions::builder()
            .node_id(format!("replica-{n}"))
            .lease(Duration::from_secs(2))
            .build()?;
        let elector = Elector::with_options(Arc::clone(&store), options);
        let stop = stop.clone();
        replicas.push(tokio::spawn(async move {
            elector
                .lead("reconciler", stop, |ctx| async move {
                    println!("replica-{n}: term begins with fence {}", ctx.fence());
                    // Work as the leader; `lead` drops this future if the lease is lost or on stop.
                    tokio::time::sleep(Duration::from_millis(700)).await;
                    println!("replica-{n}: resigning");
                    TermEnd::Resign
                })
                .await
        }));
    }

    tokio::select! {
        () = leasehold::shutdown_signal() => {} // SIGINT or SIGTERM
        () = tokio::time::sleep(Duration::from_secs(3)) => {} // the demo stops itself
    }
    stop.cancel();
    for replica in replicas {
        replica.await??; // each released its lease before returning
    }
    tokio::time::sleep(Duration::from_millis(200)).await; // let the watcher see the free lock
    watching.abort();
    assert!(watcher.state("reconciler").await?.is_free());
    println!("stopped; the lock is free");
    Ok(())
}
