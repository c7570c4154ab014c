//! `leasehold serve`: a live view of the holders of chosen locks on a real store, beside the
//! management report of leasehold-axum, and `GET /metrics` in the Prometheus text format.
//!
//! `/metrics` answers what this process's recorder holds (leasehold's metrics, see
//! [`leasehold::metrics`]), then the holders of the locks, read from the store at each scrape
//! (the same snapshot as `/api/live`):
//!
//! | name | labels | value |
//! |---|---|---|
//! | `leasehold_lock_state_ok` | `lock` | 1 when the store answered for the lock, 0 when reading it failed (then no other series of that lock) |
//! | `leasehold_lock_slots` | `lock` | the slots looked at (`--slots`) |
//! | `leasehold_lock_holders` | `lock` | live holders now |
//! | `leasehold_lock_holder_info` | `lock`, `slot`, `owner` | 1 per live holder, naming its owner (node id) |
//! | `leasehold_lock_fence` | `lock`, `slot` | the holder's fence |
//! | `leasehold_lock_expires_at_seconds` | `lock`, `slot` | when its lease ends unless renewed (Unix time, the store's clock) |
//! | `leasehold_lock_time_left_seconds` | `lock`, `slot` | the time left by this machine's clock |
//!
//! The holder series are recorded into a fresh recorder at each scrape, so a holder that is gone
//! is gone from the next scrape too. Their names and help texts are the families of source
//! `Holders` in leasehold's registry (`leasehold::metrics::FAMILIES`); the recorder's own are
//! described by `PrometheusMetrics::install`.

use std::process::ExitCode;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
// The holder families' names and help texts: leasehold's registry (source `Holders`).
use leasehold::metrics::{
    LOCK_EXPIRES_AT_SECONDS as EXPIRES_AT, LOCK_FENCE as FENCE, LOCK_HOLDER_INFO as HOLDER_INFO,
    LOCK_HOLDERS as HOLDERS, LOCK_SLOTS as SLOTS, LOCK_STATE_OK as STATE_OK,
    LOCK_TIME_LEFT_SECONDS as TIME_LEFT, Source,
};
use leasehold_axum::{DEFAULT_METRICS_PATH, PrometheusMetrics};
use leasehold_workbench::web::{LiveReport, LiveView};
use metrics::gauge;
use metrics_exporter_prometheus::PrometheusBuilder;

use crate::args::ServeArgs;
use crate::exit::Failure;
use crate::store::StoreUrl;
use crate::workbench::{listen, serve_until_signal, web_failure};

/// The content type of the Prometheus text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Runs `leasehold serve`.
pub(crate) async fn serve(args: ServeArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    let metrics = PrometheusMetrics::install().map_err(|e| Failure::usage(e.to_string()))?;
    let store = url.open_shared(std::time::Duration::ZERO).await?;
    let view = LiveView::new(store, args.locks)
        .and_then(|v| v.slots(args.slots))
        .map_err(web_failure)?
        .store_label(url.redacted());
    let allow_remote = args.remote.allow_remote;
    let (listener, signals) = listen(args.bind, allow_remote).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::usage(format!("cannot read the listening address: {e}")))?;
    let scraped = view.clone();
    let router = view.router(addr).map_err(web_failure)?.route(
        DEFAULT_METRICS_PATH,
        get(move || {
            let (view, metrics) = (scraped.clone(), metrics.clone());
            async move { scrape(&view, &metrics).await }
        }),
    );
    serve_until_signal(listener, router, allow_remote, signals).await
}

/// `GET /metrics`: the recorder's metrics, then the holders read from the store now.
async fn scrape(view: &LiveView, metrics: &PrometheusMetrics) -> Response {
    let mut text = metrics.render();
    text.push_str(&holder_metrics(&view.report().await));
    let mut res = text.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The holders of `report` in the Prometheus text format, from a recorder of their own.
fn holder_metrics(report: &LiveReport) -> String {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        leasehold::metrics::describe(Source::Holders);
        for lock in &report.locks {
            let name = lock.lock.clone();
            if lock.error.is_some() {
                gauge!(STATE_OK, "lock" => name).set(0.0);
                continue;
            }
            gauge!(STATE_OK, "lock" => name.clone()).set(1.0);
            gauge!(SLOTS, "lock" => name.clone()).set(f64::from(lock.slots));
            gauge!(HOLDERS, "lock" => name.clone()).set(count(lock.holders.len()));
            for h in &lock.holders {
                let slot = h.slot.to_string();
                let series = [("lock", name.clone()), ("slot", slot)];
                let mut info = series.to_vec();
                info.push(("owner", h.owner.clone()));
                gauge!(HOLDER_INFO, &info).set(1.0);
                gauge!(FENCE, &series).set(exact(h.fence));
                gauge!(EXPIRES_AT, &series).set(exact(h.expires_at_ms) / 1000.0);
                gauge!(TIME_LEFT, &series).set(exact(h.time_left_ms) / 1000.0);
            }
        }
    });
    handle.render()
}

/// A count as a sample value.
fn count(n: usize) -> f64 {
    exact(u64::try_from(n).unwrap_or(u64::MAX))
}

/// A whole number as a sample value: exact up to 2^53, as every Prometheus sample is a float.
#[allow(clippy::cast_precision_loss)]
fn exact(n: u64) -> f64 {
    n as f64
}
