//! The store's own metrics (`leasehold_dynamodb::metrics`) against dynalite: requests by
//! operation and outcome with their latency and consumed capacity, conditional failures on
//! contention and on leases no longer held, throttle counters at 0, the clock skew from the
//! `Date` headers, and the stale-item gauge refreshed in the background until the store is
//! dropped. Every recorded name is a family of the core's registry, with its labels and help.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use leasehold::metrics::{self as m, Kind, Source};
use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{
    Lease, LeaseStore, LockName,
    store::{Extension, Release, Token},
};
use leasehold_dynamodb::metrics::{Operation, Outcome};
use leasehold_dynamodb::{DynamoDbStore, MIN_STALE_REFRESH_INTERVAL};
use metrics::Unit;
use metrics_util::MetricKind;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// One recorded series.
#[derive(Debug)]
struct Series {
    name: String,
    kind: Kind,
    labels: BTreeMap<String, String>,
    unit: Option<Unit>,
    help: Option<String>,
    value: DebugValue,
}

impl Series {
    fn label(&self, key: &str) -> &str {
        self.labels.get(key).map_or("", String::as_str)
    }
    fn counter(&self) -> u64 {
        match &self.value {
            DebugValue::Counter(n) => *n,
            other => panic!("{}: {other:?}", self.name),
        }
    }
    fn gauge(&self) -> f64 {
        match &self.value {
            DebugValue::Gauge(v) => v.0,
            other => panic!("{}: {other:?}", self.name),
        }
    }
    fn observations(&self) -> Vec<f64> {
        match &self.value {
            DebugValue::Histogram(v) => v.iter().map(|x| x.0).collect(),
            other => panic!("{}: {other:?}", self.name),
        }
    }
}

/// What was recorded since the last snapshot (a snapshot resets counters and gauges to 0 and
/// empties histograms).
fn snapshot(snapshotter: &Snapshotter) -> Vec<Series> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, help, value)| Series {
            name: key.key().name().to_owned(),
            kind: match key.kind() {
                MetricKind::Counter => Kind::Counter,
                MetricKind::Gauge => Kind::Gauge,
                MetricKind::Histogram => Kind::Histogram,
            },
            labels: key
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect(),
            unit,
            help: help.map(|h| h.to_string()),
            value,
        })
        .collect()
}

fn named<'a>(seen: &'a [Series], name: &str) -> Vec<&'a Series> {
    seen.iter().filter(|s| s.name == name).collect()
}

/// Runs `f` on a current-thread runtime with `recorder` as this thread's metrics recorder, so
/// that the stores created in `f`, their requests and their refresher record into it.
fn recorded<F: Future>(recorder: &DebuggingRecorder, f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(recorder, || rt.block_on(f))
}

fn request(lock: &LockName, slots: u32, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, "node", Token::random(), ttl)
}

fn lock(tag: &str) -> LockName {
    LockName::new(format!("metrics-{tag}-{}", Token::random().to_hex())).unwrap()
}

async fn granted(store: &DynamoDbStore, req: &AcquireRequest) -> Lease {
    match store.try_acquire(req).await.unwrap() {
        Acquisition::Elected(lease) => lease,
        other => panic!("{other:?}"),
    }
}

/// Every series is of a DynamoDB family of the registry, with its type, labels, unit and help.
fn check_against_the_registry(seen: &[Series]) {
    for s in seen {
        let f = m::family(&s.name).unwrap_or_else(|| panic!("{} is not registered", s.name));
        assert_eq!(f.source, Source::DynamoDb, "{}", s.name);
        assert_eq!(f.kind, s.kind, "{}", s.name);
        let labels: BTreeSet<&str> = s.labels.keys().map(String::as_str).collect();
        let expected: BTreeSet<&str> = f.labels.iter().copied().collect();
        assert_eq!(labels, expected, "{}", s.name);
        assert_eq!(s.help.as_deref(), Some(f.help), "{}", s.name);
        assert_eq!(s.unit.is_some(), f.unit == Some("seconds"), "{}", s.name);
    }
}

