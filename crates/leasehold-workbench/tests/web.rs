//! The workbench's HTTP routes and the live view, through the real router (tower `oneshot`) and
//! through a real listener on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use leasehold::{ElectionOptions, Elector, LockName, MemoryStore};
use leasehold_workbench::sim;
use leasehold_workbench::web::{self, LiveView, WebError};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

struct Answer {
    status: StatusCode,
    content_type: String,
    csp: Option<String>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

async fn get(app: &Router, uri: &str) -> Answer {
    let res = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let header_text = |name| {
        res.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let content_type = header_text(header::CONTENT_TYPE).unwrap_or_default();
    let csp = header_text(header::CONTENT_SECURITY_POLICY);
    let status = res.status();
    let body = res.into_body().collect().await.unwrap().to_bytes().to_vec();
    Answer {
        status,
        content_type,
        csp,
        body,
    }
}

#[tokio::test]
async fn the_page_is_served_self_contained() {
    let page = get(&web::workbench_router(), "/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.content_type.starts_with("text/html"),
        "{}",
        page.content_type
    );
    let html = page.text();
    assert!(html.contains("<title>leasehold workbench</title>"));
    for external in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "src=\"//",
    ] {
        assert!(!html.contains(external), "the page loads {external}…");
    }
    let csp = page.csp.expect("a content security policy");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
}

/// The `min` and `max` of the page's slider for `name`.
fn slider_range(html: &str, name: &str) -> (u32, u32) {
    let tag = format!("<input type=\"range\" id=\"in-{name}\"");
    let start = html
        .find(&tag)
        .unwrap_or_else(|| panic!("no slider for {name}"));
    let input = &html[start..start + html[start..].find('>').unwrap()];
    let attr = |a: &str| -> u32 {
        let at = input.find(&format!(" {a}=\"")).unwrap() + a.len() + 3;
        input[at..at + input[at..].find('"').unwrap()]
            .parse()
            .unwrap()
    };
    (attr("min"), attr("max"))
}

#[test]
fn the_pages_sliders_offer_the_ranges_the_server_accepts() {
    let html = web::WORKBENCH_HTML;
    for (name, range) in [
        ("action", sim::ACTION_TICKS),
        ("lease", sim::LEASE_TICKS),
        ("wait", sim::WAIT_TICKS),
        ("slots", sim::GROUP_SLOTS),
        ("period", sim::PERIOD_TICKS),
        ("outage_ticks", sim::OUTAGE_TICKS),
        ("shards", sim::SHARDS),
        ("nodes", sim::PARTITION_NODES),
    ] {
        assert_eq!(
            slider_range(html, name),
            (*range.start(), *range.end()),
            "{name}"
        );
    }
    // The min lease goes from 0 to the lease: the page moves the slider's end with the lease
    // (its first end is the lease slider's first value), and Params::validate refuses one more.
    let (min, max) = slider_range(html, "min_lease");
    assert_eq!(min, 0);
    assert!(
        html.contains(
            "id=\"in-lease\" name=\"lease\" min=\"2\" max=\"30\" step=\"1\" value=\"10\""
        )
    );
    assert_eq!(max, 10);
    for lease in sim::LEASE_TICKS {
        let at = |min_lease| sim::Overrides {
            lease: Some(lease),
            min_lease: Some(min_lease),
            ..sim::Overrides::default()
        };
        assert!(
            at(lease).apply(sim::Scenario::Contention).is_ok(),
            "{lease}"
        );
        assert_eq!(
            at(lease + 1).apply(sim::Scenario::Contention),
            Err(sim::SimError::MinLeaseAboveLease {
                min_lease: lease + 1,
                lease
            })
        );
    }
}

#[test]
fn the_korean_page_has_a_sentence_for_every_error_code() {
    let html = web::WORKBENCH_HTML;
    let start = html
        .find("      refusal: {")
        .expect("the Korean refusal sentences");
    let table = &html[start..start + html[start..].find("\n      },").unwrap()];
    for (code, details) in web::ERROR_CODES {
        let at = table
            .find(&format!("\n        {code}: \""))
            .unwrap_or_else(|| panic!("no Korean sentence for `{code}`"));
        let sentence = &table[at..at + table[at..].find("\",").unwrap_or(table.len() - at)];
        // A sentence uses only the values the server sends (or the page's words for them).
        for name in sentence
            .split('{')
            .skip(1)
            .map(|s| &s[..s.find('}').unwrap()])
        {
            let derived = match name {
                "name" => "parameter",
                "scenario_name" => "scenario",
                other => other,
            };
            assert!(
                details.contains(&derived),
                "`{code}`: {{{name}}} is not among its details {details:?}"
            );
        }
    }
}

#[tokio::test]
async fn the_fencing_manual_is_served_rendered_as_html() {
    let app = web::workbench_router();
    let page = get(&app, "/docs/fencing?lang=en").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.content_type.starts_with("text/html; charset=utf-8"),
        "{}",
        page.content_type
    );
    assert!(
        page.csp
            .as_ref()
            .is_some_and(|csp| csp.contains("default-src 'none'"))
    );
    let html = page.text();
    assert!(html.contains("<html lang=\"en\">"));
    assert!(html.contains("<h1>Fencing your writes</h1>"), "{html}");
    assert!(html.contains("<table>") && html.contains("<th>you write to</th>"));
    assert!(html.contains("<pre><code class=\"language-rust\">use std::sync::Arc;"));
    assert!(html.contains("<blockquote>"));
    assert!(html.contains("href=\"../?scenario=fencing&amp;lang=en\""));
    // No Markdown is left: no fences, headings, link syntax or emphasis markers, and none of the
    // lines rustdoc hides; links to pages the workbench does not serve name the file instead.
    for markdown in [
        "```",
        "# Fencing your writes",
        "\n## ",
        "](",
        "**",
        "# #[tokio::main",
        "# Ok(()) }",
    ] {
        assert!(
            !html.contains(markdown),
            "{markdown:?} in the rendered page"
        );
    }
    assert!(!html.contains("href=\"leasehold-sql.md"));
    assert!(html.contains("versions are in <code>docs/leasehold-sql.md</code>;"));
    assert!(html.contains("see benchmarks (<code>docs/benchmarks.md</code>), section"));
    for external in ["src=\"http", "url(http", "@import", "<script"] {
        assert!(
            !html.contains(external),
            "the manual page loads {external}…"
        );
    }

