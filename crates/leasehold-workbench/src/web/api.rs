//! The workbench's routes: the page, `/api/scenarios` and `/api/simulate`.

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use serde_json::json;

use crate::sim;
use crate::web::error::ApiError;
use crate::web::page;

/// The query parameters `/api/simulate` accepts, in the order the error message lists them.
const PARAMETERS: [&str; 13] = [
    "scenario",
    "action",
    "lease",
    "wait",
    "min_lease",
    "auto_extend",
    "slots",
    "period",
    "fail_action",
    "outage_from",
    "outage_ticks",
    "shards",
    "nodes",
];

/// The workbench: `GET /` (the page), `GET /api/version` (`{"name": "leasehold", "version":
/// "…"}`, [`VERSION`](crate::web::VERSION)), `GET /api/scenarios` (the scenarios and their
/// presets, in display order) and `GET /api/simulate?scenario=S[&action=A&lease=L&wait=W&min_lease=M
/// &auto_extend=true|false&slots=N&period=P&fail_action=NODE&outage_from=T&outage_ticks=N
/// &shards=S&nodes=N]` (the
/// [`sim::Timeline`]; `fail_action` names a candidate, `node-c` or `c`, or `none`; 400 with
/// `{"error": "...", "code": "...", "details": {...}}` on bad input, the code and its details
/// one of [`ERROR_CODES`](crate::web::ERROR_CODES); `slots` above 1 only for `group`, `period`
/// only for `period`, `shards` and `nodes` only for `partition`). Each simulation runs on a blocking thread, since it drives its own
/// runtime. `GET /docs/fencing[?lang=ko]` is the manual page "Fencing your writes"
/// ([`FENCING_MD`](crate::web::FENCING_MD)) rendered as HTML, with its way back to the
/// workbench in the page's language.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use axum::{body::Body, http::Request};
/// use tower::ServiceExt;
///
/// let app = leasehold_workbench::web::workbench_router();
/// let ok = app.clone().oneshot(Request::get("/api/simulate?scenario=fencing").body(Body::empty())?).await?;
/// assert_eq!(ok.status(), 200);
/// let bad = app.clone().oneshot(Request::get("/api/simulate?scenario=fencing&lease=0").body(Body::empty())?).await?;
/// assert_eq!(bad.status(), 400); // {"error": "`lease` must be between …", "code": "out_of_range", …}
/// // The Fencing scenario links to the manual page it illustrates, rendered as HTML.
/// let doc = app.oneshot(Request::get("/docs/fencing?lang=ko").body(Body::empty())?).await?;
/// assert_eq!(doc.status(), 200);
/// assert!(doc.headers()["content-type"].to_str()?.starts_with("text/html"));
/// # Ok(()) }
/// ```
pub fn workbench_router() -> Router {
    Router::new()
        .route("/", get(|| async { page::respond(page::WORKBENCH_HTML) }))
        .route("/api/scenarios", get(scenarios))
        .route("/api/version", get(version))
        .route("/api/simulate", get(simulate))
        .route("/docs/fencing", get(fencing))
}

/// `?lang=` of `/docs/fencing`: the language of the words around the (English) manual.
#[derive(Debug, Default, serde::Deserialize)]
struct ManualQuery {
    lang: Option<String>,
}

async fn fencing(query: Result<Query<ManualQuery>, QueryRejection>) -> Response {
    let lang = query.ok().and_then(|Query(q)| q.lang);
    page::respond(page::fencing_page(lang.as_deref()))
}

async fn version() -> Response {
    no_store(Json(json!({ "name": "leasehold", "version": page::VERSION })).into_response())
}

async fn scenarios() -> Response {
    no_store(Json(sim::scenarios()).into_response())
}

async fn simulate(query: Result<Query<Vec<(String, String)>>, QueryRejection>) -> Response {
    match run(query).await {
        Ok(timeline) => no_store(Json(timeline).into_response()),
        Err(e) => e.into_response(),
    }
}

