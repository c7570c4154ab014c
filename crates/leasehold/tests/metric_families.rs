//! The registry of metric families (`leasehold::metrics::FAMILIES`) against what the core
//! records and what the manual lists: every name the core registers or describes is a family of
//! the registry with its type and labels, every core family is recorded by some election, a
//! follower records no histogram, and each page of the manual lists exactly its families.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use leasehold::metrics::{self as m, FAMILIES, Kind, Source};
use leasehold::store::{AcquireRequest, Acquisition, ClockSource, StoreResult, Token};
use leasehold::{
    ElectionOptions, Elector, Holder, Lease, LeaseStore, LockName, MemoryStore, Period,
    store::{Extension, LockState, Release},
};
use leasehold_testkit::fault::{Fault, FaultyStore, Op};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// A described family: its kind, unit and help text.
type Description = (Kind, Option<Unit>, String);

/// What a recorder was told: each registered name with its kind and label names, and each
/// described name with its kind, unit and help text.
#[derive(Default)]
struct Seen {
    registered: Mutex<BTreeMap<String, (Kind, BTreeSet<String>)>>,
    described: Mutex<BTreeMap<String, Description>>,
}

impl Seen {
    fn register(&self, key: &Key, kind: Kind) {
        let labels = key.labels().map(|l| l.key().to_owned()).collect();
        let mut seen = self.registered.lock().unwrap();
        if let Some((k, l)) = seen.get(key.name()) {
            assert_eq!(
                (*k, l),
                (kind, &labels),
                "{} registered two ways",
                key.name()
            );
        }
        seen.insert(key.name().to_owned(), (kind, labels));
    }

    fn describe(&self, name: KeyName, kind: Kind, unit: Option<Unit>, help: SharedString) {
        self.described
            .lock()
            .unwrap()
            .insert(name.as_str().to_owned(), (kind, unit, help.to_string()));
    }

    fn registered(&self) -> BTreeMap<String, (Kind, BTreeSet<String>)> {
        self.registered.lock().unwrap().clone()
    }
}

impl Recorder for Seen {
    fn describe_counter(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.describe(name, Kind::Counter, unit, help);
    }
    fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.describe(name, Kind::Gauge, unit, help);
    }
    fn describe_histogram(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.describe(name, Kind::Histogram, unit, help);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.register(key, Kind::Counter);
        Counter::noop()
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.register(key, Kind::Gauge);
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.register(key, Kind::Histogram);
        Histogram::noop()
    }
}

/// Runs `f` on a paused current-thread runtime with `recorder` as the metrics recorder.
fn paused<F: Future>(recorder: &Seen, f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(recorder, || rt.block_on(f))
}

fn elector(store: Arc<dyn LeaseStore>, node: &str) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id(node)
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(3))
        .auto_extend(true)
        .build()
        .unwrap();
    Elector::with_options(store, opts)
}

/// The memory store declaring its clock the store's own (as PostgreSQL and Redis do), so that
/// renewals estimate a clock offset.
struct OwnClock(MemoryStore);

#[async_trait]
impl LeaseStore for OwnClock {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.0.try_acquire(req).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.0.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.0.release(lease, linger).await
    }
    async fn start_period(&self, lease: &Lease) -> StoreResult<leasehold::store::PeriodStart> {
        self.0.start_period(lease).await
    }
    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<leasehold::PeriodRecord>> {
        self.0.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> StoreResult<Option<leasehold::PeriodRecord>> {
        self.0.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.0.state(lock, slots).await
    }
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.0.force_release(lock, slots).await
    }
    fn clock_source(&self) -> ClockSource {
        ClockSource::Server
    }
    fn describe(&self) -> String {
        "memory, own clock".to_owned()
    }
}

#[test]
fn every_name_the_core_records_is_a_family_of_the_registry_and_every_family_is_recorded() {
    let seen = Seen::default();
    paused(&seen, async {
        let (store, faults) = FaultyStore::new(Arc::new(OwnClock(MemoryStore::with_clock_origin(
            SystemTime::now(),
        ))));
        let a = elector(store.clone(), "a");
        let b = elector(store, "b");
        // Acquired, renewed by the watchdog, contended, released.
        let guard = a.try_acquire("job").await.unwrap().elected().expect("free");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert!(b.try_acquire("job").await.unwrap().elected().is_none());
        guard.release().await.unwrap();
        // An action that fails; a period that already ran.
        let failed = a
            .run("job", |_| async { Err::<(), _>("no") })
            .await
            .unwrap();
        assert!(!failed.is_taken());
        let hourly = Period::every(Duration::from_secs(3600)).unwrap();
        let ran = a.run_once_per("daily", hourly, |_| async { Ok::<_, String>(()) });
        assert!(ran.await.unwrap().already_ran().is_none());
        let again = b.run_once_per("daily", hourly, |_| async { Ok::<_, String>(()) });
        assert!(again.await.unwrap().already_ran().is_some());
        // Renewals failing (at risk), then lost at the deadline.
        let guard = a.try_acquire("job").await.unwrap().elected().expect("free");
        faults.fail(Op::Extend, Fault::transient());
        guard.lost().await;
        guard.release().await.unwrap();
        // A store error while acquiring.
        faults.fail(Op::TryAcquire, Fault::transient());
        assert!(a.try_acquire("other").await.is_err());
        faults.heal_all();
        a.settled().await;
    });

    let registered = seen.registered();
    for (name, (kind, labels)) in &registered {
        let f = m::family(name).unwrap_or_else(|| panic!("{name} is not in the registry"));
        assert_eq!(f.source, Source::Elector, "{name}");
        assert_eq!(f.kind, *kind, "{name}: registered as another type");
        let expected: BTreeSet<String> = f.labels.iter().map(|l| (*l).to_owned()).collect();
        assert_eq!(labels, &expected, "{name}: labels");
    }
    for f in m::families_of(Source::Elector) {
        assert!(registered.contains_key(f.name), "{} never recorded", f.name);
    }
    let described = seen.described.lock().unwrap().clone();
    for f in m::families_of(Source::Elector) {
        let (kind, unit, help) = described
            .get(f.name)
            .unwrap_or_else(|| panic!("{} not described", f.name));
        assert_eq!((*kind, help.as_str()), (f.kind, f.help), "{}", f.name);
        assert_eq!(unit.is_some(), f.unit == Some("seconds"), "{}", f.name);
    }
    assert!(
        described.keys().all(|n| m::family(n).is_some()),
        "{described:?}"
    );
}

