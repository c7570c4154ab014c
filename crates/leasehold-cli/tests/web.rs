//! `leasehold workbench` and `leasehold serve` as a user starts them: the listening line, a real
//! HTTP request, the loopback rule, and a clean exit on SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{Env, PATIENCE, code, finish, signal, text};

/// Reads the `listening on http://ADDR/` line and returns ADDR.
fn listening(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(PATIENCE)
        .expect("a listening line within the patience");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
    addr.to_owned()
}

/// One GET over a fresh connection; returns (status line, body).
fn get(addr: &str, path: &str) -> (String, String) {
    get_as(addr, path, addr)
}

/// One GET over a fresh connection with `Host: host`; returns (status line, body).
fn get_as(addr: &str, path: &str, host: &str) -> (String, String) {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(PATIENCE)).expect("timeout");
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = String::new();
    conn.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

fn stop(child: Child) -> i32 {
    signal(child.id(), "TERM");
    let out = finish(child);
    assert!(
        out.status.code().is_some(),
        "ended by a signal instead of shutting down: {}",
        text(&out.stderr)
    );
    code(&out.status)
}

#[test]
fn workbench_prints_its_address_serves_the_api_and_stops_on_sigterm() {
    let env = Env::new();
    let mut child = env.spawn(&["workbench", "--bind", "127.0.0.1:0"]);
    let addr = listening(&mut child);
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );

    let (status, body) = get(&addr, "/api/scenarios");
    assert!(status.contains("200"), "{status}");
    assert!(
        body.contains("\"contention\"") && body.contains("\"fencing\""),
        "{body}"
    );
    let (status, body) = get(&addr, "/api/simulate?scenario=expiry&lease=1");
    assert!(status.contains("400"), "{status}");
    assert!(body.contains("lease"), "{body}");
    let (status, body) = get(&addr, "/");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("<title>leasehold workbench</title>"));

    assert_eq!(stop(child), 0);
}

#[test]
fn web_commands_refuse_non_loopback_addresses_without_allow_remote() {
    let env = Env::new();
    for args in [
        &["workbench", "--bind", "0.0.0.0:0"][..],
        &["serve", "--lock", "job", "--bind", "0.0.0.0:0"],
    ] {
        let out = env.output(args);
        assert_eq!(code(&out.status), 125, "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("not a loopback address") && err.contains("--allow-remote"),
            "{err}"
        );
        assert!(
            out.stdout.is_empty(),
            "nothing is listening, so nothing is announced"
        );
    }
}

#[test]
fn serve_shows_the_holder_of_a_lock_held_by_leasehold_run() {
    let env = Env::new();
    let marker = env.path("started");
    let script = format!("echo started > {} && sleep 60", marker.display());
    let holder = env.spawn(&[
        "run",
        "--lock",
        "nightly",
        "--node-id",
        "worker-1",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    common::wait_for_file(&marker);

    let mut server = env.spawn(&[
        "serve",
        "--lock",
        "nightly",
        "--lock",
        "other",
        "--bind",
        "127.0.0.1:0",
    ]);
    let addr = listening(&mut server);
    let (status, body) = get(&addr, "/api/live");
    assert!(status.contains("200"), "{status}");
    let live: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(live["locks"][0]["lock"], "nightly");
    assert_eq!(live["locks"][0]["holders"][0]["owner"], "worker-1");
    assert_eq!(live["locks"][1]["holders"], serde_json::json!([]));
    assert!(
        live["store"].as_str().unwrap_or("").starts_with("sqlite:"),
        "{live}"
    );
    let (status, body) = get(&addr, "/management/leader-election");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("\"leaderId\":\"worker-1\""), "{body}");

    signal(holder.id(), "TERM");
    let _ = finish(holder);
    let start = Instant::now();
    loop {
        let (_, body) = get(&addr, "/api/live");
        if body.contains("\"holders\":[]") && !body.contains("worker-1") {
            break;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the release never showed: {body}"
        );
        sleep(Duration::from_millis(100));
    }
    assert_eq!(stop(server), 0);
}

/// The two web commands, as started by the tests below (store from the environment).
const WEB_COMMANDS: [&[&str]; 2] = [
    &["workbench", "--bind", "127.0.0.1:0"],
    &["serve", "--lock", "job", "--bind", "127.0.0.1:0"],
];

/// Starts `leasehold ARGS` with the web server's info messages on stderr; returns the child, its
/// address and the stderr lines as they come.
fn spawn_logging(env: &Env, args: &[&str]) -> (Child, String, std::sync::mpsc::Receiver<String>) {
    let mut child = env
        .cmd(args)
        .env("LEASEHOLD_LOG", "leasehold=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn leasehold");
    let addr = listening(&mut child);
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, addr, rx)
}