async fn run(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<sim::Timeline, ApiError> {
    let Query(pairs) = query.map_err(|e| {
        ApiError::bad_request(
            "bad_query",
            format!("cannot read the query string: {e}"),
            json!({}),
        )
    })?;
    let request = SimulateRequest::parse(&pairs)?;
    tokio::task::spawn_blocking(move || request.simulate())
        .await
        .map_err(|e| ApiError::internal(format!("the simulation did not finish: {e}")))?
}

/// `/api/simulate`'s parameters after parsing, before the simulation validates their ranges.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct SimulateRequest {
    scenario: String,
    overrides: sim::Overrides,
    /// `fail_action` as given (a node id or letter; `none` is not kept): which candidates there
    /// are depends on the scenario.
    fail_action: Option<String>,
}

impl SimulateRequest {
    fn parse(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut seen: Vec<&str> = Vec::new();
        let mut scenario = None;
        let mut o = sim::Overrides::default();
        let mut fail_action = None;
        for (key, value) in pairs {
            let Some(&name) = PARAMETERS.iter().find(|p| **p == key.as_str()) else {
                return Err(ApiError::bad_request(
                    "unknown_parameter",
                    format!(
                        "unknown parameter `{key}`; allowed: {}",
                        PARAMETERS.join(", ")
                    ),
                    json!({ "parameter": key, "allowed": PARAMETERS }),
                ));
            };
            if seen.contains(&name) {
                return Err(ApiError::bad_request(
                    "duplicate_parameter",
                    format!("parameter `{name}` is given twice; give each parameter at most once"),
                    json!({ "parameter": name }),
                ));
            }
            seen.push(name);
            match name {
                "scenario" => scenario = Some(value.clone()),
                "action" => o.action = Some(ticks(name, value)?),
                "lease" => o.lease = Some(ticks(name, value)?),
                "wait" => o.wait = Some(ticks(name, value)?),
                "min_lease" => o.min_lease = Some(ticks(name, value)?),
                "slots" => o.slots = Some(ticks(name, value)?),
                "period" => o.period = Some(ticks(name, value)?),
                "outage_from" => o.outage_from = Some(ticks(name, value)?),
                "outage_ticks" => o.outage_ticks = Some(ticks(name, value)?),
                "shards" => o.shards = Some(ticks(name, value)?),
                "nodes" => o.nodes = Some(ticks(name, value)?),
                "fail_action" => {
                    fail_action =
                        Some(value.trim().to_owned()).filter(|v| v != "none" && !v.is_empty());
                }
                _ => o.auto_extend = Some(flag(name, value)?),
            }
        }
        let scenario = scenario.ok_or_else(|| {
            ApiError::bad_request(
                "missing_scenario",
                format!(
                    "missing parameter `scenario`; one of: {}",
                    scenario_ids().join(", ")
                ),
                json!({ "expected": scenario_ids() }),
            )
        })?;
        Ok(Self {
            scenario,
            overrides: o,
            fail_action,
        })
    }

    fn simulate(&self) -> Result<sim::Timeline, ApiError> {
        let mut overrides = self.overrides;
        if let Some(given) = &self.fail_action {
            let scenario = sim::Scenario::parse(&self.scenario)?;
            overrides.fail_action = Some(scenario.candidate_letter(given)?);
        }
        sim::simulate(&self.scenario, &overrides).map_err(|e| {
            if !e.is_usage() {
                tracing::error!(error = %e, "leasehold workbench: a simulation failed");
            }
            ApiError::from(e)
        })
    }
}

fn scenario_ids() -> Vec<&'static str> {
    sim::Scenario::ALL.map(sim::Scenario::id).to_vec()
}

fn ticks(name: &str, value: &str) -> Result<u32, ApiError> {
    value.trim().parse().map_err(|_| {
        ApiError::bad_request(
            "not_a_number",
            format!(
                "parameter `{name}` must be a whole number (ticks, or slots for `slots`), got `{value}`"
            ),
            json!({ "parameter": name, "value": value }),
        )
    })
}

fn flag(name: &str, value: &str) -> Result<bool, ApiError> {
    match value.trim() {
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        _ => Err(ApiError::bad_request(
            "not_a_flag",
            format!("parameter `{name}` must be `true` or `false`, got `{value}`"),
            json!({ "parameter": name, "value": value }),
        )),
    }
}

fn no_store(mut res: Response) -> Response {
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
