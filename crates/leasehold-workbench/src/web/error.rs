//! Errors of the web layer: starting a server, and the JSON errors the API answers with.

use std::net::SocketAddr;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::sim::{PERIOD_TICKS, Scenario, SimError};

/// Why a workbench or live-view server could not start or stopped with an error.
///
/// ```
/// use leasehold_workbench::web::{WebError, check_bind};
/// let err = check_bind("192.0.2.7:7878".parse()?, false).unwrap_err();
/// assert!(matches!(err, WebError::NotLoopback(_)));
/// assert!(err.to_string().contains("--allow-remote"));
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The bind address is not a loopback address and remote access was not allowed.
    #[error(
        "refusing to listen on {0}: it is not a loopback address, and the page and its API have \
         no authentication (anyone who can reach the port could read lock holders). Bind to \
         127.0.0.1 or [::1], or pass --allow-remote if the network in front of it is trusted"
    )]
    NotLoopback(SocketAddr),
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("the web server failed: {0}")]
    Serve(#[source] std::io::Error),
    /// The management routes could not be built (e.g. an invalid lock name).
    #[error("cannot build the management routes: {0}")]
    Management(#[from] leasehold_axum::Error),
    /// The live view's slot count was refused by the group options.
    #[error("invalid live view options: {0}")]
    Options(#[source] leasehold::error::OptionsError),
    /// No lock was given to the live view.
    #[error("the live view needs at least one lock (--lock NAME)")]
    NoLocks,
}

/// The body of every 4xx/5xx answer of the API:
/// `{"error": "...", "code": "...", "details": {...}}`.
///
/// `error` is the English message; `code` says which refusal it is and `details` holds the
/// values it names (see [`ERROR_CODES`]), so that a page in another language can say the same
/// in its own words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ApiError {
    #[serde(skip)]
    status: StatusCode,
    error: String,
    code: &'static str,
    details: Value,
}

/// Every `code` an API error may carry, each with the `details` it comes with.
///
/// ```
/// let codes = leasehold_workbench::web::ERROR_CODES;
/// assert!(codes.iter().any(|(code, _)| *code == "min_lease_above_lease"));
/// ```
pub const ERROR_CODES: [(&str, &[&str]); 16] = [
    ("bad_query", &[]),
    ("unknown_parameter", &["parameter", "allowed"]),
    ("duplicate_parameter", &["parameter"]),
    ("missing_scenario", &["expected"]),
    ("not_a_number", &["parameter", "value"]),
    ("not_a_flag", &["parameter", "value"]),
    ("unknown_scenario", &["given", "expected"]),
    (
        "out_of_range",
        &["parameter", "value", "min", "max", "unit"],
    ),
    ("min_lease_above_lease", &["min_lease", "lease"]),
    ("slots_outside_group", &["scenario", "slots"]),
    ("period_outside_period_scenario", &["scenario", "period"]),
    ("missing_period", &["min", "max"]),
    (
        "outage_beyond_run",
        &["outage_from", "outage_ticks", "max_tick"],
    ),
    ("unknown_candidate", &["scenario", "given", "expected"]),
    ("does_not_apply", &["parameter", "scenario"]),
    ("simulation_failed", &[]),
];

impl ApiError {
    /// 400 Bad Request with `message` (say what was wrong and what is allowed), its code (one of
    /// [`ERROR_CODES`]) and the values the message names.
    pub(crate) fn bad_request(
        code: &'static str,
        message: impl Into<String>,
        details: Value,
    ) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            error: message.into(),
            code,
            details,
        }
    }

    /// 500 Internal Server Error with `message` (code `simulation_failed`).
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: message.into(),
            code: "simulation_failed",
            details: json!({}),
        }
    }
}

