//! Prometheus metrics out of the box (feature `prometheus`, on by default): a
//! `metrics-exporter-prometheus` recorder for the core's metrics ([`leasehold::metrics`]) and the
//! jobs' ([`job_metrics`](crate::job_metrics)), served by [`Management::metrics`](crate::Management::metrics)
//! at `GET /metrics` in the Prometheus text format, behind the management route's authentication.

use std::time::Duration;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::error::Error;

/// The default path of the metrics route.
pub const DEFAULT_METRICS_PATH: &str = "/metrics";

/// How often the recorder installed by [`PrometheusMetrics::install`] drains recorded histogram
/// samples into its summaries (the exporter's own default), so memory stays bounded however
/// rarely it is scraped.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The content type of the Prometheus text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A Prometheus recorder to serve: installed by [`install`](Self::install) as the process's
/// `metrics` recorder, or one the application installed itself ([`from_handle`](Self::from_handle)).
/// Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// use leasehold_axum::{Error, PrometheusMetrics};
///
/// let metrics = PrometheusMetrics::install()?; // before the first election
/// metrics::counter!("app_requests_total").increment(1);
/// assert!(metrics.render().contains("app_requests_total 1"));
/// // The facade takes one recorder per process: a second is refused, never a panic.
/// assert!(matches!(PrometheusMetrics::install(), Err(Error::RecorderInstalled)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    handle: PrometheusHandle,
}

impl PrometheusMetrics {
    /// Installs a Prometheus recorder with the exporter's defaults as the process's global
    /// `metrics` recorder and starts its upkeep (every [`UPKEEP_INTERVAL`]) on the current tokio
    /// runtime. Install it before the first election: metric handles are registered with the
    /// recorder in effect at that moment.
    ///
    /// # Errors
    ///
    /// [`Error::NoRuntime`] outside a tokio runtime; [`Error::RecorderInstalled`] when a global
    /// recorder is already installed (by this call or by anything else). Nothing is installed or
    /// started then.
    pub fn install() -> Result<Self, Error> {
        Self::install_with(PrometheusBuilder::new())
    }

    /// [`install`](Self::install) with a configured builder (histogram buckets, global labels,
    /// …). Its HTTP listener and push gateway, if configured, are not started: serve the
    /// metrics with [`Management::metrics`](crate::Management::metrics).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// let builder = PrometheusBuilder::new().add_global_label("service", "billing");
    /// let metrics = leasehold_axum::PrometheusMetrics::install_with(builder)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`install`](Self::install).
    pub fn install_with(builder: PrometheusBuilder) -> Result<Self, Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::NoRuntime("installing the Prometheus recorder"))?;
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).map_err(|_| Error::RecorderInstalled)?;
        let upkeep = handle.clone();
        runtime.spawn(async move {
            let mut every = tokio::time::interval(UPKEEP_INTERVAL);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                upkeep.run_upkeep();
            }
        });
        Ok(Self { handle })
    }

    /// Serves a recorder the application installed itself (it then runs its upkeep, see
    /// `metrics-exporter-prometheus`).
    ///
    /// ```
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// let recorder = PrometheusBuilder::new().build_recorder();
    /// let metrics = leasehold_axum::PrometheusMetrics::from_handle(recorder.handle());
    /// assert_eq!(metrics.render(), "");
    /// ```
    pub fn from_handle(handle: PrometheusHandle) -> Self {
        Self { handle }
    }

    /// The recorder's handle.
    pub fn handle(&self) -> &PrometheusHandle {
        &self.handle
    }

    /// Every metric recorded so far, in the Prometheus text format.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    /// The rendering as an HTTP response.
    pub(crate) fn respond(&self) -> Response {
        let mut res = self.render().into_response();
        let h = res.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        res
    }
}
