//! The markdown report: a summary of ratios, one table per scenario with its command, and the
//! safety table.

use std::fmt::Write as _;

use crate::outcome::{Figure, Outcome, PEERS, Unit};
use crate::render::number;
use crate::report::Report;
use crate::safety::SafetyRow;
use crate::scenario::Scenario;

/// Renders the whole report.
pub(crate) fn render(report: &Report) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    summary(&mut out, report)?;
    for scenario in Scenario::ALL {
        if report
            .outcomes
            .iter()
            .any(|o| o.scenario == scenario.name())
        {
            table(&mut out, report, scenario)?;
        }
    }
    if !report.safety.is_empty() {
        safety(&mut out, report)?;
    }
    if !report.fenced.is_empty() {
        fenced(&mut out, report)?;
    }
    if !report.failures.is_empty() {
        writeln!(out, "\n## Not measured\n")?;
        for f in &report.failures {
            writeln!(
                out,
                "* {} / {}: {}",
                f.backend,
                f.part,
                f.error.replace('\n', " ")
            )?;
        }
    }
    Ok(out)
}

fn ratio(r: Option<f64>) -> String {
    match r {
        None => "–".to_owned(),
        Some(r) if r < 0.1 => format!("{r:.4}×"),
        Some(r) => format!("{r:.2}×"),
    }
}

fn summary(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "## Summary: leasehold beside its floor\n")?;
    writeln!(
        out,
        "Throughput columns are leasehold ÷ floor (1.00× = as fast as the raw round trips; higher is \
         better). Hand-off is the p50 in ms, leasehold / floor. Failover is the takeover time's p50 \
         ÷ the lease.\n"
    )?;
    let throughput = [
        Scenario::Uncontended,
        Scenario::Contended,
        Scenario::ManyLocks,
        Scenario::Group,
        Scenario::AutoExtend,
    ];
    write!(out, "| backend |")?;
    for s in throughput {
        write!(out, " {} |", s.name())?;
    }
    writeln!(
        out,
        " hand-off p50 ms (leasehold / floor) | failover ÷ lease |"
    )?;
    writeln!(out, "|---|{}---:|---:|", "---:|".repeat(throughput.len()))?;
    for backend in &report.backends {
        write!(out, "| {backend} |")?;
        for s in throughput {
            let cell = report.outcome(backend, s).map(Outcome::ratio_to_floor);
            write!(out, " {} |", ratio(cell.flatten()))?;
        }
        let handoff = report.outcome(backend, Scenario::Handoff).map_or_else(
            || "–".to_owned(),
            |o| {
                let v = |i: usize| o.figures.get(i).map_or("–".to_owned(), |f| number(f.value));
                format!("{} / {}", v(0), v(1))
            },
        );
        let failover = report
            .outcome(backend, Scenario::Failover)
            .and_then(Outcome::ratio_to_floor);
        writeln!(out, " {handoff} | {} |", ratio(failover))?;
    }
    Ok(())
}

/// A count: thousands separated, never with decimals.
fn count(n: u64) -> String {
    if n >= 100 {
        number(n as f64)
    } else {
        n.to_string()
    }
}

fn cell(f: &Figure, unit: Unit) -> String {
    let mut text = match unit {
        Unit::PerSecond => {
            let mut t = format!("{}/s", number(f.value));
            if let (Some(p50), Some(p99)) = (f.p50_ms, f.p99_ms) {
                write!(t, " ({} / {} ms)", number(p50), number(p99)).ok();
            }
            t
        }
        Unit::MicrosPerCycle => {
            let mut t = format!("{} µs", number(f.value));
            if let Some(s) = f.server {
                write!(t, " ({} µs; {}/s)", number(s.process_us), number(s.rate)).ok();
            }
            t
        }
        Unit::RequestsPerSecond => format!("{}/s", number(f.value)),
        Unit::Millis if f.count == 0 => format!("{} ms", number(f.value)),
        Unit::Millis => format!(
            "{} / {} ms (n = {})",
            f.p50_ms.map_or("–".to_owned(), number),
            f.p99_ms.map_or("–".to_owned(), number),
            f.count
        ),
    };
    if f.failures > 0 {
        write!(text, "; {} failed", f.failures).ok();
    }
    if let Some((min, max)) = f.per_task {
        write!(text, "; per task {}–{}", count(min), count(max)).ok();
    }
    text
}