    // The Korean page: the words around the manual are Korean, the manual is marked English.
    let ko = get(&app, "/docs/fencing?lang=ko").await.text();
    assert!(ko.contains("<html lang=\"ko\">"));
    assert!(ko.contains("<article lang=\"en\">"));
    assert!(ko.contains("워크벤치로 돌아가기") && ko.contains("영어로만"));
    assert!(ko.contains("href=\"../?scenario=fencing&amp;lang=ko\""));
    // Without a language, or with one it does not know, it is English.
    for uri in [
        "/docs/fencing",
        "/docs/fencing?lang=xx",
        "/docs/fencing?lang=ko&lang=en",
    ] {
        let page = get(&app, uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}");
        assert!(page.text().contains("<html lang=\"en\">"), "{uri}");
    }
}

#[tokio::test]
async fn the_version_is_served_and_the_page_says_what_a_tick_is() {
    let answer = get(&web::workbench_router(), "/api/version").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.content_type.starts_with("application/json"));
    assert_eq!(
        answer.json(),
        serde_json::json!({ "name": "leasehold", "version": env!("CARGO_PKG_VERSION") })
    );
    assert_eq!(web::VERSION, env!("CARGO_PKG_VERSION"));
    // The page's statement of a tick is the simulation's tick.
    assert_eq!(sim::TICK, Duration::from_secs(1));
    let html = web::WORKBENCH_HTML;
    assert!(html.contains("One tick is 1 s of virtual time"));
    assert!(html.contains("1틱은 가상 시간 1초입니다"));
    assert!(html.contains("no store latency is modelled"));
    assert!(html.contains("api/version"));
    // The manual page names the version too.
    let manual = get(&web::workbench_router(), "/docs/fencing").await.text();
    assert!(manual.contains(&format!("leasehold {}", web::VERSION)));
}