#[test]
fn a_follower_that_never_held_the_lock_records_no_histogram_and_no_clock_offset() {
    let follower = Seen::default();
    paused(&follower, async {
        let store = Arc::new(OwnClock(MemoryStore::with_clock_origin(SystemTime::now())));
        // Another process holds the lock: straight through the store, so that nothing of its
        // own reaches this process's recorder.
        let request = AcquireRequest::new(
            LockName::new("job").unwrap(),
            1,
            "leader",
            Token::random(),
            Duration::from_secs(60),
        );
        assert!(matches!(
            store.try_acquire(&request).await.unwrap(),
            Acquisition::Elected(_)
        ));
        let other = elector(store, "follower");
        for _ in 0..3 {
            assert!(other.try_acquire("job").await.unwrap().elected().is_none());
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    });
    let registered = follower.registered();
    assert!(registered.contains_key(m::ATTEMPTS), "{registered:?}");
    assert!(registered.contains_key(m::MASTER_STATUS), "0 is a reading");
    for (name, (kind, _)) in &registered {
        assert_ne!(*kind, Kind::Histogram, "{name}: nothing was observed");
        assert_ne!(name, m::STORE_CLOCK_OFFSET_SECONDS);
    }
}

/// The backticked names of the first column of the first table under `heading` in `page`.
fn table_names(page: &str, heading: &str) -> BTreeSet<String> {
    let start = page
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    page[start + heading.len()..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

fn names_of(source: Source) -> BTreeSet<String> {
    m::families_of(source).map(|f| f.name.to_owned()).collect()
}

fn page(name: &str) -> String {
    let path = format!("{}/../../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_manual_lists_exactly_the_families_of_the_registry() {
    let core = page("leasehold.md");
    assert_eq!(
        table_names(&core, "### Metrics\n"),
        names_of(Source::Elector)
    );
    // The type column of the core's table is the registry's.
    for f in m::families_of(Source::Elector) {
        let row = format!("| `{}` | {} |", f.name, f.kind.as_str());
        assert!(core.contains(&row), "docs/leasehold.md has no row {row}");
    }
    let axum = page("leasehold-axum.md");
    assert_eq!(
        table_names(&axum, "### Job metrics\n"),
        names_of(Source::Jobs)
    );
    let cli = page("leasehold-cli.md");
    assert_eq!(
        table_names(&cli, "### `serve`'s `/metrics`\n"),
        names_of(Source::Holders)
    );
    assert_eq!(
        table_names(&cli, "### Cron monitoring (`--metrics-file`)\n"),
        names_of(Source::RunFile)
    );
    let dynamodb = page("leasehold-dynamodb.md");
    assert_eq!(
        table_names(&dynamodb, "### Metrics\n"),
        names_of(Source::DynamoDb)
    );
    // The module docs of leasehold::metrics list the core's families too.
    let module =
        std::fs::read_to_string(format!("{}/src/metrics.rs", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let listed: BTreeSet<String> = module
        .lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(n, _)| n.to_owned())
        .collect();
    assert_eq!(listed, names_of(Source::Elector));
}

#[test]
fn the_registry_is_well_formed() {
    let mut names = BTreeSet::new();
    for f in FAMILIES {
        assert!(names.insert(f.name), "{} twice", f.name);
        assert!(
            f.name.starts_with("leasehold_") || f.name == m::MASTER_STATUS,
            "{}",
            f.name
        );
        assert!(
            f.name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{}",
            f.name
        );
        assert_eq!(
            f.kind == Kind::Counter,
            f.name.ends_with("_total"),
            "{}",
            f.name
        );
        assert_eq!(
            f.unit == Some("seconds"),
            f.name.ends_with("_seconds"),
            "{}",
            f.name
        );
        assert!(
            !f.help.is_empty() && !f.help.contains(['\n', '\\']) && f.help.ends_with('.'),
            "{}: {:?}",
            f.name,
            f.help
        );
        assert!(
            !f.labels.is_empty() && !f.labels.contains(&"le"),
            "{}",
            f.name
        );
        if f.kind == Kind::Histogram {
            assert!(!f.buckets.is_empty(), "{}", f.name);
            assert!(
                f.buckets.windows(2).all(|w| w[0] < w[1]) && f.buckets[0] > 0.0,
                "{}: ascending, positive",
                f.name
            );
            assert!(f.buckets.iter().all(|b| b.is_finite()), "{}", f.name);
        } else {
            assert!(f.buckets.is_empty(), "{}", f.name);
        }
    }
    // The manual's renewal-margin alert thresholds are bucket bounds.
    for threshold in [1.0, 2.5, 5.0] {
        assert!(m::MARGIN_BUCKETS.contains(&threshold), "{threshold}");
    }
    // A healthy renewal of the default 15 s lease (8.55 s left) falls well inside the buckets.
    let healthy = 0.57 * leasehold::options::DEFAULT_LEASE.as_secs_f64();
    assert!(m::MARGIN_BUCKETS.iter().any(|b| *b > healthy) && healthy > 5.0);
}
