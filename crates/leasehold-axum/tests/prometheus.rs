//! `GET /metrics`: a real server on 127.0.0.1:0 scraped over HTTP with and without the
//! management token, its text parsed with a Prometheus text-format parser and checked
//! (`support/prom.rs`: HELP and TYPE on every family, as leasehold's registry says; well-formed,
//! non-empty histograms). The recorder is global to the process, so this binary has a single
//! test that installs it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;
#[path = "support/prom.rs"]
mod prom;

use std::sync::Arc;
use std::time::Duration;

use axum::http::{StatusCode, header};
use common::{TOKEN, get_path, serve};
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName};
use leasehold_axum::{BearerToken, Error, Management, PrometheusMetrics};
use leasehold_testkit::unique_name;
use prometheus_parse::{Sample, Scrape, Value};

fn elector(store: Arc<dyn LeaseStore>) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id("web-1")
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(3))
        .auto_extend(true)
        .build()
        .unwrap();
    Elector::with_options(store, opts)
}

async fn scrape(addr: std::net::SocketAddr) -> Vec<Sample> {
    let reply = get_path(addr, "/metrics", Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let kind = reply.headers[header::CONTENT_TYPE].to_str().unwrap();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    prom::check(&reply.body);
    Scrape::parse(reply.body.lines().map(|l| Ok(l.to_owned())))
        .unwrap()
        .samples
}

/// The value of `name` labelled `label=lock` (counters and gauges), if exported.
fn value(samples: &[Sample], name: &str, label: &str, lock: &LockName) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.metric == name && s.labels.get(label).is_some_and(|v| v == lock.as_str()))
        .map(|s| match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            ref other => panic!("{name} is not a single value: {other:?}"),
        })
}

/// The cumulative buckets (`le`, count) of the histogram `name` labelled `lock`.
fn buckets(samples: &[Sample], name: &str, lock: &LockName) -> Vec<(f64, f64)> {
    samples
        .iter()
        .find(|s| s.metric == name && s.labels.get("lock").is_some_and(|v| v == lock.as_str()))
        .map(|s| match &s.value {
            Value::Histogram(bs) => bs.iter().map(|b| (b.less_than, b.count)).collect(),
            other => panic!("{name} is not a histogram: {other:?}"),
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_management_router_serves_the_metrics_behind_its_token_and_one_recorder_only() {
    let metrics = PrometheusMetrics::install().unwrap();
    assert!(
        matches!(PrometheusMetrics::install(), Err(Error::RecorderInstalled)),
        "a second global recorder is a typed error"
    );

    // SQLite reads this host's clock: no offset. PostgreSQL (when there is one) its own.
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = format!("sqlite://{}", dir.path().join("l.db").to_str().unwrap());
    let sqlite = elector(Arc::new(
        leasehold_sql::SqlStore::connect(&sqlite_url).await.unwrap(),
    ));
    let lock = unique_name("metrics");
    let guard = sqlite
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    guard.extend(Duration::from_secs(3)).await.unwrap();
    let postgres = match std::env::var("LEASEHOLD_TEST_POSTGRES_URL") {
        Ok(url) => Some(elector(Arc::new(
            leasehold_sql::SqlStore::connect(&url).await.unwrap(),
        ))),
        Err(_) if std::env::var_os("CI").is_some() => panic!("CI needs PostgreSQL"),
        Err(_) => None,
    };
    let pg_lock = unique_name("metrics-pg");
    let pg_guard = match &postgres {
        Some(e) => {
            let g = e
                .try_acquire(&pg_lock)
                .await
                .unwrap()
                .elected()
                .expect("free lock");
            g.extend(Duration::from_secs(3)).await.unwrap();
            Some(g)
        }
        None => None,
    };

    let ops = Management::new(sqlite.clone())
        .lock(lock.as_str())
        .metrics(metrics)
        .bearer_token(BearerToken::new(TOKEN).unwrap())
        .router()
        .unwrap();
    let stop = leasehold::CancellationToken::new();
    let done = stop.clone();
    let (addr, server) = serve(ops, async move { done.cancelled().await }).await;

    let refused = get_path(addr, "/metrics", None).await;
    assert_eq!(
        refused.status,
        StatusCode::UNAUTHORIZED,
        "same auth as the report"
    );
    let bearer = format!("Bearer {TOKEN}");
    let report = get_path(addr, "/management/leader-election", Some(&bearer)).await;
    assert_eq!(report.status, StatusCode::OK);

    let samples = scrape(addr).await;
    let of = |name, label| value(&samples, name, label, &lock);
    assert_eq!(of("leader_election_master_status", "name"), Some(1.0));
    assert_eq!(of("leasehold_active", "lock"), Some(1.0));
    assert_eq!(of("leasehold_acquired_total", "lock"), Some(1.0));
    assert_eq!(of("leasehold_extended_total", "lock"), Some(1.0));
    assert_eq!(of("leasehold_at_risk", "lock"), Some(0.0));
    assert_eq!(of("leasehold_renewal_at_risk_total", "lock"), Some(0.0));
    assert_eq!(
        of("leasehold_store_clock_offset_seconds", "lock"),
        None,
        "SQLite reads this host's clock"
    );
    let margins = buckets(&samples, "leasehold_renewal_margin_seconds", &lock);
    assert_eq!(
        margins.last(),
        Some(&(f64::INFINITY, 1.0)),
        "a histogram of the one renewal: {margins:?}"
    );
    assert!(
        margins
            .iter()
            .all(|&(le, n)| n == if le < 2.7 { n } else { 1.0 }),
        "within the local deadline (2.7 s): {margins:?}"
    );
    assert!(
        margins.iter().any(|&(le, n)| le < 2.7 && n == 0.0),
        "and well above 0: {margins:?}"
    );
    assert_eq!(
        value(
            &samples,
            "leasehold_renewal_margin_seconds_count",
            "lock",
            &lock
        ),
        Some(1.0)
    );
    if pg_guard.is_some() {
        let offset = value(
            &samples,
            "leasehold_store_clock_offset_seconds",
            "lock",
            &pg_lock,
        )
        .expect("PostgreSQL reads its own clock");
        assert!(offset.abs() < 1.0, "one machine, one clock: {offset}");
    }

    guard.release().await.unwrap();
    let samples = scrape(addr).await;
    assert_eq!(
        value(&samples, "leader_election_master_status", "name", &lock),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "leasehold_released_total", "lock", &lock),
        Some(1.0)
    );
    if let Some(g) = pg_guard {
        g.release().await.unwrap();
    }
    stop.cancel();
    server.await.unwrap();
}

/// Paths are checked when the router is built (a recorder of the test's own: nothing global).
#[test]
fn a_metrics_path_must_start_with_a_slash_and_differ_from_the_report() {
    let elector = Elector::new(Arc::new(leasehold::MemoryStore::new()));
    let mine = || {
        PrometheusMetrics::from_handle(
            metrics_exporter_prometheus::PrometheusBuilder::new()
                .build_recorder()
                .handle(),
        )
    };
    let build = |path: &str| {
        Management::new(elector.clone())
            .metrics_at(path, mine())
            .behind_caller_auth()
            .router::<()>()
    };
    assert!(matches!(build("metrics"), Err(Error::InvalidPath(p)) if p == "metrics"));
    assert!(matches!(
        build("/management/leader-election"),
        Err(Error::PathConflict(p)) if p == "/management/leader-election"
    ));
    assert!(build("/ops/metrics").is_ok());
}