#[test]
fn requests_are_recorded_by_operation_and_outcome() {
    let Some(endpoint) = common::endpoint() else {
        return;
    };
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorded(&recorder, async {
        common::ensure_table(&endpoint).await;
        let a = common::store(&endpoint);
        let b = common::store(&endpoint);
        let ttl = Duration::from_secs(10);
        let name = lock("single");
        // Granted to a; b's attempt fails its condition (contention).
        let lease = granted(&a, &request(&name, 1, ttl)).await;
        assert!(matches!(
            b.try_acquire(&request(&name, 1, ttl)).await.unwrap(),
            Acquisition::Taken(_)
        ));
        assert!(matches!(
            a.extend(&lease, ttl).await.unwrap(),
            Extension::Extended { .. }
        ));
        assert_eq!(a.state(&name, 1).await.unwrap().holders.len(), 1);
        assert_eq!(
            a.release(&lease, Duration::ZERO).await.unwrap(),
            Release::Released
        );
        // Released: a second release and a renewal find it not held (failed conditions).
        assert_eq!(
            a.release(&lease, Duration::ZERO).await.unwrap(),
            Release::NotHeld
        );
        assert_eq!(a.extend(&lease, ttl).await.unwrap(), Extension::NotHeld);
        // A group: its slots are read in one BatchGetItem, then slot 0 is written.
        let group = granted(&a, &request(&lock("group"), 3, ttl)).await;
        assert_eq!(group.slot, 0);
        a.release(&group, Duration::ZERO).await.unwrap();
        a.list_locks(None).await.unwrap();
    });
    let seen = snapshot(&snapshotter);
    check_against_the_registry(&seen);

    // Throttle counters exist for every operation from the start, and dynalite throttles none.
    let throttles = named(&seen, m::DYNAMODB_THROTTLES);
    let ops: BTreeSet<&str> = throttles.iter().map(|s| s.label("operation")).collect();
    let all: BTreeSet<&str> = Operation::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(ops, all);
    assert!(throttles.iter().all(|s| s.counter() == 0), "{throttles:?}");

    // Conditional failures: one per contended acquisition and per write on a lease not held;
    // counters exist for the conditional writes only.
    let conditional: BTreeMap<&str, u64> = named(&seen, m::DYNAMODB_CONDITIONAL_FAILURES)
        .iter()
        .map(|s| (s.label("operation"), s.counter()))
        .collect();
    let writes: BTreeSet<&str> = Operation::ALL
        .iter()
        .filter(|o| o.is_conditional())
        .map(|o| o.as_str())
        .collect();
    assert_eq!(conditional.keys().copied().collect::<BTreeSet<_>>(), writes);
    assert_eq!(conditional["acquire"], 1, "{conditional:?}");
    assert_eq!(conditional["release"], 1, "{conditional:?}");
    assert_eq!(conditional["extend"], 1, "{conditional:?}");
    assert_eq!(conditional["force_release"], 0, "{conditional:?}");

    // Latency by operation and outcome: plausible times, the right counts.
    let mut latency: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for s in named(&seen, m::DYNAMODB_REQUEST_SECONDS) {
        let op = s.label("operation").to_owned();
        let outcome = s.label("outcome").to_owned();
        assert!(Operation::ALL.iter().any(|o| o.as_str() == op), "{op}");
        assert!(
            Outcome::ALL.iter().any(|o| o.as_str() == outcome),
            "{outcome}"
        );
        latency.insert((op, outcome), s.observations());
    }
    let count = |op: &str, outcome: &str| {
        latency
            .get(&(op.to_owned(), outcome.to_owned()))
            .map_or(0, Vec::len)
    };
    assert_eq!(count("acquire", "ok"), 2, "{latency:?}");
    assert_eq!(count("acquire", "conditional_failed"), 1, "{latency:?}");
    assert_eq!(count("extend", "ok"), 1, "{latency:?}");
    assert_eq!(count("extend", "conditional_failed"), 1, "{latency:?}");
    assert_eq!(count("release", "ok"), 2, "{latency:?}");
    assert_eq!(count("release", "conditional_failed"), 1, "{latency:?}");
    // The group's slots; the listing also reads the session items its page names (other tests'
    // leases may be on it).
    assert!(count("read_batch", "ok") >= 1, "{latency:?}");
    assert!(count("read", "ok") >= 1, "{latency:?}");
    assert!(count("list", "ok") >= 1, "{latency:?}");
    for ((op, outcome), times) in &latency {
        assert!(
            outcome != "error" && outcome != "throttled",
            "{op}: {outcome}"
        );
        assert!(
            times.iter().all(|t| *t > 0.0 && *t < 30.0),
            "{op} {outcome}: {times:?}"
        );
    }

    // Consumed capacity: dynalite reports it (ReturnConsumedCapacity = TOTAL), one unit per
    // lease write and per consistent read of a small item; writes and reads by kind.
    let capacity: BTreeMap<(&str, &str), Vec<f64>> = named(&seen, m::DYNAMODB_CONSUMED_CAPACITY)
        .into_iter()
        .map(|s| ((s.label("operation"), s.label("kind")), s.observations()))
        .collect();
    let acquire = &capacity[&("acquire", "write")];
    assert_eq!(acquire.len(), 2, "{capacity:?}");
    assert!(acquire.iter().all(|u| *u >= 1.0), "{capacity:?}");
    assert!(
        capacity[&("release", "write")].iter().all(|u| *u >= 1.0),
        "{capacity:?}"
    );
    assert!(
        capacity[&("read", "read")].iter().all(|u| *u > 0.0),
        "{capacity:?}"
    );
    for ((op, kind), units) in &capacity {
        let expected = Operation::ALL
            .iter()
            .find(|o| o.as_str() == *op)
            .map(|o| o.capacity_kind());
        assert_eq!(Some(*kind), expected, "{op}");
        assert!(units.iter().all(|u| u.is_finite() && *u > 0.0), "{op}");
    }

    // Clock skew from the Date headers: dynalite runs on this host's clock, so the bounds
    // hold 0 (give or take the header's coarse second) and are at most about a second apart.
    let skew: BTreeMap<&str, f64> = named(&seen, m::DYNAMODB_CLOCK_SKEW_SECONDS)
        .into_iter()
        .map(|s| (s.label("bound"), s.gauge()))
        .collect();
    assert_eq!(
        skew.keys().copied().collect::<Vec<_>>(),
        ["estimate", "lower", "upper"],
        "{skew:?}"
    );
    assert!(
        skew["lower"] <= skew["estimate"] && skew["estimate"] <= skew["upper"],
        "{skew:?}"
    );
    assert!(skew["upper"] - skew["lower"] <= 1.5, "{skew:?}");
    assert!(skew["lower"] < 0.5 && skew["upper"] > -0.5, "{skew:?}");
    assert!(skew["estimate"].abs() < 1.0, "{skew:?}");

    // No refresher was asked for: no stale-item series.
    assert!(named(&seen, m::DYNAMODB_STALE_ITEMS).is_empty());
    assert!(named(&seen, m::DYNAMODB_STALE_REFRESHES).is_empty());
}

