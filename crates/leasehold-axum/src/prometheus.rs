//! Prometheus metrics out of the box (feature `prometheus`, on by default): a
//! `metrics-exporter-prometheus` recorder for the core's metrics ([`leasehold::metrics`]) and the
//! jobs' ([`job_metrics`](crate::job_metrics)), served by [`Management::metrics`](crate::Management::metrics)
//! at `GET /metrics` in the Prometheus text format, behind the management route's authentication.
//!
//! Every family gets its `# HELP` line and leasehold's histograms get real Prometheus histograms
//! (`_bucket{le}`, `_sum`, `_count`) with the buckets of the registry
//! ([`leasehold::metrics::FAMILIES`]), so they can be added up across replicas.

use std::time::Duration;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use leasehold::metrics::{FAMILIES, Kind, Source, describe};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::error::Error;

/// The default path of the metrics route.
pub const DEFAULT_METRICS_PATH: &str = "/metrics";

/// How often the recorder installed by [`PrometheusMetrics::install`] drains recorded histogram
/// samples into its histograms (the exporter's own default), so memory stays bounded however
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
/// // leasehold's families have their help text, and its timings are histograms.
/// metrics::histogram!(leasehold::metrics::ACTION_SECONDS, "lock" => "a").record(0.3);
/// let text = metrics.render();
/// assert!(text.contains("# HELP leasehold_action_seconds Time the action ran"), "{text}");
/// assert!(text.contains("# TYPE leasehold_action_seconds histogram"), "{text}");
/// assert!(text.contains(r#"leasehold_action_seconds_bucket{lock="a",le="0.5"} 1"#), "{text}");
/// // The facade takes one recorder per process: a second is refused, never a panic.
/// assert!(matches!(PrometheusMetrics::install(), Err(Error::RecorderInstalled)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    handle: PrometheusHandle,
}

impl PrometheusMetrics {
    /// Installs a Prometheus recorder with the exporter's defaults and leasehold's histogram
    /// buckets ([`configure`](Self::configure)) as the process's global `metrics` recorder,
    /// describes leasehold's families to it (their `# HELP` lines) and starts its upkeep (every
    /// [`UPKEEP_INTERVAL`]) on the current tokio runtime. Install it before the first election:
    /// metric handles are registered with the recorder in effect at that moment.
    ///
    /// # Errors
    ///
    /// [`Error::NoRuntime`] outside a tokio runtime; [`Error::RecorderInstalled`] when a global
    /// recorder is already installed (by this call or by anything else). Nothing is installed or
    /// started then.
    pub fn install() -> Result<Self, Error> {
        Self::install_with(PrometheusBuilder::new())
    }

