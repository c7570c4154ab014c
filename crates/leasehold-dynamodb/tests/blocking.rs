//! The blocking facade on DynamoDB, from plain threads with no runtime of their own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, blocking, store::Release};
use leasehold_testkit::unique_name;

fn endpoint() -> Option<String> {
    let endpoint = common::endpoint()?;
    // Create the table on a runtime of its own; the electors below bring their own.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(common::ensure_table(&endpoint));
    Some(endpoint)
}

fn elector(endpoint: &str, node: &str) -> blocking::Elector {
    let options = ElectionOptions::builder()
        .node_id(node)
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(10))
        .auto_extend(true)
        .build()
        .unwrap();
    blocking::Elector::with_options(Arc::new(common::store(endpoint)), options).unwrap()
}

#[test]
fn two_blocking_nodes_take_turns_with_rising_fences() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let (a, b) = (elector(&endpoint, "node-a"), elector(&endpoint, "node-b"));
    let name = unique_name("blocking");
    let fence_a = a
        .run_if_leader(&name, |ctx| {
            // The closure runs on this thread, outside any runtime: it may block.
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(b.run_if_leader(&name, |_| ()).unwrap(), None, "b skips");
            let state = b.state(&name).unwrap();
            assert_eq!(state.holder().map(|h| h.owner.as_str()), Some("node-a"));
            ctx.fence()
        })
        .unwrap()
        .expect("a is elected");
    let fence_b = b.run_if_leader(&name, |ctx| ctx.fence()).unwrap().unwrap();
    assert!(fence_b > fence_a);

    let guard = a.try_acquire(&name).unwrap().elected().unwrap();
    assert!(b.try_acquire(&name).unwrap().elected().is_none());
    assert!(matches!(
        guard.extend(Duration::from_secs(20)).unwrap(),
        leasehold::store::Extension::Extended { .. }
    ));
    assert_eq!(guard.release().unwrap(), Release::Released);
    assert!(b.state(&name).unwrap().is_free());
}

#[test]
fn a_panicking_blocking_closure_releases_the_lease() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let (a, b) = (elector(&endpoint, "node-a"), elector(&endpoint, "node-b"));
    let name = unique_name("blocking-panic");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.run_if_leader(&name, |_| panic!("deliberate panic in a blocking action"))
    }));
    assert!(panicked.is_err(), "the panic propagates to the caller");
    assert!(
        b.run_if_leader(&name, |_| ()).unwrap().is_some(),
        "the lease was released when the closure panicked (10 s lease, no waiting)"
    );
}