/// A table of this test's own, so that the stale count is exact.
async fn fresh_table(client: &Client) -> String {
    let table = format!("leasehold_test_metrics_{}", &Token::random().to_hex()[..12]);
    leasehold_dynamodb::create_table(client, &table)
        .await
        .expect("create the test table");
    table
}

/// The refreshes counted (by outcome) and the stale gauges set (by state) since the last
/// snapshot.
fn refreshes(snapshotter: &Snapshotter) -> (BTreeMap<String, u64>, BTreeMap<String, f64>) {
    let seen = snapshot(snapshotter);
    check_against_the_registry(&seen);
    let counted = named(&seen, m::DYNAMODB_STALE_REFRESHES)
        .into_iter()
        .map(|s| (s.label("outcome").to_owned(), s.counter()))
        .collect();
    let gauges = named(&seen, m::DYNAMODB_STALE_ITEMS)
        .into_iter()
        .map(|s| (s.label("state").to_owned(), s.gauge()))
        .collect();
    (counted, gauges)
}

/// Polls `snapshotter` until `done` says yes about a snapshot, within `limit`; returns the
/// refreshes counted meanwhile by outcome.
async fn until(
    snapshotter: &Snapshotter,
    limit: Duration,
    mut done: impl FnMut(&BTreeMap<String, u64>, &BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, u64> {
    let start = Instant::now();
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        let (counted, gauges) = refreshes(snapshotter);
        for (outcome, n) in &counted {
            *total.entry(outcome.clone()).or_default() += n;
        }
        if done(&counted, &gauges) {
            return total;
        }
        assert!(
            start.elapsed() < limit,
            "not within {limit:?}: refreshes {total:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn the_stale_gauge_shows_an_expired_item_after_a_refresh_and_stops_with_the_store() {
    let Some(endpoint) = common::endpoint() else {
        return;
    };
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorded(&recorder, async {
        let client = common::client(&endpoint);
        let table = fresh_table(&client).await;
        let options = common::options()
            .with_table(&table)
            .with_stale_refresh(MIN_STALE_REFRESH_INTERVAL)
            .with_stale_refresh_pages(1);
        let store = DynamoDbStore::new(client.clone(), options).unwrap();
        // The first count runs at once, on an empty table.
        let first = until(&snapshotter, Duration::from_secs(30), |counted, gauges| {
            counted.get("ok").is_some_and(|n| *n > 0)
                && gauges.get("expired") == Some(&0.0)
                && gauges.get("past_ttl") == Some(&0.0)
        })
        .await;
        assert_eq!(first.get("error"), Some(&0), "{first:?}");
        // A 300 ms lease (more than twice the 100 ms tolerance), left to expire: a later
        // refresh counts it (within an interval and a scan; 30 s is generous).
        let lease = granted(
            &store,
            &request(&lock("stale"), 1, Duration::from_millis(300)),
        )
        .await;
        let later = until(&snapshotter, Duration::from_secs(30), |_, gauges| {
            gauges.get("expired") == Some(&1.0)
        })
        .await;
        assert!(later.get("ok").is_some_and(|n| *n > 0), "{later:?}");
        assert_eq!(later.get("error"), Some(&0), "{later:?}");
        // The gauge agrees with a direct count.
        let direct = store.stale_items().await.unwrap();
        assert_eq!((direct.expired, direct.past_ttl), (1, 0));
        assert_eq!(lease.slot, 0);
        // Dropped, the store's refresher stops: no refresh for longer than an interval.
        drop(store);
        refreshes(&snapshotter);
        tokio::time::sleep(MIN_STALE_REFRESH_INTERVAL + Duration::from_secs(2)).await;
        let (counted, gauges) = refreshes(&snapshotter);
        assert!(counted.values().all(|n| *n == 0), "{counted:?}");
        // A snapshot resets a gauge to 0: a refresh would have set it to 1 again.
        assert!(gauges.values().all(|v| *v == 0.0), "{gauges:?}");
        client
            .delete_table()
            .table_name(&table)
            .send()
            .await
            .unwrap();
    });
}

#[test]
fn stale_counts_are_requests_of_their_own_operation() {
    let Some(endpoint) = common::endpoint() else {
        return;
    };
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let count = recorded(&recorder, async {
        common::ensure_table(&endpoint).await;
        common::store(&endpoint)
            .stale_items_within(1)
            .await
            .unwrap()
    });
    let seen = snapshot(&snapshotter);
    let scans: Vec<_> = named(&seen, m::DYNAMODB_REQUEST_SECONDS)
        .into_iter()
        .filter(|s| s.label("operation") == "stale_count")
        .collect();
    assert_eq!(scans.len(), 1, "{scans:?}");
    assert_eq!(scans[0].label("outcome"), "ok");
    // Two scans (expired, past ttl), one page each at most.
    assert_eq!(scans[0].observations().len() as u32, count.pages);
    let units: f64 = named(&seen, m::DYNAMODB_CONSUMED_CAPACITY)
        .into_iter()
        .filter(|s| s.label("operation") == "stale_count")
        .flat_map(|s| s.observations())
        .sum();
    assert!((units - count.read_units).abs() < 1e-9, "{units} {count:?}");
}

#[test]
fn a_refresher_needs_a_runtime_and_names_its_option() {
    // No server needed: nothing is sent.
    let client = common::client("http://127.0.0.1:9");
    let options = common::options().with_stale_refresh(MIN_STALE_REFRESH_INTERVAL);
    let err = DynamoDbStore::new(client.clone(), options.clone()).unwrap_err();
    assert_eq!(err.option(), "stale_refresh");
    assert!(err.to_string().contains("tokio"), "{err}");
    // Within a runtime it starts; without the option no runtime is needed.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let entered = rt.enter();
    assert!(DynamoDbStore::new(client.clone(), options).is_ok());
    drop(entered);
    assert!(DynamoDbStore::new(client, common::options()).is_ok());
}

#[test]
fn the_module_docs_list_exactly_the_dynamodb_families() {
    let module =
        std::fs::read_to_string(format!("{}/src/metrics.rs", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let listed: BTreeSet<&str> = module
        .lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(n, _)| n)
        .collect();
    let registered: BTreeSet<&str> = m::families_of(Source::DynamoDb).map(|f| f.name).collect();
    assert_eq!(listed, registered);
    for f in m::families_of(Source::DynamoDb) {
        let row = format!("| `{}` | {} |", f.name, f.kind.as_str());
        assert!(module.contains(&row), "no row {row}");
    }
}
