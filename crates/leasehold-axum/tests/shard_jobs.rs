//! `ShardJobs`: a job per owned shard, over the memory store on paused tokio time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use leasehold::partition::PartitionSet;
use leasehold::{CancellationToken, ElectionOptions, Elector, MemoryStore};
use leasehold_axum::{Management, RunningShards, ShardJobs};
use serde_json::Value;
use tokio::time::{Instant, sleep};
use tower::ServiceExt;

/// Per shard: the runs in flight now, the most ever in flight at once, and the nodes that ran it.
#[derive(Default)]
struct Tally {
    in_flight: BTreeMap<u32, u32>,
    most: u32,
    runs: BTreeMap<u32, Vec<String>>,
}

fn elector(store: &Arc<MemoryStore>, node: &str) -> Elector {
    let options = ElectionOptions::builder()
        .node_id(node)
        .lease(Duration::from_secs(3))
        .build()
        .unwrap();
    Elector::with_options(store.clone(), options)
}

async fn start(store: &Arc<MemoryStore>, node: &str, tally: &Arc<Mutex<Tally>>) -> RunningShards {
    let elector = elector(store, node);
    let set = PartitionSet::builder("tenants", 8).build().unwrap();
    let (tally, name) = (Arc::clone(tally), node.to_owned());
    ShardJobs::every(set, Duration::from_millis(200), move |shard, ctx| {
        let (tally, name) = (Arc::clone(&tally), name.clone());
        async move {
            {
                let mut t = tally.lock().unwrap();
                let n = t.in_flight.entry(shard).or_default();
                *n += 1;
                let now = *n;
                t.most = t.most.max(now);
                t.runs.entry(shard).or_default().push(name);
            }
            assert!(ctx.fence() > 0);
            sleep(Duration::from_millis(150)).await;
            *tally.lock().unwrap().in_flight.entry(shard).or_default() -= 1;
            Ok::<_, String>(())
        }
    })
    .start(elector, CancellationToken::new())
    .await
    .unwrap()
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let began = Instant::now();
    while !done() {
        assert!(began.elapsed() < Duration::from_secs(60), "{what}");
        sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn two_nodes_split_the_shards_and_one_leaving_hands_its_shards_over() {
    let store = Arc::new(MemoryStore::new());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let a = start(&store, "a", &tally).await;
    let alone = a.wait_settled().await;
    assert_eq!(alone.owned, (0..8).collect::<Vec<_>>());
    assert_eq!(alone.members, ["a"]);

    let b = start(&store, "b", &tally).await;
    until("a and b own 4 shards each", || {
        a.owned().len() == 4 && b.owned().len() == 4
    })
    .await;
    let status = b.status();
    assert_eq!(
        (status.set.as_str(), status.node.as_str(), status.shards),
        ("tenants", "b", 8)
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["owned"].as_array().map(Vec::len), Some(4));
    // Every shard of b ran on b after it ran on a.
    sleep(Duration::from_secs(1)).await;
    for shard in b.owned() {
        let runs = tally.lock().unwrap().runs[&shard].clone();
        assert_eq!(
            runs.first().map(String::as_str),
            Some("a"),
            "{shard}: {runs:?}"
        );
        assert_eq!(
            runs.last().map(String::as_str),
            Some("b"),
            "{shard}: {runs:?}"
        );
    }

    let left = Instant::now();
    a.shutdown().await;
    until("b owns all 8 after a left", || b.owned().len() == 8).await;
    // A graceful leave hands the shards over without waiting for their 3 s leases.
    assert!(
        left.elapsed() < Duration::from_secs(3),
        "{:?}",
        left.elapsed()
    );
    assert_eq!(
        tally.lock().unwrap().most,
        1,
        "a shard ran on two nodes at once"
    );
    b.shutdown().await;
    let in_flight: u32 = tally.lock().unwrap().in_flight.values().sum();
    assert_eq!(in_flight, 0, "every run ended before shutdown returned");
}

/// The management route reports each node's shard job: the shards it runs, the members it sees,
/// whether the set is settled — and still the locks it was given.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_management_route_reports_the_shards_each_node_runs() {
    let store = Arc::new(MemoryStore::new());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let a = start(&store, "a", &tally).await;
    let b = start(&store, "b", &tally).await;
    until("a and b own 4 shards each", || {
        a.owned().len() == 4 && b.owned().len() == 4
    })
    .await;
    a.wait_settled().await;
    b.wait_settled().await;
    let report = |jobs: &RunningShards, node: &str| {
        Management::new(elector(&store, node))
            .lock("report")
            .shards(jobs)
            .behind_caller_auth()
            .router::<()>()
            .unwrap()
    };
    let get = |router: axum::Router| async move {
        let req = Request::get("/management/leader-election")
            .body(Body::empty())
            .unwrap();
        let res = router.oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice::<Value>(&body).unwrap()
    };
    let (on_a, on_b) = (get(report(&a, "a")).await, get(report(&b, "b")).await);
    assert_eq!(on_a["locks"][0]["name"], "report");
    let mut owned = Vec::new();
    for (json, node) in [(&on_a, "a"), (&on_b, "b")] {
        let entry = &json["partitions"][0];
        assert_eq!(entry["set"], "tenants", "{json}");
        assert_eq!(entry["node"], node, "{json}");
        assert_eq!(entry["shards"], 8, "{json}");
        assert_eq!(entry["members"], serde_json::json!(["a", "b"]), "{json}");
        assert_eq!(entry["settled"], true, "{json}");
        let mine: Vec<u64> = entry["owned"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        assert_eq!(mine.len(), 4, "{json}");
        owned.extend(mine);
    }
    owned.sort_unstable();
    assert_eq!(
        owned,
        (0..8).collect::<Vec<u64>>(),
        "each shard on one node"
    );
    let plain = Management::new(elector(&store, "c"))
        .lock("report")
        .status()
        .await;
    assert!(plain.partitions.is_empty());
    assert!(
        serde_json::to_value(&plain)
            .unwrap()
            .get("partitions")
            .is_none(),
        "no shard job: no partitions key"
    );
    a.shutdown().await;
    b.shutdown().await;
}