#[tokio::test]
async fn scenarios_are_listed_in_display_order_with_presets() {
    let answer = get(&web::workbench_router(), "/api/scenarios").await;
    assert_eq!(answer.status, StatusCode::OK);
    let list = answer.json();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "contention",
            "expiry",
            "extension",
            "group",
            "fencing",
            "period",
            "partition"
        ]
    );
    for s in list.as_array().unwrap() {
        // Only the partition scenario has shards and nodes.
        for key in ["shards", "nodes"] {
            assert_eq!(
                s["preset"].get(key).is_some(),
                s["id"] == "partition",
                "{s}"
            );
        }
        // Only the period scenario has a period; the others' presets are as they were.
        assert_eq!(
            s["preset"].get("period").is_some(),
            s["id"] == "period",
            "{s}"
        );
        for key in [
            "action",
            "lease",
            "wait",
            "min_lease",
            "auto_extend",
            "slots",
        ] {
            assert!(
                !s["preset"][key].is_null(),
                "{} has no preset {key}",
                s["id"]
            );
        }
    }
}

#[tokio::test]
async fn simulate_returns_the_simulations_timeline_byte_for_byte() {
    let app = web::workbench_router();
    for id in [
        "contention",
        "expiry",
        "extension",
        "group",
        "fencing",
        "period",
        "partition",
    ] {
        let answer = get(&app, &format!("/api/simulate?scenario={id}")).await;
        assert_eq!(answer.status, StatusCode::OK, "{id}: {}", answer.text());
        assert!(answer.content_type.starts_with("application/json"));
        let direct = sim::simulate(id, &sim::Overrides::default()).unwrap();
        assert_eq!(answer.body, serde_json::to_vec(&direct).unwrap(), "{id}");
        let timeline = answer.json();
        assert_eq!(timeline["scenario"], id);
        let frames = timeline["frames"].as_array().unwrap().len();
        assert_eq!(frames as u64, timeline["max_tick"].as_u64().unwrap() + 1);
    }
}

