//! The core's cost per uncontended call on `MemoryStore`, in instructions (valgrind's callgrind),
//! which unlike time does not depend on the load of the machine.
//!
//! ```text
//! cargo build --profile bench -p leasehold --example per_call
//! target/release/examples/per_call instructions    # the markdown table of scripts/bench-report
//! target/release/examples/per_call run_if_leader 20000   # one mode, N calls (no valgrind)
//! ```
//!
//! Modes, each N calls in a loop on a current-thread runtime:
//!
//! * `floor`: one raw `try_acquire` + `release` pair on the store, with one request built once
//!   (as `floor/acquire_release` in `benches/memory.rs`): the least any elector could spend.
//! * `run_if_leader`: `Elector::run_if_leader("per-call", …)` with `wait = 0`, a 30 s lease and an
//!   action returning a number (as `run_if_leader/uncontended`): the name is a `&str`, validated
//!   on every call.
//! * `run_if_leader_lockname`: the same with a `LockName` validated once.
//!
//! `instructions` runs each mode under `valgrind --tool=callgrind` with N and 2N calls and
//! reports (I(2N) − I(N)) / N per call, so start-up and runtime set-up cancel out.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName, MemoryStore, store::Token};

type BoxError = Box<dyn std::error::Error>;

/// The modes `instructions` measures, with what the report calls them.
const MODES: [(&str, &str); 3] = [
    ("floor", "floor: raw `try_acquire` + `release` on the store"),
    ("run_if_leader", "`run_if_leader`, name as `&str`"),
    (
        "run_if_leader_lockname",
        "`run_if_leader`, pre-validated `LockName`",
    ),
];

/// The smaller of the two call counts `instructions` runs (the other is twice as many).
const CALLS: u32 = 10_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [mode] if mode == "instructions" => instructions(),
        [mode, n] => n
            .parse::<u32>()
            .map_err(|e| format!("N must be a whole number: {e}").into())
            .and_then(|n| run(mode, n)),
        _ => Err(
            "usage: per_call instructions | per_call floor|run_if_leader|run_if_leader_lockname N"
                .into(),
        ),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("per_call: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `n` calls of `mode`.
fn run(mode: &str, n: u32) -> Result<(), BoxError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let store = Arc::new(MemoryStore::new());
        let elector = Elector::with_options(
            store.clone(),
            ElectionOptions::builder()
                .wait(Duration::ZERO)
                .lease(Duration::from_secs(30))
                .node_id("per-call-node")
                .build()?,
        );
        let lock = LockName::new("per-call")?;
        match mode {
            "floor" => {
                let req = AcquireRequest::new(
                    lock,
                    1,
                    "per-call-node",
                    Token::random(),
                    Duration::from_secs(30),
                );
                for _ in 0..n {
                    let Acquisition::Elected(lease) = store.try_acquire(&req).await? else {
                        return Err("the floor found the lock busy".into());
                    };
                    store.release(&lease, Duration::ZERO).await?;
                }
            }
            "run_if_leader" => {
                for _ in 0..n {
                    let ran = elector.run_if_leader("per-call", |_| async { 42u64 });
                    ran.await?.ok_or("run_if_leader found the lock busy")?;
                }
            }
            "run_if_leader_lockname" => {
                for _ in 0..n {
                    let ran = elector.run_if_leader(&lock, |_| async { 42u64 });
                    ran.await?.ok_or("run_if_leader found the lock busy")?;
                }
            }
            other => return Err(format!("unknown mode {other:?}").into()),
        }
        Ok(())
    })
}

/// Prints the markdown table of instructions per call, each mode beside the floor.
fn instructions() -> Result<(), BoxError> {
    let exe = std::env::current_exe()?;
    let mut per_call = Vec::with_capacity(MODES.len());
    for (mode, _) in MODES {
        let once = collected(&exe, mode, CALLS)?;
        let twice = collected(&exe, mode, 2 * CALLS)?;
        let extra = twice
            .checked_sub(once)
            .ok_or_else(|| format!("{mode}: {twice} instructions for 2N calls < {once} for N"))?;
        per_call.push(extra as f64 / f64::from(CALLS));
    }
    let floor = per_call[0];
    println!("## Instruction counts: the core on `MemoryStore`\n");
    println!(
        "Instructions per uncontended call, counted by valgrind's callgrind (which, unlike time, does not depend on \
         the machine's load): each mode runs {CALLS} and {} calls, and the difference is divided by {CALLS}, so start-up \
         cancels out. `run_if_leader` has `wait = 0`, a 30 s lease and an action returning a number; the floor is \
         the raw pair on the same store with one request built once. Command: `cargo build --profile bench -p leasehold \
         --example per_call && target/release/examples/per_call instructions`.\n",
        2 * CALLS
    );
    println!("| per call | instructions | ÷ floor |\n|---|---|---|");
    for ((_, label), n) in MODES.iter().zip(&per_call) {
        println!("| {label} | {} | {:.2}× |", thousands(*n), n / floor);
    }
    println!();
    Ok(())
}

/// The instructions callgrind counts for `n` calls of `mode`.
fn collected(exe: &std::path::Path, mode: &str, n: u32) -> Result<u64, BoxError> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args([mode, &n.to_string()])
        .output()
        .map_err(|e| format!("cannot run valgrind (is it installed?): {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("valgrind {mode} {n} failed: {stderr}").into());
    }
    stderr
        .lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, v)| v.trim().to_owned())
        })
        .ok_or_else(|| format!("no 'Collected' line in valgrind's output: {stderr}"))?
        .parse::<u64>()
        .map_err(|e| format!("valgrind's count is not a number: {e}").into())
}

/// `n` rounded, with thousands separators.
fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
