//! `Elector::guarded_stream`: items flow only while the lease is held, on paused time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use leasehold::{ElectionOptions, Elector, LostReason, MemoryStore, lead::StreamEnd};

fn elector(store: &Arc<MemoryStore>, node: &str, auto_extend: bool) -> Elector {
    Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .node_id(node)
            .lease(Duration::from_secs(3))
            .wait(Duration::ZERO)
            .auto_extend(auto_extend)
            .build()
            .unwrap(),
    )
}

/// One item a second, for `n` seconds.
fn ticks(n: u64) -> impl futures::Stream<Item = u64> + Send {
    futures::stream::iter(0..n).then(|i| async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        i
    })
}

#[tokio::test(start_paused = true)]
async fn a_stream_longer_than_the_lease_is_read_to_its_end_and_then_released() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "a", true);
    let mut s = a.guarded_stream("feed", |_| ticks(10)).unwrap();
    assert!(s.end().is_none(), "not ended before it is read");
    let read: Vec<u64> = s.by_ref().collect().await;
    assert_eq!(
        read,
        (0..10).collect::<Vec<_>>(),
        "10 s of items under a 3 s lease"
    );
    assert!(matches!(s.end(), Some(StreamEnd::Completed)));
    assert!(
        a.state("feed").await.unwrap().holders.is_empty(),
        "released at the end"
    );
}

#[tokio::test(start_paused = true)]
async fn held_elsewhere_the_stream_is_empty_and_never_made() {
    let store = Arc::new(MemoryStore::new());
    let holder = elector(&store, "a", true)
        .try_acquire("feed")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let made = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = made.clone();
    let mut s = elector(&store, "b", true)
        .guarded_stream("feed", move |_| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            ticks(3)
        })
        .unwrap();
    assert_eq!(s.next().await, None);
    assert!(matches!(s.end(), Some(StreamEnd::Skipped)));
    assert!(
        !made.load(std::sync::atomic::Ordering::SeqCst),
        "skipped: the stream was not built"
    );
    holder.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_broken_lease_ends_the_stream_before_the_next_item() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "a", true);
    let mut s = a.guarded_stream("feed", |_| ticks(1_000)).unwrap();
    assert_eq!(s.next().await, Some(0));
    // An operator breaks the lease; the next renewal (within a third of the lease) finds it gone.
    let freed = a.force_release("feed").await.unwrap();
    assert_eq!(freed.len(), 1);
    let rest: Vec<u64> = s.by_ref().collect().await;
    assert!(
        rest.len() <= 2,
        "read {} items after the lease was broken",
        rest.len()
    );
    assert!(
        matches!(s.end(), Some(StreamEnd::Lost(LostReason::NotHeld))),
        "the end says the lease was lost"
    );
}

#[tokio::test(start_paused = true)]
async fn without_auto_extend_the_stream_is_bounded_by_one_lease() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "a", false);
    let mut s = a.guarded_stream("feed", |_| ticks(1_000)).unwrap();
    let read: Vec<u64> = s.by_ref().collect().await;
    assert!(
        (1..3).contains(&read.len()),
        "a 3 s lease (less its safety margin) lets 1 or 2 one-second items through, read {}",
        read.len()
    );
    assert!(matches!(
        s.end(),
        Some(StreamEnd::Lost(LostReason::DeadlinePassed))
    ));
    assert!(
        a.state("feed").await.unwrap().holders.is_empty(),
        "released"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_releases_the_lease() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, "a", true);
    let mut s = a.guarded_stream("feed", |_| ticks(1_000)).unwrap();
    assert_eq!(s.next().await, Some(0));
    assert_eq!(
        a.state("feed").await.unwrap().holders.len(),
        1,
        "held while read"
    );
    drop(s);
    a.settled().await;
    assert!(
        a.state("feed").await.unwrap().holders.is_empty(),
        "released on drop"
    );
    let b = elector(&store, "b", true);
    assert!(
        b.try_acquire("feed").await.unwrap().elected().is_some(),
        "free for the next node"
    );
}

#[tokio::test(start_paused = true)]
async fn an_invalid_name_is_an_error_at_once() {
    let store = Arc::new(MemoryStore::new());
    let err = elector(&store, "a", true)
        .guarded_stream("bad name", |_| ticks(1))
        .unwrap_err();
    assert!(err.to_string().contains("bad name"), "{err}");
}
