//! Runs seeded simulations of the real electors under injected faults and checks the protocol's
//! properties (see `crates/leasehold-workbench/docs/seeds.md`).
//!
//! ```text
//! cargo run --release -p leasehold-workbench --example seeds -- --seeds 10000
//! cargo run --release -p leasehold-workbench --example seeds -- --from 20000 --seeds 5000
//! cargo run --release -p leasehold-workbench --example seeds -- --seed 42 --json
//! cargo run --release -p leasehold-workbench --example seeds -- --before-issue-33 --seeds 50
//! ```
//!
//! Exit status: 0 when every seed kept every property, 1 when a violation was found, 2 for bad
//! arguments, 3 when a simulation itself failed.

#![allow(clippy::print_stdout, clippy::print_stderr)] // a command-line example

use std::process::ExitCode;
use std::time::Instant;

use leasehold_workbench::sim::seeds::{self, Property, SearchSummary, SeedConfig, SeedReport};

/// `println!` that ignores a closed stdout (`seeds --seed 1 --json | head`), where `println!`
/// would panic.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

const USAGE: &str = "\
usage: seeds [--seeds N] [--from S] [--before-issue-33] [--max-drift F]
       seeds --seed N [--json] [--before-issue-33] [--max-drift F]

  --seeds N            how many seeds to run (default 1000), from --from on
  --from S             the first seed (default 0)
  --seed N             run seed N only and print its violations
  --json               with --seed: print the seed's trace (its timelines) as JSON
  --before-issue-33    run with the defaults before issue 33 (auto_extend and
                       cancel_on_lost off) instead of the library's defaults
  --max-drift F        the largest clock drift of an elector, a fraction of the
                       lease from 0 to 0.9 (default 0.05; the core's margin is 0.1)
  -h, --help           this text";

#[derive(Debug)]
struct Args {
    from: u64,
    count: u64,
    one: Option<u64>,
    json: bool,
    config: SeedConfig,
}

fn number(flag: &str, value: Option<String>) -> Result<u64, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a number"))?;
    value.parse().map_err(|_| {
        format!(
            "{flag} needs a whole number from 0 to {}, got `{value}`",
            u64::MAX
        )
    })
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut args = Args {
        from: 0,
        count: 1000,
        one: None,
        json: false,
        config: SeedConfig::default(),
    };
    let mut counted = false;
    let mut from_given = false;
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--seeds" => {
                args.count = number("--seeds", argv.next())?;
                counted = true;
            }
            "--from" => {
                args.from = number("--from", argv.next())?;
                from_given = true;
            }
            "--seed" => args.one = Some(number("--seed", argv.next())?),
            "--json" => args.json = true,
            "--before-issue-33" => {
                let drift = args.config.faults.max_drift;
                args.config = SeedConfig::before_issue_33();
                args.config.faults.max_drift = drift;
            }
            "--max-drift" => {
                let value = argv.next().unwrap_or_default();
                args.config.faults.max_drift = value
                    .parse::<f64>()
                    .ok()
                    .filter(|d| (0.0..=0.9).contains(d))
                    .ok_or_else(|| {
                        format!("--max-drift needs a fraction from 0 to 0.9, got `{value}`")
                    })?;
            }
            "-h" | "--help" => return Ok(None),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; allowed: --seeds N, --from S, --seed N, --json, \
                     --before-issue-33, --max-drift F, --help"
                ));
            }
        }
    }
    if args.one.is_some() && (counted || from_given) {
        return Err("--seed runs one seed: it cannot be combined with --seeds or --from".into());
    }
    if args.json && args.one.is_none() {
        return Err("--json prints one seed's trace: use it with --seed N".into());
    }
    if args.from.checked_add(args.count).is_none() {
        return Err(format!(
            "--from {} with --seeds {} goes past the last seed ({})",
            args.from,
            args.count,
            u64::MAX
        ));
    }
    Ok(Some(args))
}

fn print_failure(report: &SeedReport, config: &SeedConfig) {
    let n = report.violations.len();
    let s = if n == 1 { "" } else { "s" };
    println!("seed {}: {n} violation{s}:", report.seed);
    for v in &report.violations {
        println!("  {v}");
    }
    println!("replay it with:\n  {}", config.replay_command(report.seed));
}

fn print_summary(s: &SearchSummary, from: u64, config: &SeedConfig, secs: f64) {
    println!(
        "config: {}; seeds {}..{}: {} run in {:.1} s ({:.0} seeds/s)",
        config.name,
        from,
        from + s.seeds_run,
        s.seeds_run,
        secs,
        s.seeds_run as f64 / secs.max(1e-9)
    );
    println!("violations by property (seeds / violations):");
    for p in Property::ALL {
        let t = s.by_property.get(&p).copied().unwrap_or_default();
        println!("  {:<22} {:>6} / {}", p.name(), t.seeds, t.violations);
    }
    let f = s.faults;
    println!(
        "requests {}: drifted {}, delayed requests {}, delayed answers {}, lost requests {}, \
         lost answers {}, duplicated {}, paused {}",
        f.requests,
        f.drifted,
        f.delayed_requests,
        f.delayed_answers,
        f.lost_requests,
        f.lost_answers,
        f.duplicated,
        f.paused
    );
    if !s.failing_seeds.is_empty() {
        let shown: Vec<String> = s
            .failing_seeds
            .iter()
            .take(20)
            .map(u64::to_string)
            .collect();
        let more = s.failing_seeds.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        println!("failing seeds: {}{more}", shown.join(", "));
    }
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("seeds: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = args.one {
        let report = match seeds::run_seed(seed, &args.config) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("seeds: {e}");
                return ExitCode::from(3);
            }
        };
        if args.json {
            println!("{}", report.to_json());
        } else if report.violations.is_empty() {
            println!("seed {seed} ({}): no violation", args.config.name);
        } else {
            print_failure(&report, &args.config);
        }
        return if report.violations.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    let started = Instant::now();
    let mut summary = SearchSummary::default();
    let step = (args.count / 10).max(1);
    for seed in args.from..args.from + args.count {
        match seeds::run_seed(seed, &args.config) {
            Ok(r) => summary.add(r),
            Err(e) => {
                eprintln!("seeds: seed {seed}: {e}");
                return ExitCode::from(3);
            }
        }
        if (seed - args.from + 1) % step == 0 {
            eprintln!(
                "… {} seeds, {} failing, {:.1} s",
                seed - args.from + 1,
                summary.failing_seeds.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    print_summary(
        &summary,
        args.from,
        &args.config,
        started.elapsed().as_secs_f64(),
    );
    match &summary.first_failure {
        None => ExitCode::SUCCESS,
        Some(first) => {
            println!("\nfirst failing seed:");
            print_failure(first, &args.config);
            ExitCode::from(1)
        }
    }
}
