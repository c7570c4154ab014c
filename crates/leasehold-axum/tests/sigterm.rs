//! SIGTERM — what systemd, Kubernetes and docker send — stops the `axum_app` example cleanly: it
//! exits promptly and the lease of its leader-only campaign is free right after, instead of
//! staying held for the whole lease (30 s) as when the process is killed.
//!
//! The example is compiled into this test binary and run in a child process of it (the test has
//! its own `main`), so the signal reaches the real example code.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test code

#[path = "../examples/axum_app.rs"]
mod axum_app;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use leasehold::{LeaseStore, LockName};
use leasehold_sql::SqlStore;

/// Set in the child's environment: run the example instead of the test.
const CHILD: &str = "LEASEHOLD_AXUM_APP_CHILD";
/// Generous: the machine is small and shared. The example's lease is 30 s.
const PATIENCE: Duration = Duration::from_secs(20);

/// The tests of this binary, by name, for `--list` and name filters.
const TESTS: [(&str, &str); 2] = [
    ("axum_app_stops_cleanly_on_sigterm", "TERM"),
    ("axum_app_stops_cleanly_on_sigint", "INT"),
];

/// A minimal libtest-compatible entry point: cargo test runs it with no arguments (every test),
/// cargo nextest lists the tests with `--list --format terse [--ignored]` and runs each with
/// `--exact NAME --nocapture`.
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
            for (name, _) in TESTS {
                println!("{name}: test");
            }
        }
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let selected = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                if flag("--exact") {
                    name == *f
                } else {
                    name.contains(f)
                }
            })
    };
    let mut ran = 0;
    for (name, sig) in TESTS.into_iter().filter(|(name, _)| selected(name)) {
        print!("test {name} ... ");
        stops_cleanly_on(sig);
        println!("ok");
        ran += 1;
    }
    println!("\ntest result: ok. {ran} passed; 0 failed; 0 ignored");
    ExitCode::SUCCESS
}

fn stops_cleanly_on(sig: &str) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("leases.db").display());
    let node = format!("sig{sig}-node");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--listen", "127.0.0.1:0", "--node", &node, "--store", &url])
        .env(CHILD, "1")
        .env("RUST_LOG", "info")
        .env_remove("LEASEHOLD_MANAGEMENT_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, listening) = std::sync::mpsc::channel();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(addr) = listening_addr(&line) {
                let _ = lines.send(addr);
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let addr = listening
        .recv_timeout(PATIENCE)
        .expect("the example logs its address");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = rt.block_on(SqlStore::connect(&url)).unwrap();
    let lock = LockName::new("api-writer").unwrap();
    let state = || rt.block_on(store.state(&lock, 1)).unwrap();

    let start = Instant::now();
    loop {
        if state().holder().is_some_and(|h| h.owner == node) {
            break;
        }
        if start.elapsed() > PATIENCE || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the example never took the lease: {}", log.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    // A client that opened a connection and never finishes its request must not hold the
    // shutdown (axum::serve would wait for it forever).
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET /hea").unwrap();

    let _ = Command::new("kill")
        .args([format!("-{sig}"), child.id().to_string()])
        .status();
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("SIG{sig} did not stop the example within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = signalled.elapsed();
    let after = state();
    let log = log.join().unwrap();
    assert!(
        status.success(),
        "SIG{sig} must stop the example cleanly, not kill it: {status:?}\n{log}"
    );
    assert!(
        after.is_free(),
        "the lease is free right after the exit: {after:?}\n{log}"
    );
    assert!(took < Duration::from_secs(10), "SIG{sig} took {took:?}");
    assert!(log.contains("stopped cleanly"), "{log}");
}

/// The address in the example's `listening addr=IP:PORT` log line (colours or not).
fn listening_addr(line: &str) -> Option<SocketAddr> {
    if !line.contains("listening") {
        return None;
    }
    // Drop ANSI colour sequences (ESC [ ... m).
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