fn table(out: &mut String, report: &Report, scenario: Scenario) -> std::fmt::Result {
    writeln!(out, "\n## {}\n", scenario.title())?;
    writeln!(out, "{}\n", scenario.explanation())?;
    writeln!(out, "```sh\n{}\n```\n", report.command(scenario.name()))?;
    let outcomes: Vec<&Outcome> = report
        .outcomes
        .iter()
        .filter(|o| o.scenario == scenario.name())
        .collect();
    if scenario == Scenario::Partition {
        return partitions(out, &outcomes);
    }
    if scenario.unit() == Unit::RequestsPerSecond {
        return sessions(out, scenario, &outcomes);
    }
    // Every side any backend has, in order of first appearance (leasehold, floor, …).
    let mut sides: Vec<&str> = Vec::new();
    for o in &outcomes {
        for f in &o.figures {
            if !sides.contains(&f.side.as_str()) {
                sides.push(&f.side);
            }
        }
    }
    let with_peer = sides.iter().any(|s| PEERS.contains(s));
    let what = match scenario.unit() {
        Unit::PerSecond => "ops/s (p50 / p99 ms per op)",
        Unit::Millis => "p50 / p99",
        Unit::MicrosPerCycle => {
            "µs of Redis command time per acquire + release (server process CPU per cycle; cycles/s)"
        }
        Unit::RequestsPerSecond => "requests/s",
    };
    let floor = match scenario {
        Scenario::Failover => "lease",
        Scenario::AutoExtend => "floor: auto_extend off",
        Scenario::Fairness => "serial limit",
        _ => "floor",
    };
    write!(out, "| backend |")?;
    for (i, side) in sides.iter().enumerate() {
        match i {
            0 => write!(out, " {side} {what} |")?,
            1 => write!(out, " {floor} |")?,
            _ => write!(out, " {side} |")?,
        }
    }
    write!(out, " leasehold ÷ {floor} |")?;
    if with_peer {
        write!(out, " leasehold ÷ peer |")?;
    }
    writeln!(out)?;
    let columns = sides.len() + 1 + usize::from(with_peer);
    writeln!(out, "|---|{}", "---:|".repeat(columns))?;
    for o in outcomes {
        write!(out, "| {} |", o.backend)?;
        for side in &sides {
            let text = o.figure(side).map_or("–".to_owned(), |f| cell(f, o.unit));
            write!(out, " {text} |")?;
        }
        write!(out, " {} |", ratio(o.ratio_to_floor()))?;
        if with_peer {
            write!(out, " {} |", ratio(o.ratio_to_peer()))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// A rate of the session tables, or `–`.
fn per_s(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "–".to_owned(), |v| format!("{}/s", number(v)))
}

/// The session scenarios (hold-many, idle-followers): one row per backend and size.
fn sessions(out: &mut String, scenario: Scenario, outcomes: &[&Outcome]) -> std::fmt::Result {
    let hold = scenario == Scenario::HoldMany;
    if hold {
        writeln!(
            out,
            "| backend | N | requests/s (server) | ÷ floor (1/s) | client-side requests/s | writes/s (server) | lost | taking the N leases | server statistic (requests; writes) |"
        )?;
        writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---|")?;
    } else {
        writeln!(
            out,
            "| backend | F | requests/s (server) | per follower | client-side requests/s (followers) | writes/s (server) | holder lost | server statistic (requests; writes) |"
        )?;
        writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|")?;
    }
    let mut notes = Vec::new();
    for o in outcomes {
        for (i, f) in o.figures.iter().enumerate() {
            let Some(r) = &f.requests else { continue };
            let backend = if i == 0 { o.backend } else { "" };
            let statistic = match (i, r.statistic) {
                (0, Some(s)) => format!("`{s}`; `{}`", r.write_statistic.unwrap_or("–")),
                (0, None) => "none: client-side count".to_owned(),
                _ => String::new(),
            };
            let lost = if f.value.is_nan() {
                // The size could not run: nothing was held or counted.
                notes.push(format!(
                    "* {} {}: not measured: {}",
                    o.backend,
                    f.side,
                    f.first_error
                        .as_deref()
                        .unwrap_or_default()
                        .replace('\n', " ")
                ));
                "–".to_owned()
            } else if f.first_error.is_some() {
                notes.push(format!(
                    "* {} {}: {}",
                    o.backend,
                    f.side,
                    f.first_error
                        .as_deref()
                        .unwrap_or_default()
                        .replace('\n', " ")
                ));
                format!("{} (see below)", r.lost)
            } else {
                r.lost.to_string()
            };
            if hold {
                writeln!(
                    out,
                    "| {backend} | {} | {} | {} | {} | {} | {lost} | {} | {statistic} |",
                    count(r.size),
                    per_s(r.server_per_s),
                    ratio(Some(f.value).filter(|v| v.is_finite())),
                    per_s(Some(r.client_per_s)),
                    per_s(r.writes_per_s),
                    r.acquire_s
                        .map_or_else(|| "–".to_owned(), |s| format!("{} ms", number(s * 1e3))),
                )?;
            } else {
                let followers = r.followers_client_per_s.unwrap_or(f64::NAN);
                // The followers' share: the server's count less the holder's (client-side).
                let holder = r.client_per_s - followers;
                let per_follower = r.server_per_s.map_or(followers, |server| server - holder)
                    / r.size.max(1) as f64;
                writeln!(
                    out,
                    "| {backend} | {} | {} | {} | {} ({}) | {} | {lost} | {statistic} |",
                    count(r.size),
                    per_s(r.server_per_s),
                    per_s(Some(per_follower)),
                    per_s(Some(r.client_per_s)),
                    per_s(Some(followers)),
                    per_s(r.writes_per_s),
                )?;
            }
        }
    }
    if !notes.is_empty() {
        writeln!(out, "\nProblems:\n")?;
        for n in notes {
            writeln!(out, "{n}")?;
        }
    }
    Ok(())
}

/// The partition scenario: one row per backend and number of members.
fn partitions(out: &mut String, outcomes: &[&Outcome]) -> std::fmt::Result {
    writeln!(
        out,
        "| backend | P | shards | join → balanced | moved (minimum) | requests/s (server) | client-side requests/s | kill → balanced (its shards) | two owners | server statistic |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")?;
    let mut notes = Vec::new();
    for o in outcomes {
        for (i, f) in o.figures.iter().enumerate() {
            let (Some(r), Some(p)) = (&f.requests, &f.partition) else {
                // A size that did not settle: the note says why the table stops there.
                if let Some(e) = &f.first_error {
                    notes.push(format!("* {}: {}", o.backend, e.replace('\n', " ")));
                }
                continue;
            };
            let backend = if i == 0 { o.backend } else { "" };
            let statistic = match (i, r.statistic) {
                (0, Some(s)) => format!("`{s}`"),
                (0, None) => "none: client-side count".to_owned(),
                _ => String::new(),
            };
            if let Some(e) = &f.first_error {
                notes.push(format!(
                    "* {} {}: {}",
                    o.backend,
                    f.side,
                    e.replace('\n', " ")
                ));
            }
            writeln!(
                out,
                "| {backend} | {} | {} | {} leases | {} ({}) | {} | {} | {} leases ({}) | **{}** | {statistic} |",
                p.members,
                count(u64::from(p.shards)),
                number(p.join_leases),
                count(p.join_moved),
                count(p.join_minimum),
                per_s(r.server_per_s),
                per_s(Some(r.client_per_s)),
                number(p.kill_leases),
                count(p.killed_owned),
                p.two_owners,
            )?;
        }
    }
    if !notes.is_empty() {
        writeln!(out, "\nProblems:\n")?;
        for n in notes {
            writeln!(out, "{n}")?;
        }
    }
    Ok(())
}

fn safety(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(
        out,
        "\n## Safety: the fenced-resource checker, without and with faults\n"
    )?;
    let first = &report.safety[0];
    writeln!(
        out,
        "{} contenders × {} rounds on one lock through the testkit's `FencedResource`, each action \
         sleeping a random 0–2 ms, each contender waiting up to 5 ms. With faults, every contender's \
         store is wrapped in the testkit's `FaultyStore`, and every 20–80 ms one contender gets a \
         fault: refused requests (1–3 calls of acquire, extend or release), an acquire or release \
         applied but its answer lost (the lease is stranded until it expires), or an acquire answer \
         slower than the lease; on network backends the contenders connect through the testkit's \
         TCP `FaultProxy`, which also closes all their connections for 30 ms at a time. \
         **Violations** are two valid holders inside at once or a lower fence accepted after a \
         higher one; **lost** counts runs whose lease was gone by the end of the action; \
         **held at end** counts leases stranded by lost answers, left to expire; **recovered** is \
         the time until a fresh client held the lock after the run; **leaked** counts holders left \
         once that client had released it. A run passes with 0 violations, 0 leaked, and recovery.\n",
        first.contenders, first.rounds
    )?;
    writeln!(out, "```sh\n{}\n```\n", report.command("safety"))?;
    writeln!(
        out,
        "| backend | faults | lease | runs | skips | errors | lost | faults injected | proxy cuts | stale writes rejected | max inside | violations | held at end | recovered | leaked | time | result |"
    )?;
    writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )?;
    for r in &report.safety {
        row(out, r)?;
    }
    for r in report
        .safety
        .iter()
        .filter(|r| !r.first_violations.is_empty())
    {
        writeln!(out, "\nViolations on {} ({}):\n", r.backend, r.faults)?;
        for v in &r.first_violations {
            writeln!(out, "* {v}")?;
        }
    }
    Ok(())
}

fn fenced(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "\n## Safety: fenced sinks with paused stale holders\n")?;
    writeln!(
        out,
        "The testkit's `stale_holder` scenario, {} rounds per sink and backend. Each round holder A \
         takes the lock and freezes; its lease ends while it is frozen — by a forced release, or \
         in one round of a hundred by real expiry of a short lease — and holder B takes the lock \
         with a higher fence. Then either B writes and A wakes up and writes (**A must be \
         refused**), or both write at once (A may land first and be overwritten, never after B). \
         The sink is read back: it must hold B's value. A stale write accepted after the \
         successor's is a violation. See docs/fencing.md for each sink.\n",
        report.fenced[0].rounds
    )?;
    writeln!(out, "```sh\n{}\n```\n", report.command("safety"))?;
    writeln!(
        out,
        "| backend | sink | rounds | by expiry | stale writes refused | stale first, overwritten | stale accepted | violations | errors | time | result |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")?;
    for r in &report.fenced {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | **{}** | **{}** | {} | {:.1} s | {} |",
            r.backend,
            r.sink,
            r.rounds,
            r.expired,
            r.stale_rejected,
            r.stale_before_successor,
            r.stale_accepted,
            r.violations,
            r.errors,
            r.elapsed_s,
            if r.passed() { "pass" } else { "**FAIL**" }
        )?;
    }
    for r in report.fenced.iter().filter(|r| !r.passed()) {
        writeln!(out, "\nProblems of {} on {}:\n", r.sink, r.backend)?;
        for v in r.first_violations.iter().chain(&r.first_errors) {
            writeln!(out, "* {v}")?;
        }
    }
    Ok(())
}

fn row(out: &mut String, r: &SafetyRow) -> std::fmt::Result {
    writeln!(
        out,
        "| {} | {} | {} ms | {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {} | {} | **{}** | {:.1} s | {} |",
        r.backend,
        r.faults,
        r.lease_ms,
        r.runs,
        r.skips,
        r.errors,
        r.lost,
        r.injected,
        r.proxy_cuts,
        r.rejected_writes,
        r.max_inside,
        r.violations,
        r.held_at_end,
        r.recovered_ms
            .map_or_else(|| "never".to_owned(), |ms| format!("{} ms", number(ms))),
        r.leaked,
        r.elapsed_s,
        if r.passed() { "pass" } else { "**FAIL**" }
    )
}