#[tokio::test]
async fn overrides_reach_the_simulation() {
    let app = web::workbench_router();
    let answer = get(
        &app,
        "/api/simulate?scenario=contention&action=3&lease=9&wait=1&min_lease=7&auto_extend=true",
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let params = &answer.json()["params"];
    assert_eq!(params["action"], 3);
    assert_eq!(params["lease"], 9);
    assert_eq!(params["wait"], 1);
    assert_eq!(params["min_lease"], 7);
    assert_eq!(params["auto_extend"], true);

    let group = get(&app, "/api/simulate?scenario=group&slots=3").await;
    assert_eq!(group.status, StatusCode::OK, "{}", group.text());
    assert_eq!(group.json()["params"]["slots"], 3);

    let period = get(&app, "/api/simulate?scenario=period&period=6").await;
    assert_eq!(period.status, StatusCode::OK, "{}", period.text());
    let timeline = period.json();
    assert_eq!(timeline["params"]["period"], 6);
    let refused = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["outcome"] == "already_ran")
        .expect("a refusal by the ledger");
    assert_eq!(refused["ledger"]["by"], "node-a");
    assert_eq!(refused["ledger"]["period"], 0);
    assert_eq!(refused["ledger"]["tick"], 0);

    // A failing action and a store outage, by node id or letter; `none` is no failing action.
    for (query, fail_action) in [
        ("fail_action=node-c", Some("c")),
        ("fail_action=c", Some("c")),
        ("fail_action=none", None),
    ] {
        let answer = get(&app, &format!("/api/simulate?scenario=contention&{query}")).await;
        assert_eq!(answer.status, StatusCode::OK, "{query}: {}", answer.text());
        let t = answer.json();
        assert_eq!(t["params"]["fail_action"].as_str(), fail_action, "{query}");
        let failed = t["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["operation"] == "fail" && e["outcome"] == "action_failed");
        assert_eq!(failed, fail_action.is_some(), "{query}");
    }
    let down = get(
        &app,
        "/api/simulate?scenario=contention&outage_from=1&outage_ticks=3",
    )
    .await;
    assert_eq!(down.status, StatusCode::OK, "{}", down.text());
    let t = down.json();
    assert_eq!(
        (
            t["params"]["outage_from"].as_u64(),
            t["params"]["outage_ticks"].as_u64()
        ),
        (Some(1), Some(3))
    );
    let b: Vec<(u64, &str, &str)> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["candidate"] == "node-b")
        .map(|e| {
            (
                e["tick"].as_u64().unwrap(),
                e["operation"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        b,
        [
            (1, "try_acquire", "store_error"),
            (3, "fail", "store_error")
        ]
    );
}

#[tokio::test]
async fn bad_input_is_a_400_with_a_message_naming_the_problem() {
    let app = web::workbench_router();
    for (query, needle, code) in [
        ("", "scenario", "missing_scenario"),
        ("scenario=nope", "nope", "unknown_scenario"),
        ("scenario=contention&action=abc", "action", "not_a_number"),
        ("scenario=contention&action=-1", "action", "not_a_number"),
        (
            "scenario=contention&auto_extend=maybe",
            "auto_extend",
            "not_a_flag",
        ),
        (
            "scenario=contention&colour=red",
            "colour",
            "unknown_parameter",
        ),
        (
            "scenario=contention&lease=4&lease=5",
            "lease",
            "duplicate_parameter",
        ),
        (
            "scenario=contention&lease=10&min_lease=11",
            "min_lease",
            "min_lease_above_lease",
        ),
        ("scenario=contention&action=0", "action", "out_of_range"),
        ("scenario=contention&lease=999", "lease", "out_of_range"),
        (
            "scenario=contention&slots=2",
            "slots",
            "slots_outside_group",
        ),
        (
            "scenario=contention&period=8",
            "only to the `period` scenario",
            "period_outside_period_scenario",
        ),
        (
            "scenario=period&period=5",
            "`period` must be between 6 and 12 ticks",
            "out_of_range",
        ),
        ("scenario=period&period=x", "period", "not_a_number"),
        (
            "scenario=contention&outage_ticks=13",
            "`outage_ticks` must be between 0 and 12 ticks",
            "out_of_range",
        ),
        (
            "scenario=contention&outage_from=21&outage_ticks=3",
            "ticks 0 to 22",
            "outage_beyond_run",
        ),
        (
            "scenario=contention&outage_from=x",
            "outage_from",
            "not_a_number",
        ),
        (
            "scenario=contention&fail_action=node-d",
            "node-d",
            "unknown_candidate",
        ),
        ("scenario=expiry&fail_action=zz", "zz", "unknown_candidate"),
        (
            "scenario=nope&fail_action=node-a",
            "nope",
            "unknown_scenario",
        ),
    ] {
        let answer = get(&app, &format!("/api/simulate?{query}")).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            answer.text()
        );
        let body = answer.json();
        let error = body["error"].as_str().unwrap().to_owned();
        assert!(error.contains(needle), "{query}: {error}");
        // A typed code and the values the message names, for a page to word in its language.
        assert_eq!(body["code"], code, "{query}: {body}");
        let (_, keys) = web::ERROR_CODES.iter().find(|(c, _)| *c == code).unwrap();
        let details = body["details"].as_object().unwrap();
        let mut given: Vec<&str> = details.keys().map(String::as_str).collect();
        given.sort_unstable();
        let mut listed = keys.to_vec();
        listed.sort_unstable();
        assert_eq!(given, listed, "{query}: {body}");
    }
    let details = |query: &'static str| {
        let app = app.clone();
        async move { get(&app, &format!("/api/simulate?{query}")).await.json()["details"].clone() }
    };
    assert_eq!(
        details("scenario=contention&lease=10&min_lease=11").await,
        serde_json::json!({ "min_lease": 11, "lease": 10 })
    );
    assert_eq!(
        details("scenario=contention&wait=21").await,
        serde_json::json!({ "parameter": "wait", "value": 21, "min": 0, "max": 20, "unit": "ticks" })
    );
    assert_eq!(
        details("scenario=nope").await,
        serde_json::json!({
            "given": "nope",
            "expected": ["contention", "expiry", "extension", "group", "fencing", "period", "partition"]
        })
    );
    assert_eq!(
        details("scenario=contention&fail_action=node-d").await,
        serde_json::json!({
            "scenario": "contention",
            "given": "node-d",
            "expected": ["node-a", "node-b", "node-c"]
        })
    );
    assert_eq!(
        details("scenario=contention&outage_from=21&outage_ticks=3").await,
        serde_json::json!({ "outage_from": 21, "outage_ticks": 3, "max_tick": 22 })
    );
    assert_eq!(
        details("scenario=group&slots=x").await,
        serde_json::json!({ "parameter": "slots", "value": "x" })
    );
}

fn held_view() -> (Arc<MemoryStore>, LiveView) {
    let store = Arc::new(MemoryStore::new());
    let locks = vec![
        LockName::new("nightly").unwrap(),
        LockName::new("idle").unwrap(),
    ];
    let view = LiveView::new(store.clone(), locks)
        .unwrap()
        .store_label("memory:");
    (store, view)
}

#[tokio::test]
async fn the_live_view_lists_the_holder_of_a_held_lock() {
    let (store, view) = held_view();
    let options = ElectionOptions::builder()
        .node_id("worker-7")
        .lease(Duration::from_secs(60))
        .build()
        .unwrap();
    let elector = Elector::with_options(store, options);
    let guard = elector
        .try_acquire("nightly")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let app = view.router("127.0.0.1:7879".parse().unwrap()).unwrap();

    let live = get(&app, "/api/live").await;
    assert_eq!(live.status, StatusCode::OK);
    let report = live.json();
    assert_eq!(report["store"], "memory:");
    assert_eq!(report["locks"][0]["lock"], "nightly");
    let holder = &report["locks"][0]["holders"][0];
    assert_eq!(holder["owner"], "worker-7");
    assert_eq!(holder["fence"], guard.fence());
    assert_eq!(holder["slot"], 0);
    let left = holder["time_left_ms"].as_u64().unwrap();
    assert!(left > 50_000 && left <= 60_000, "{left}");
    assert_eq!(report["locks"][1]["lock"], "idle");
    assert_eq!(report["locks"][1]["holders"], Value::Array(vec![]));

    let manage = get(&app, web::MANAGEMENT_PATH).await;
    assert_eq!(manage.status, StatusCode::OK, "{}", manage.text());
    let locks = manage.json()["locks"].clone();
    let nightly = locks
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "nightly")
        .unwrap()
        .clone();
    assert_eq!(nightly["leaderId"], "worker-7");

    let page = get(&app, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("api/live"));

    guard.release().await.unwrap();
    let after = get(&app, "/api/live").await.json();
    assert_eq!(after["locks"][0]["holders"], Value::Array(vec![]));
}