/// A client that opened a connection and sent part of a request line, never the rest.
fn slow_client(addr: &str) -> TcpStream {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.write_all(b"GET /api/scen").expect("send");
    conn.set_read_timeout(Some(PATIENCE)).expect("timeout");
    conn
}

/// Whether the server closed `conn` (EOF or reset) rather than the read timing out.
fn closed_by_server(conn: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    match conn.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn sigterm_stops_the_server_promptly_while_a_client_holds_an_unfinished_request() {
    let env = Env::new();
    for args in WEB_COMMANDS {
        let mut child = env.spawn(args);
        let addr = listening(&mut child);
        let mut slow = slow_client(&addr);
        let (status, _) = get(&addr, "/api/scenarios"); // the server is serving
        assert!(!status.is_empty());

        let signalled = Instant::now();
        signal(child.id(), "TERM");
        let out = finish(child);
        let took = signalled.elapsed();
        assert_eq!(code(&out.status), 0, "{args:?}: {}", text(&out.stderr));
        assert!(
            took < Duration::from_secs(15),
            "{args:?}: SIGTERM took {took:?} with a client holding an unfinished request"
        );
        assert!(
            closed_by_server(&mut slow),
            "{args:?}: the slow client's connection is closed"
        );
    }
}

#[test]
fn a_second_signal_during_the_shutdown_stops_at_once() {
    let env = Env::new();
    for args in WEB_COMMANDS {
        let (child, addr, stderr) = spawn_logging(&env, args);
        let _slow = slow_client(&addr);
        let (status, _) = get(&addr, "/api/scenarios");
        assert!(!status.is_empty());

        signal(child.id(), "TERM");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = stderr
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("{args:?}: no shutdown message"));
            if line.contains("shutting down the web server") {
                break;
            }
        }
        signal(child.id(), "INT");
        let out = finish(child);
        // 0 would mean the graceful shutdown ran its course; 128 + SIGINT means "at once".
        assert_eq!(code(&out.status), 130, "{args:?}");
    }
}

#[test]
fn a_client_that_never_finishes_its_request_head_is_disconnected() {
    let env = Env::new();
    let mut child = env.spawn(&["workbench", "--bind", "127.0.0.1:0"]);
    let addr = listening(&mut child);
    let mut slow = slow_client(&addr);
    let sent = Instant::now();
    assert!(
        closed_by_server(&mut slow),
        "the connection is still open after {PATIENCE:?}"
    );
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_secs(8),
        "closed after {waited:?}, before the header read timeout (10 s)"
    );
    let (status, _) = get(&addr, "/api/scenarios");
    assert!(status.contains("200"), "{status}");
    assert_eq!(stop(child), 0);
}

