//! The blocking facade, called from plain threads with no runtime of their own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::{ElectionOptions, MemoryStore, Outcome, blocking};

fn elector(store: &Arc<MemoryStore>, o: leasehold::ElectionOptionsBuilder) -> blocking::Elector {
    blocking::Elector::with_options(store.clone(), o.build().unwrap()).unwrap()
}

#[test]
fn runs_a_sync_closure_and_skips_on_contention() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, ElectionOptions::builder().wait(Duration::ZERO));
    assert_eq!(e.run_if_leader("job", |ctx| ctx.fence()).unwrap(), Some(1));
    let held = e.try_acquire("job").unwrap().elected().unwrap();
    assert_eq!(e.run_if_leader("job", |_| ()).unwrap(), None);
    let taken = e.run("job", |_| Ok::<_, String>(1)).unwrap();
    assert!(taken.is_taken(), "{taken:?}");
    held.release().unwrap();
    assert_eq!(
        e.run("job", |_| Err::<(), _>("x")).unwrap(),
        Outcome::ActionFailed("x")
    );
    assert!(e.state("job").unwrap().is_free());
}

/// Groups are the same elector with `max_leaders`: two slots, each with its own fence; a third
/// caller skips.
#[test]
fn a_group_is_an_elector_with_more_leaders() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(
        &store,
        ElectionOptions::builder()
            .max_leaders(2)
            .wait(Duration::ZERO),
    );
    let a = e.try_acquire("pool").unwrap().elected().expect("slot 0");
    let b = e.try_acquire("pool").unwrap().elected().expect("slot 1");
    assert_eq!((a.slot(), b.slot()), (0, 1));
    assert_eq!(e.run_if_leader("pool", |_| ()).unwrap(), None);
    assert_eq!(e.state("pool").unwrap().available(), 0);
    b.release().unwrap();
    assert_eq!(e.run_if_leader("pool", |ctx| ctx.slot()).unwrap(), Some(1));
    a.release().unwrap();
}

#[test]
fn a_panicking_closure_releases_the_lease() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, ElectionOptions::builder().wait(Duration::ZERO));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        e.run_if_leader("job", |_| panic!("boom"))
    }));
    assert!(r.is_err());
    assert!(e.state("job").unwrap().is_free());
    assert_eq!(e.run_if_leader("job", |ctx| ctx.fence()).unwrap(), Some(2));
}

#[test]
fn a_dropped_guard_releases_in_the_background() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(
        &store,
        ElectionOptions::builder().wait(Duration::from_secs(5)),
    );
    let g = e.try_acquire("job").unwrap().elected().unwrap();
    drop(g);
    let start = Instant::now();
    assert!(e.try_acquire("job").unwrap().elected().is_some());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "released promptly, not at expiry"
    );
}

#[test]
fn the_private_runtime_renews_while_the_closure_blocks() {
    let store = Arc::new(MemoryStore::new());
    let lease = Duration::from_millis(300);
    let e = elector(
        &store,
        ElectionOptions::builder()
            .wait(Duration::ZERO)
            .lease(lease)
            .auto_extend(true),
    );
    let other = elector(&store, ElectionOptions::builder().wait(Duration::ZERO));
    let out = e
        .run_if_leader("job", |ctx| {
            let mut skipped = 0;
            for _ in 0..10 {
                std::thread::sleep(lease / 3);
                skipped += usize::from(other.try_acquire("job").unwrap().elected().is_none());
            }
            (skipped, ctx.is_lost())
        })
        .unwrap();
    assert_eq!(
        out,
        Some((10, false)),
        "held for over three leases without loss"
    );
}
