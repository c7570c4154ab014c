//! Criterion benchmarks of the core on [`MemoryStore`]: what `Elector::run_if_leader` costs on top
//! of the store it drives.
//!
//! * `floor/acquire_release`: one raw `try_acquire` + `release` pair on the store, no elector. This
//!   is the least any elector could spend per run on this store.
//! * `run_if_leader/uncontended`: one task, one lock, `wait = 0`, the action returns a number.
//! * `run_if_leader/uncontended_lockname`: the same, with the name passed as a `LockName`
//!   validated once, instead of a `&str` validated (and allocated) on every call.
//! * `run_if_leader/auto_extend`: the same with the watchdog on (one task spawned per run).
//! * `run_if_leader/subscribed`: the same as `uncontended` with one event listener attached, so
//!   `Elected` and `Released` events are built and sent.
//! * `contended/8_tasks_one_lock`: 8 tasks on a multi-thread runtime call `run_if_leader` on the
//!   same lock with a generous wait; one iteration is the whole batch of 8 (throughput = 8 calls).
//!
//! Run: `cargo bench -p leasehold --bench memory -- --warm-up-time 1 --measurement-time 3`.
//! Results and the machine they came from are in `docs/benchmarks.md`. The same floor and
//! uncontended calls counted in instructions (which do not depend on the machine's load) are the
//! example `per_call` (`per_call instructions`, run by `scripts/bench-report`).

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leasehold::store::AcquireRequest;
use leasehold::{
    ElectionOptions, Elector, IntoLockName, LeaseStore, LockName, MemoryStore, store::Token,
};
use tokio::runtime::{Builder, Runtime};

const CONTENDERS: usize = 8;

fn current_thread() -> Runtime {
    match Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => panic!("cannot build a tokio runtime: {e}"),
    }
}

fn multi_thread() -> Runtime {
    match Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => panic!("cannot build a tokio runtime: {e}"),
    }
}

fn options(wait: Duration, auto_extend: bool) -> ElectionOptions {
    let built = ElectionOptions::builder()
        .wait(wait)
        .lease(Duration::from_secs(30))
        .auto_extend(auto_extend)
        .node_id("bench-node")
        .build();
    match built {
        Ok(o) => o,
        Err(e) => panic!("invalid bench options: {e}"),
    }
}

fn elector(wait: Duration, auto_extend: bool) -> Elector {
    Elector::with_options(Arc::new(MemoryStore::new()), options(wait, auto_extend))
}

/// Panics (failing the benchmark) unless the run was elected: a skipped or failed run would make
/// the figure meaningless.
async fn run_once(elector: &Elector) -> u64 {
    run_named(elector, "bench").await
}

async fn run_named(elector: &Elector, name: impl IntoLockName) -> u64 {
    match elector.run_if_leader(name, |_ctx| async { 42u64 }).await {
        Ok(Some(v)) => v,
        Ok(None) => panic!("uncontended run was skipped"),
        Err(e) => panic!("run failed: {e}"),
    }
}

fn lock_name() -> LockName {
    match LockName::new("bench") {
        Ok(n) => n,
        Err(e) => panic!("{e}"),
    }
}

fn floor(c: &mut Criterion) {
    let rt = current_thread();
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let req = AcquireRequest::new(
        lock_name(),
        1,
        "bench-node",
        Token::random(),
        Duration::from_secs(30),
    );
    let mut group = c.benchmark_group("floor");
    group.bench_function("acquire_release", |b| {
        b.to_async(&rt).iter(|| async {
            let lease = match store.try_acquire(black_box(&req)).await {
                Ok(leasehold::store::Acquisition::Elected(lease)) => lease,
                other => panic!("floor acquire failed: {other:?}"),
            };
            black_box(store.release(&lease, Duration::ZERO).await.is_ok())
        });
    });
    group.finish();
}

fn uncontended(c: &mut Criterion) {
    let rt = current_thread();
    let mut group = c.benchmark_group("run_if_leader");

    let plain = elector(Duration::ZERO, false);
    group.bench_function("uncontended", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(run_once(&plain).await) });
    });

    // The same with a `LockName` validated once up front instead of a `&str` per call.
    let named = elector(Duration::ZERO, false);
    let name = lock_name();
    group.bench_function("uncontended_lockname", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(run_named(&named, &name).await) });
    });

    let extending = elector(Duration::ZERO, true);
    group.bench_function("auto_extend", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(run_once(&extending).await) });
    });

    let listened = elector(Duration::ZERO, false);
    let events = RefCell::new(listened.subscribe());
    group.bench_function("subscribed", |b| {
        b.to_async(&rt).iter(|| async {
            let v = run_once(&listened).await;
            // Drain so the listener never lags; draining is part of the cost of listening.
            while events.borrow_mut().try_recv().is_ok() {}
            black_box(v)
        });
    });
    group.finish();
}

fn contended(c: &mut Criterion) {
    let rt = multi_thread();
    let shared = elector(Duration::from_secs(30), false);
    let mut group = c.benchmark_group("contended");
    group.throughput(Throughput::Elements(CONTENDERS as u64));
    group.bench_function("8_tasks_one_lock", |b| {
        b.to_async(&rt).iter(|| async {
            let mut tasks = Vec::with_capacity(CONTENDERS);
            for _ in 0..CONTENDERS {
                let e = shared.clone();
                tasks.push(tokio::spawn(async move { run_once(&e).await }));
            }
            let mut sum = 0u64;
            for t in tasks {
                match t.await {
                    Ok(v) => sum += v,
                    Err(e) => panic!("contender task failed: {e}"),
                }
            }
            black_box(sum)
        });
    });
    group.finish();
}

criterion_group!(benches, floor, uncontended, contended);
criterion_main!(benches);