#[tokio::test]
async fn the_live_view_mounts_the_management_report_at_the_axum_crates_path() {
    let (_store, view) = held_view();
    let app = view.router("127.0.0.1:7879".parse().unwrap()).unwrap();
    assert_eq!(web::MANAGEMENT_PATH, leasehold_axum::DEFAULT_PATH);
    let report = get(&app, "/management/leader-election").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    assert!(report.json()["locks"].is_array());

    // The former path still works: a permanent redirect to the new one.
    let res = app
        .clone()
        .oneshot(
            Request::get("/manage/leader-election")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::PERMANENT_REDIRECT);
    let location = res
        .headers()
        .get(header::LOCATION)
        .unwrap()
        .to_str()
        .unwrap();
    let base = url_join("/manage/leader-election", location);
    assert_eq!(base, "/management/leader-election", "{location}");

    // The page uses the new path.
    let page = get(&app, "/").await.text();
    assert!(page.contains("\"management/leader-election\""));
    assert!(!page.contains("manage/leader-election\""));
}

/// Resolves a relative `location` against `path` (enough for `../x/y` and `/x/y`).
fn url_join(path: &str, location: &str) -> String {
    if location.starts_with('/') {
        return location.to_owned();
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    for piece in location.split('/') {
        match piece {
            ".." => {
                parts.pop();
            }
            "." => {}
            other => parts.push(other),
        }
    }
    parts.join("/")
}

#[tokio::test]
async fn the_live_view_reads_group_slots() {
    let store = Arc::new(MemoryStore::new());
    let view = LiveView::new(store.clone(), vec![LockName::new("crawl").unwrap()])
        .unwrap()
        .slots(2)
        .unwrap();
    let group = leasehold::Elector::with_options(
        store,
        leasehold::ElectionOptions::builder()
            .max_leaders(2)
            .build()
            .unwrap(),
    );
    let _a = group.try_acquire("crawl").await.unwrap().elected().unwrap();
    let _b = group.try_acquire("crawl").await.unwrap().elected().unwrap();
    let report = view.report().await;
    let slots: Vec<u32> = report.locks[0].holders.iter().map(|h| h.slot).collect();
    assert_eq!(slots, [0, 1]);
}

#[tokio::test]
async fn remote_binds_are_refused_unless_allowed() {
    let err = web::bind("0.0.0.0:0".parse().unwrap(), false)
        .await
        .unwrap_err();
    assert!(matches!(err, WebError::NotLoopback(_)));
    assert!(err.to_string().contains("--allow-remote"), "{err}");
    assert!(matches!(
        LiveView::new(Arc::new(MemoryStore::new()), vec![]),
        Err(WebError::NoLocks)
    ));
}

/// A real listener on a free port: one raw HTTP/1.1 request, then graceful shutdown.
#[tokio::test]
async fn a_real_listener_serves_and_shuts_down_gracefully() {
    let listener = web::bind("127.0.0.1:0".parse().unwrap(), false)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(web::serve(
        listener,
        web::workbench_router(),
        false,
        async {
            let _ = stopped.await;
        },
    ));

    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(
        format!(
            "GET /api/simulate?scenario=fencing HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), conn.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"scenario\":\"fencing\""));

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn the_partition_scenario_takes_shards_nodes_and_lease_and_refuses_the_rest() {
    let app = web::workbench_router();
    let answer = get(
        &app,
        "/api/simulate?scenario=partition&shards=12&nodes=4&lease=4",
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let t = answer.json();
    assert_eq!(t["params"]["shards"], 12);
    assert_eq!(t["params"]["nodes"], 4);
    assert_eq!(t["params"]["lease"], 4);
    assert_eq!(t["lock"], "tenants");
    assert_eq!(t["candidates"].as_array().map(Vec::len), Some(4));
    assert_eq!(t["frames"][0]["shards"].as_array().map(Vec::len), Some(12));
    assert_eq!(t["partition"]["overlaps"], 0);
    assert_eq!(t["partition"]["fences_rise"], true);
    // The single-lock scenarios have no shards in their JSON.
    let group = get(&app, "/api/simulate?scenario=group").await.json();
    assert!(group["frames"][0].get("shards").is_none());
    assert!(group.get("partition").is_none());

    for (query, code, details) in [
        (
            "scenario=partition&wait=2",
            "does_not_apply",
            serde_json::json!({ "parameter": "wait", "scenario": "partition" }),
        ),
        (
            "scenario=group&shards=8",
            "does_not_apply",
            serde_json::json!({ "parameter": "shards", "scenario": "group" }),
        ),
        (
            "scenario=partition&shards=3",
            "out_of_range",
            serde_json::json!({ "parameter": "shards", "value": 3, "min": 4, "max": 16, "unit": "shards" }),
        ),
        (
            "scenario=partition&lease=10",
            "out_of_range",
            serde_json::json!({ "parameter": "lease", "value": 10, "min": 3, "max": 6, "unit": "ticks" }),
        ),
    ] {
        let answer = get(&app, &format!("/api/simulate?{query}")).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{query}");
        let body = answer.json();
        assert_eq!(body["code"], code, "{query}");
        assert_eq!(body["details"], details, "{query}");
    }
}