#[test]
fn requests_naming_another_host_are_refused_unless_remote_access_is_allowed() {
    let env = Env::new();
    for args in WEB_COMMANDS {
        let mut child = env.spawn(args);
        let addr = listening(&mut child);
        let port = addr.rsplit_once(':').expect("host:port").1;
        for host in ["evil.example", &format!("evil.example:{port}")] {
            let (status, body) = get_as(&addr, "/", host);
            assert!(status.contains("421"), "{args:?} {host}: {status}");
            assert!(body.contains("--allow-remote"), "{body}");
        }
        for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
            let (status, _) = get_as(&addr, "/", &host);
            assert!(status.contains("200"), "{args:?} {host}: {status}");
        }
        assert_eq!(stop(child), 0);

        let mut remote = args.to_vec();
        remote.push("--allow-remote");
        let mut child = env.spawn(&remote);
        let addr = listening(&mut child);
        let (status, _) = get_as(&addr, "/", "evil.example");
        assert!(status.contains("200"), "{remote:?}: {status}");
        assert_eq!(stop(child), 0);
    }
}

/// One sample of a `/metrics` scrape: its value if `name` has a series with all of `labels`.
fn sample(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(k).is_some_and(|x| x == *v))
        })
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{name}: not a single value: {other:?}"),
        })
}

fn scrape(addr: &str) -> prometheus_parse::Scrape {
    let (status, body) = get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("text format")
}

#[test]
fn serve_exposes_the_holders_as_prometheus_metrics() {
    let env = Env::new();
    let marker = env.path("started");
    let script = format!("echo started > {} && sleep 60", marker.display());
    let holder = env.spawn(&[
        "run",
        "--lock",
        "nightly",
        "--node-id",
        "worker-1",
        "--lease",
        "30s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    common::wait_for_file(&marker);
    let held = env.holders("nightly");
    let fence = held[0]["fence"].as_f64().expect("fence");

    let mut server = env.spawn(&[
        "serve",
        "--lock",
        "nightly",
        "--lock",
        "idle",
        "--bind",
        "127.0.0.1:0",
    ]);
    let addr = listening(&mut server);
    let m = scrape(&addr);
    let nightly = [("lock", "nightly")];
    let slot0 = [("lock", "nightly"), ("slot", "0")];
    assert_eq!(sample(&m, "leasehold_lock_state_ok", &nightly), Some(1.0));
    assert_eq!(
        sample(&m, "leasehold_lock_state_ok", &[("lock", "idle")]),
        Some(1.0)
    );
    assert_eq!(sample(&m, "leasehold_lock_slots", &nightly), Some(1.0));
    assert_eq!(sample(&m, "leasehold_lock_holders", &nightly), Some(1.0));
    assert_eq!(
        sample(&m, "leasehold_lock_holders", &[("lock", "idle")]),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &m,
            "leasehold_lock_holder_info",
            &[("lock", "nightly"), ("slot", "0"), ("owner", "worker-1")]
        ),
        Some(1.0)
    );
    assert_eq!(sample(&m, "leasehold_lock_fence", &slot0), Some(fence));
    let left = sample(&m, "leasehold_lock_time_left_seconds", &slot0).expect("time left");
    assert!(left > 0.0 && left <= 30.0, "{left}");
    let expires = sample(&m, "leasehold_lock_expires_at_seconds", &slot0).expect("expiry");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    assert!(
        (expires - now - left).abs() < 5.0,
        "expires {expires}, now {now}, left {left}"
    );
    assert_eq!(
        sample(&m, "leasehold_lock_fence", &[("lock", "idle")]),
        None,
        "no holder, no holder series"
    );

    signal(holder.id(), "TERM");
    let _ = finish(holder);
    let start = Instant::now();
    loop {
        let m = scrape(&addr);
        if sample(&m, "leasehold_lock_holders", &nightly) == Some(0.0) {
            assert_eq!(
                sample(&m, "leasehold_lock_holder_info", &nightly),
                None,
                "a holder that is gone is gone from the scrape"
            );
            break;
        }
        assert!(start.elapsed() < PATIENCE, "the release never showed");
        sleep(Duration::from_millis(100));
    }
    assert_eq!(stop(server), 0);
}
