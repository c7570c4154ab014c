//! `leasehold-bench`: leasehold beside the floor — the fewest raw round trips each backend needs
//! for an acquire and a release, issued with the same client — and beside a peer: `rslock` on
//! Redis, etcd's own lock API (the v3lock service) on etcd; in one run, interleaved so that drift on a shared machine hits every side alike; then the
//! testkit's safety checker on each backend, without and with injected faults.
//!
//! ```text
//! cargo build --release -p leasehold-bench
//! target/release/leasehold-bench --backend all --scenario all --out /tmp/bench
//! target/release/leasehold-bench --backend redis --scenario uncontended,handoff --quick
//! ```
//!
//! Writes a markdown report (stdout by default), JSON and an SVG chart; exits 1 when a safety
//! run fails or a backend could not be measured. `scripts/bench-report` runs it to regenerate
//! `docs/benchmarks.md`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod backend;
mod floor;
mod measure;
mod outcome;
mod peer;
mod render;
mod report;
mod safety;
mod scenario;
mod target;

use std::process::ExitCode;
use std::time::Duration;

use crate::args::Args;
use crate::backend::Backend;
use crate::report::{Failure, Report};
use crate::target::Target;

/// The error type of the harness: any error, with its message.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    if let Some(hold) = &args.hold {
        let (Some(backend), Some(url)) = (args.backends.first(), &args.url) else {
            eprintln!("--hold needs one --backend and its --url");
            return ExitCode::from(2);
        };
        return match scenario::hold_until_killed(*backend, url, &hold.lock, hold.lease).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("leasehold-bench --hold: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(c) = &args.contend {
        let (Some(backend), Some(url)) = (args.backends.first(), &args.url) else {
            eprintln!("--contend needs one --backend and its --url");
            return ExitCode::from(2);
        };
        let d = Duration::from_secs_f64(args.config.seconds);
        return match scenario::contend_in_child(*backend, url, &c.lock, c.tasks, d).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("leasehold-bench --contend: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let report = run(&args).await;
    match write(&args, &report) {
        Ok(()) if report.passed() => ExitCode::SUCCESS,
        Ok(()) => {
            eprintln!("leasehold-bench: a safety run failed or a backend could not be measured");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("leasehold-bench: writing the report: {e}");
            ExitCode::FAILURE
        }
    }
}

/// How long one scenario may take before it counts as hung.
fn budget(args: &Args) -> Duration {
    Duration::from_secs_f64(args.config.seconds * 4.0 + 120.0)
}

async fn run(args: &Args) -> Report {
    let mut report = Report {
        size_flags: args.size_flags(),
        backends: args.backends.iter().map(|b| b.name()).collect(),
        outcomes: Vec::new(),
        safety: Vec::new(),
        fenced: Vec::new(),
        failures: Vec::new(),
    };
    let started = std::time::Instant::now();
    let at = || format!("[{:>5.1} s]", started.elapsed().as_secs_f64());
    for &backend in &args.backends {
        let fail = |part: &str, error: String| Failure {
            backend: backend.name(),
            part: part.to_owned(),
            error,
        };
        let target = match open(args, backend).await {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{}: cannot open: {e}", backend.name());
                report.failures.push(fail("open", e.to_string()));
                continue;
            }
        };
        for &scenario in args.scenarios.iter().filter(|s| s.runs_on(backend)) {
            eprintln!("{} {}: {} …", at(), backend.name(), scenario.name());
            let limit = scenario.budget(&args.config);
            match tokio::time::timeout(limit, scenario.run(&target, &args.config)).await {
                Ok(Ok(outcome)) => report.outcomes.push(outcome),
                Ok(Err(e)) => report.failures.push(fail(scenario.name(), e.to_string())),
                Err(_) => report
                    .failures
                    .push(fail(scenario.name(), "timed out".to_owned())),
            }
        }
        if args.safety {
            for faults in [false, true] {
                eprintln!("{} {}: safety (faults: {faults}) …", at(), backend.name());
                let run = safety::run(&target, args.rounds, faults);
                match tokio::time::timeout(budget(args) * 3, run).await {
                    Ok(Ok(row)) => report.safety.push(row),
                    Ok(Err(e)) => report.failures.push(fail("safety", e.to_string())),
                    Err(_) => report.failures.push(fail("safety", "timed out".to_owned())),
                }
            }
            eprintln!("{} {}: fenced sinks …", at(), backend.name());
            let run = safety::fenced::run(&target, args.fence_rounds);
            match tokio::time::timeout(budget(args) * 20, run).await {
                Ok(Ok(rows)) => report.fenced.extend(rows),
                Ok(Err(e)) => report.failures.push(fail("fenced sinks", e.to_string())),
                Err(_) => report
                    .failures
                    .push(fail("fenced sinks", "timed out".to_owned())),
            }
        }
        drop(target);
        if backend == Backend::Sqlite && args.url.is_none() {
            remove_sqlite_files();
        }
    }
    eprintln!("{} done", at());
    report
}

async fn open(args: &Args, backend: Backend) -> Result<Target, BoxError> {
    let url = args.url_of(backend)?;
    Target::open(backend, &url).await
}

/// Removes the default temp SQLite database and its journal files.
fn remove_sqlite_files() {
    if let Ok(url) = Backend::Sqlite.default_url() {
        let path = url.trim_start_matches("sqlite://");
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
    }
}

fn write(args: &Args, report: &Report) -> Result<(), BoxError> {
    let markdown = render::markdown::render(report)?;
    if let Some(path) = &args.json {
        create_parent(path)?;
        std::fs::write(path, serde_json::to_string_pretty(report)? + "\n")?;
    }
    if let Some(path) = &args.svg {
        create_parent(path)?;
        std::fs::write(path, render::svg::render(report)?)?;
    }
    if let Some(path) = &args.readme {
        let document = std::fs::read_to_string(path)?;
        let paragraph = render::summary::render(&serde_json::to_value(report)?);
        let rewritten = render::summary::replace_block(&document, &paragraph).ok_or_else(|| {
            format!(
                "{} has no block between `{}` and `{}`",
                path.display(),
                render::summary::START,
                render::summary::END
            )
        })?;
        std::fs::write(path, rewritten)?;
    }
    match &args.markdown {
        Some(path) => {
            create_parent(path)?;
            std::fs::write(path, markdown)?;
        }
        None if args.json.is_none() && args.svg.is_none() && args.readme.is_none() => {
            print!("{markdown}")
        }
        None => {}
    }
    Ok(())
}

fn create_parent(path: &std::path::Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
        _ => Ok(()),
    }
}