impl From<SimError> for ApiError {
    /// A refused simulation: 400 with the error's code and values, or 500 for a failed one.
    fn from(e: SimError) -> Self {
        let (code, details) = match &e {
            SimError::UnknownScenario { given, .. } => (
                "unknown_scenario",
                json!({ "given": given, "expected": Scenario::ALL.map(Scenario::id) }),
            ),
            SimError::OutOfRange {
                parameter,
                value,
                min,
                max,
                unit,
            } => (
                "out_of_range",
                json!({ "parameter": parameter, "value": value, "min": min, "max": max, "unit": unit }),
            ),
            SimError::MinLeaseAboveLease { min_lease, lease } => (
                "min_lease_above_lease",
                json!({ "min_lease": min_lease, "lease": lease }),
            ),
            SimError::SlotsOutsideGroup { scenario, slots } => (
                "slots_outside_group",
                json!({ "scenario": scenario, "slots": slots }),
            ),
            SimError::PeriodOutsidePeriodScenario { scenario, period } => (
                "period_outside_period_scenario",
                json!({ "scenario": scenario, "period": period }),
            ),
            SimError::MissingPeriod => (
                "missing_period",
                json!({ "min": PERIOD_TICKS.start(), "max": PERIOD_TICKS.end() }),
            ),
            SimError::OutageBeyondRun {
                outage_from,
                outage_ticks,
                max_tick,
            } => (
                "outage_beyond_run",
                json!({ "outage_from": outage_from, "outage_ticks": outage_ticks, "max_tick": max_tick }),
            ),
            SimError::UnknownCandidate {
                scenario, given, ..
            } => {
                let expected = Scenario::parse(scenario).map_or(&[][..], Scenario::candidates);
                (
                    "unknown_candidate",
                    json!({ "scenario": scenario, "given": given, "expected": expected }),
                )
            }
            SimError::DoesNotApply {
                parameter,
                scenario,
            } => (
                "does_not_apply",
                json!({ "parameter": parameter, "scenario": scenario }),
            ),
            SimError::Failed(_) => return Self::internal(e.to_string()),
        };
        Self::bad_request(code, e.to_string(), details)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes() -> Vec<&'static str> {
        ERROR_CODES.iter().map(|(code, _)| *code).collect()
    }

    #[test]
    fn every_simulation_error_has_a_listed_code_and_the_details_listed_for_it() {
        let errors = [
            SimError::UnknownScenario {
                given: "nope".into(),
                expected: "contention".into(),
            },
            SimError::OutOfRange {
                parameter: "wait",
                value: 21,
                min: 0,
                max: 20,
                unit: "ticks",
            },
            SimError::MinLeaseAboveLease {
                min_lease: 11,
                lease: 10,
            },
            SimError::SlotsOutsideGroup {
                scenario: "expiry",
                slots: 2,
            },
            SimError::PeriodOutsidePeriodScenario {
                scenario: "expiry",
                period: 8,
            },
            SimError::MissingPeriod,
            SimError::OutageBeyondRun {
                outage_from: 20,
                outage_ticks: 4,
                max_tick: 22,
            },
            SimError::UnknownCandidate {
                scenario: "contention",
                given: "node-d".into(),
                expected: "node-a, node-b, node-c".into(),
            },
            SimError::DoesNotApply {
                parameter: "shards",
                scenario: "group",
            },
            SimError::Failed("no runtime".into()),
        ];
        for e in errors {
            let api = ApiError::from(e.clone());
            assert_eq!(api.error, e.to_string());
            assert_eq!(
                api.status,
                if e.is_usage() {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            );
            let (_, keys) = ERROR_CODES
                .iter()
                .find(|(code, _)| *code == api.code)
                .unwrap_or_else(|| panic!("{} is not in ERROR_CODES", api.code));
            let mut given: Vec<&str> = api
                .details
                .as_object()
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default();
            given.sort_unstable();
            let mut listed = keys.to_vec();
            listed.sort_unstable();
            assert_eq!(given, listed, "{}", api.code);
        }
        let min = ApiError::from(SimError::MinLeaseAboveLease {
            min_lease: 11,
            lease: 10,
        });
        assert_eq!(min.details, json!({ "min_lease": 11, "lease": 10 }));
        let mut sorted = codes();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ERROR_CODES.len(), "codes are unique");
    }
}