    /// [`install`](Self::install) with a configured builder (global labels, buckets of your own
    /// metrics, …). leasehold's histograms get leasehold's buckets whatever the builder says
    /// ([`configure`](Self::configure) is applied to it); to give them others, build and install
    /// the recorder yourself and serve it with [`from_handle`](Self::from_handle). Its HTTP
    /// listener and push gateway, if configured, are not started: serve the metrics with
    /// [`Management::metrics`](crate::Management::metrics).
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
        let recorder = Self::configure(builder)?.build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).map_err(|_| Error::RecorderInstalled)?;
        describe_all();
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
    /// `metrics-exporter-prometheus`). Pass its builder through [`configure`](Self::configure)
    /// to have leasehold's timings as histograms. leasehold's families are described (their
    /// `# HELP` lines) to the global recorder, which is this one once it is installed; the
    /// core also describes its own to whichever recorder registers a lock's metrics.
    ///
    /// ```
    /// use leasehold_axum::PrometheusMetrics;
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// let builder = PrometheusMetrics::configure(PrometheusBuilder::new())?;
    /// let recorder = builder.build_recorder();
    /// let metrics = PrometheusMetrics::from_handle(recorder.handle());
    /// assert_eq!(metrics.render(), "", "no series yet");
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    pub fn from_handle(handle: PrometheusHandle) -> Self {
        describe_all();
        Self { handle }
    }

    /// Gives each of leasehold's histograms ([`Kind::Histogram`] in
    /// [`leasehold::metrics::FAMILIES`]) its buckets in `builder`, so that the exporter renders
    /// them as Prometheus histograms rather than as summaries (the exporter's default). Other
    /// metrics keep what `builder` gives them.
    ///
    /// ```
    /// use leasehold_axum::PrometheusMetrics;
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// let recorder = PrometheusMetrics::configure(PrometheusBuilder::new())?.build_recorder();
    /// let handle = recorder.handle();
    /// metrics::with_local_recorder(&recorder, || {
    ///     metrics::histogram!("leasehold_renewal_margin_seconds", "lock" => "a").record(8.5);
    /// });
    /// let text = handle.render();
    /// assert!(text.contains(r#"leasehold_renewal_margin_seconds_bucket{lock="a",le="10"} 1"#), "{text}");
    /// assert!(text.contains(r#"leasehold_renewal_margin_seconds_count{lock="a"} 1"#), "{text}");
    /// assert!(!text.contains("quantile"), "{text}");
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Prometheus`] if the exporter refuses a family's buckets (it refuses an empty
    /// list; the registry has none).
    pub fn configure(builder: PrometheusBuilder) -> Result<PrometheusBuilder, Error> {
        FAMILIES
            .iter()
            .filter(|f| f.kind == Kind::Histogram)
            .try_fold(builder, |builder, f| {
                builder
                    .set_buckets_for_metric(Matcher::Full(f.name.to_owned()), f.buckets)
                    .map_err(|e| Error::Prometheus(format!("buckets of {}: {e}", f.name)))
            })
    }

    /// The recorder's handle.
    pub fn handle(&self) -> &PrometheusHandle {
        &self.handle
    }

    /// Every metric recorded so far, in the Prometheus text format. A histogram series that has
    /// no observation yet is left out: the core registers a lock's histogram at its first
    /// observation, and a scrape between the two would otherwise show it once with a count of 0.
    pub fn render(&self) -> String {
        without_unobserved_histograms(self.handle.render())
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

/// `text` (the exporter's rendering) without the lines of every histogram series whose `_count`
/// is 0 (a family is a histogram by its `# TYPE` line). The exporter renders a series as its `_bucket` lines, each with the `le` label last, then
/// `_sum` and `_count` with the same labels; label values are escaped, so an unescaped `le="…"}`
/// at the end of a line is the bucket label.
fn without_unobserved_histograms(text: String) -> String {
    /// The series a sample line belongs to: its name without the histogram suffix and its labels
    /// without `le`.
    fn series(line: &str) -> Option<(&str, &str)> {
        let (sample, _value) = line.rsplit_once(' ')?;
        let (name, labels) = match sample.find('{') {
            Some(at) => sample.split_at(at),
            None => (sample, ""),
        };
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))?;
        let labels = match labels.rfind("le=\"") {
            Some(at) if name.ends_with("_bucket") && labels.ends_with("\"}") => {
                let kept = &labels[..at];
                kept.strip_suffix(',').unwrap_or(kept)
            }
            _ => labels.strip_suffix('}').unwrap_or(labels),
        };
        Some((base, labels))
    }
    let histograms: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.strip_suffix(" histogram"))
        .collect();
    let unobserved: Vec<(&str, &str)> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (sample, value) = line.rsplit_once(' ')?;
            let name = sample.split('{').next()?;
            let base = name.strip_suffix("_count")?;
            (histograms.contains(&base) && value.parse::<f64>() == Ok(0.0))
                .then(|| series(line))
                .flatten()
        })
        .collect();
    if unobserved.is_empty() {
        return text;
    }
    let mut kept = String::with_capacity(text.len());
    for line in text.lines() {
        let drop = !line.starts_with('#') && series(line).is_some_and(|s| unobserved.contains(&s));
        if !drop {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// Describes the families recorded through the `metrics` facade (the core's and the jobs') to the
/// global recorder.
fn describe_all() {
    describe(Source::Elector);
    describe(Source::Jobs);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A histogram registered and not yet observed (the moment between the core's registration
    /// and its first `record`) is rendered by the exporter with a count of 0, and left out here;
    /// an observed series of the same family, other families and a label value that looks like
    /// a bucket label are kept.
    #[test]
    fn a_registered_histogram_without_an_observation_is_not_rendered() {
        let recorder = PrometheusMetrics::configure(PrometheusBuilder::new())
            .expect("buckets")
            .build_recorder();
        let metrics = PrometheusMetrics::from_handle(recorder.handle());
        let tricky = r#"b",le="1"}"#;
        metrics::with_local_recorder(&recorder, || {
            let _registered =
                metrics::histogram!(leasehold::metrics::ACQUIRE_SECONDS, "lock" => "a");
            metrics::histogram!(leasehold::metrics::ACQUIRE_SECONDS, "lock" => tricky).record(0.2);
            metrics::counter!("app_requests_count").increment(0);
        });
        let raw = metrics.handle().render();
        assert!(
            raw.contains(r#"leasehold_acquire_seconds_count{lock="a"} 0"#),
            "the exporter renders the empty series: {raw}"
        );
        let text = metrics.render();
        assert!(!text.contains(r#"lock="a""#), "{text}");
        assert!(
            text.contains(r#"leasehold_acquire_seconds_count{lock="b\",le=\"1\"}"} 1"#),
            "{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.contains("lock=\"b")).count(),
            raw.lines().filter(|l| l.contains("lock=\"b")).count(),
            "{text}"
        );
        assert!(
            text.contains("app_requests_count 0"),
            "a counter at 0 stays: {text}"
        );
        assert!(
            text.contains("# TYPE leasehold_acquire_seconds histogram"),
            "{text}"
        );
    }
}
