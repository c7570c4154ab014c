//! Two processes of `examples/axum_app.rs` sharing an SQLite file, as a user runs them: one
//! leads `api-writer`, the other follows. Their `/metrics` are scraped over HTTP for a while,
//! each scrape parsed and checked (`support/prom.rs`: HELP and TYPE on every family, as
//! leasehold's registry says; well-formed, non-empty histograms), and the alerting rules of the
//! manual (`docs/leasehold.md`, `docs/leasehold-axum.md`) evaluated over them: none fires, the
//! follower exports no renewal margin, and the fleet's view has exactly one leader.
//!
//! This binary runs the example itself in the child processes (its own `main`, no test harness,
//! like `sigterm.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test code

#[path = "../examples/axum_app.rs"]
mod axum_app;
#[path = "support/prom.rs"]
mod prom;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "LEASEHOLD_AXUM_EXAMPLE_ALERTS_CHILD";
const PATIENCE: Duration = Duration::from_secs(30);
const TEST: &str = "two_example_processes_a_leader_and_a_follower_fire_no_alert";
const LOCK: &str = "api-writer";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return match axum_app::main() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                println!("axum_app failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    if flag("--list") {
        if !flag("--ignored") {
            println!("{TEST}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let selected = filters.is_empty()
        || filters.iter().any(|f| {
            if flag("--exact") {
                TEST == *f
            } else {
                TEST.contains(f)
            }
        });
    let mut ran = 0;
    if selected {
        print!("test {TEST} ... ");
        two_example_processes_a_leader_and_a_follower_fire_no_alert();
        println!("ok");
        ran += 1;
    }
    println!("\ntest result: ok. {ran} passed; 0 failed; 0 ignored");
    ExitCode::SUCCESS
}

fn two_example_processes_a_leader_and_a_follower_fire_no_alert() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("leases.db").display());
    let leader = App::start("node-a", &url);
    let master =
        |exp: &prom::Exposition| exp.value("leader_election_master_status", &[("name", LOCK)]);
    leader.wait_for("leads api-writer", |exp| master(exp) == Some(1.0));
    let follower = App::start("node-b", &url);
    follower.wait_for("follows api-writer", |exp| master(exp) == Some(0.0));

    // Scrapes of both every second, until the leader has renewed api-writer twice (every third
    // of the example's 30 s lease: the first renewal creates the histogram's series, so `rate()`
    // sees the second) and for at least 12 s: more than a period of the example's 10 s job.
    let t0 = Instant::now();
    let mut db = prom::Tsdb::new();
    let margin = |exp: &prom::Exposition| {
        exp.value("leasehold_renewal_margin_seconds_count", &[("lock", LOCK)])
    };
    let (at, last_leader, last_follower) = loop {
        let at = t0.elapsed().as_secs_f64();
        let a = leader.scrape();
        let b = follower.scrape();
        db.ingest(at, &a, &[("instance", "node-a"), ("job", "app")]);
        db.ingest(at, &b, &[("instance", "node-b"), ("job", "app")]);
        if margin(&a).is_some_and(|n| n >= 2.0) && at >= 12.0 {
            break (at, a, b);
        }
        assert!(
            t0.elapsed() < 2 * PATIENCE,
            "the leader did not renew twice: {:?}",
            a.families.keys()
        );
        std::thread::sleep(Duration::from_secs(1));
    };

    let mut rules = prom::alerts(&manual("leasehold.md"));
    rules.extend(prom::alerts(&manual("leasehold-axum.md")));
    assert!(rules.len() >= 10, "{rules:?}");
    for (name, expr) in &rules {
        let result = db.eval(expr, at);
        assert!(result.is_empty(), "{name} fires: {expr} = {result:?}");
    }

    // The follower has no renewal margin at all, the leader a histogram of healthy ones (about
    // 17 s of the 30 s lease; 20 s for a job's lease renewed on the leader's beat), and the fleet
    // exactly one leader.
    assert!(
        !last_follower
            .families
            .contains_key("leasehold_renewal_margin_seconds"),
        "{:?}",
        last_follower.families.keys()
    );
    assert!(last_leader.has_series("leasehold_renewal_margin_seconds", &[("lock", LOCK)]));
    let quantile = "histogram_quantile(0.05, sum by (lock, le) (rate(leasehold_renewal_margin_seconds_bucket[15m])))";
    let q = db.eval(quantile, at);
    // A job's lease held while the leader's beat comes round is renewed on that beat too (one
    // renewal for every lease of the elector), so a job's lock may have margins as well: every
    // lock's are healthy.
    assert!(
        q.iter()
            .any(|(labels, _)| labels.get("lock").map(String::as_str) == Some(LOCK)),
        "{q:?}"
    );
    assert!(q.iter().all(|(_, margin)| *margin > 10.0), "{q:?}");
    let leaders = db.eval(
        &format!("sum by (name) (leader_election_master_status{{name=\"{LOCK}\"}})"),
        at,
    );
    assert_eq!(leaders.len(), 1);
    assert_eq!(leaders[0].1, 1.0);
    // The jobs ran on one node or the other, and the fleet counted their attempts.
    let attempts = db.eval(
        "sum by (job) (leasehold_job_attempts_total{job=\"projection-refresh\"})",
        at,
    );
    assert!(
        attempts.first().is_some_and(|(_, n)| *n >= 2.0),
        "{attempts:?}"
    );

    leader.stop();
    follower.stop();
}

fn manual(page: &str) -> String {
    let path = format!("{}/../../docs/{page}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One example process.
struct App {
    child: Child,
    addr: SocketAddr,
}

impl App {
    fn start(node: &str, store: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--listen", "127.0.0.1:0", "--node", node, "--store", store])
            .env(CHILD, "1")
            .env("RUST_LOG", "info")
            .env_remove("LEASEHOLD_MANAGEMENT_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = listening_addr(&line) {
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = rx
            .recv_timeout(PATIENCE)
            .expect("the example logs its address");
        Self { child, addr }
    }

    /// `GET /metrics` (loopback: no token needed), checked.
    fn scrape(&self) -> prom::Exposition {
        let mut conn = TcpStream::connect(self.addr).unwrap();
        conn.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            conn,
            "GET /metrics HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut raw = String::new();
        conn.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4"),
            "{head}"
        );
        prom::check(body)
    }

    fn wait_for(&self, what: &str, done: impl Fn(&prom::Exposition) -> bool) {
        let start = Instant::now();
        loop {
            let exp = self.scrape();
            if done(&exp) {
                return;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "never {what}: {:?}",
                exp.families.keys()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status:?}");
                return;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the example did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // A failed assertion must not leave the example running.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The address in the example's `listening addr=IP:PORT` log line (colours or not).
fn listening_addr(line: &str) -> Option<SocketAddr> {
    if !line.contains("listening") {
        return None;
    }
    let mut plain = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            plain.push(c);
        }
    }
    let rest = &plain[plain.find("addr=")? + 5..];
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let rest = &rest[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}
