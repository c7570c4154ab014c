//! `leasehold simulate`: a workbench scenario, computed by the real electors on virtual time,
//! printed as a table or as the timeline JSON.

use std::process::ExitCode;

use leasehold_workbench::sim::{self, Overrides, Status, Timeline, TimelineEvent};

use clap::Args;

use crate::exit::Failure;
use crate::say;

/// Shown by `leasehold simulate --help`.
pub(crate) const LONG_ABOUT: &str = "\
Print a workbench scenario's lease timeline: three or four nodes contend for the lock
`invoice-close`, each trying once at a fixed tick (in `period`, once per period through
run_once_per). The timeline is computed by the real elector (with max_leaders = --slots for `group`) on an
in-memory store under virtual time, 1 tick = 1 s, so it is the library's behaviour, not a model
of it. Same input, same output.

Scenarios: contention, expiry, extension, group, fencing, period, partition. Options not given take the
scenario's preset. Limits: --action 1-30, --lease 2-30, --wait 0-20, --min-lease 0 up to the
lease, --slots 1-3 (group only), --period 6-12 (period only), --outage-ticks 0-12 (the outage must
end by the run's last tick). --fail-action NODE makes every action of that node return an error
(it calls run: the run ends in `fail action_failed`); --outage-from/--outage-ticks make the store
answer every write with a transient error for those ticks (a run whose wait ends in one ends in
`fail store_error`, never in a skip). `partition` is of another kind: --nodes nodes (3-5) join
the partition set `tenants` of --shards shards (4-16) one after another, node-b leaves, node-c
crashes; it takes only --lease (3-6), --shards and --nodes, and prints who owns each shard per
tick after the table. Durations are in ticks. Without --json: a table (tick, candidate,
operation, token, fence, ttl, outcome) and a one-line summary; with --json: the timeline
document that the workbench page's /api/simulate serves. See docs/workbench.md.

Examples:
  leasehold simulate --scenario expiry
  leasehold simulate --scenario contention --min-lease 10
  leasehold simulate --scenario group --slots 3 --json
  leasehold simulate --scenario period --period 6
  leasehold simulate --scenario contention --fail-action node-c
  leasehold simulate --scenario contention --outage-from 1 --outage-ticks 3
  leasehold simulate --scenario partition --shards 12 --nodes 4";

/// `leasehold simulate`.
#[derive(Debug, Args)]
pub(crate) struct SimulateArgs {
    /// The scenario: contention, expiry, extension, group, fencing, period or partition
    #[arg(long, value_name = "NAME")]
    pub(crate) scenario: String,

    /// How long each elected node's action runs, in ticks (1-30)
    #[arg(long, value_name = "N")]
    pub(crate) action: Option<u32>,

    /// The lease, in ticks (2-30)
    #[arg(long, value_name = "N")]
    pub(crate) lease: Option<u32>,

    /// How long a node keeps trying before it skips, in ticks (0-20)
    #[arg(long, value_name = "N")]
    pub(crate) wait: Option<u32>,

    /// Keep the lock at least this long after acquisition, in ticks (0 up to the lease)
    #[arg(long, value_name = "N")]
    pub(crate) min_lease: Option<u32>,

    /// Renew the lease while the action runs
    #[arg(long, value_name = "true|false")]
    pub(crate) auto_extend: Option<bool>,

    /// Concurrent holders (1-3, group scenario only)
    #[arg(long, value_name = "N")]
    pub(crate) slots: Option<u32>,

    /// The period of the ledger each replica claims, in ticks (6-12, period scenario only)
    #[arg(long, value_name = "N")]
    pub(crate) period: Option<u32>,

    /// The node whose every action returns an error (node-a, node-b, ... or its letter)
    #[arg(long, value_name = "NODE")]
    pub(crate) fail_action: Option<String>,

    /// The first tick of a store outage
    #[arg(long, value_name = "TICK")]
    pub(crate) outage_from: Option<u32>,

    /// How many ticks the store cannot be reached, from --outage-from (0-12, 0 = never)
    #[arg(long, value_name = "N")]
    pub(crate) outage_ticks: Option<u32>,

    /// The partition set's shard count (4-16, partition scenario only)
    #[arg(long, value_name = "N")]
    pub(crate) shards: Option<u32>,

    /// How many nodes join the partition set (3-5, partition scenario only)
    #[arg(long, value_name = "N")]
    pub(crate) nodes: Option<u32>,

    /// Print the timeline as JSON
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `leasehold simulate`.
pub(crate) async fn simulate(args: SimulateArgs) -> Result<ExitCode, Failure> {
    let fail_action = match &args.fail_action {
        Some(node) => Some(
            sim::Scenario::parse(&args.scenario)
                .and_then(|s| s.candidate_letter(node))
                .map_err(|e| Failure::usage(e.to_string()))?,
        ),
        None => None,
    };
    let overrides = Overrides {
        action: args.action,
        lease: args.lease,
        wait: args.wait,
        min_lease: args.min_lease,
        auto_extend: args.auto_extend,
        slots: args.slots,
        period: args.period,
        fail_action,
        outage_from: args.outage_from,
        outage_ticks: args.outage_ticks,
        shards: args.shards,
        nodes: args.nodes,
    };
    let scenario = args.scenario.clone();
    let timeline = tokio::task::spawn_blocking(move || sim::simulate(&scenario, &overrides))
        .await
        .map_err(|e| Failure::usage(format!("the simulation did not finish: {e}")))?
        .map_err(|e| Failure::usage(e.to_string()))?;
    let written = if args.json {
        let text = say::json(&timeline, true)
            .map_err(|e| Failure::usage(format!("cannot encode the timeline: {e}")))?;
        say::out_json(&text)
    } else {
        let chart = timeline
            .shard_chart()
            .map_or_else(String::new, |c| format!("\n{c}"));
        say::out(&format!(
            "{}{chart}\n{}",
            table(&timeline.events),
            summary(&timeline)
        ))
    };
    Ok(if written {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The events as a table with aligned columns (`-` where a field does not apply).
fn table(events: &[TimelineEvent]) -> String {
    let rows: Vec<[String; 7]> = events.iter().map(TimelineEvent::cells).collect();
    let mut widths = TimelineEvent::COLUMNS.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    let mut out = vec![line(&TimelineEvent::COLUMNS.map(str::to_owned))];
    out.extend(rows.iter().map(|r| line(r)));
    out.join("\n")
}

/// One line: the scenario and parameters, how each node ended, what the resource saw.
fn summary(t: &Timeline) -> String {
    if let Some(check) = &t.partition {
        return partition_summary(t, check);
    }
    let p = &t.params;
    let last = t.frames.last();
    let nodes = last.map_or_else(String::new, |f| {
        f.nodes
            .iter()
            .map(|n| format!("{} {}", n.id, n.status))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let (writes, rejected) = last.map_or((0, 0), |f| (f.resource.writes, f.resource.rejected));
    let running = last.map_or(0, |f| {
        f.nodes
            .iter()
            .filter(|n| n.status == Status::Running.as_str())
            .count()
    });
    let still = if running > 0 {
        format!(" ({running} still running)")
    } else {
        String::new()
    };
    let period = p
        .period
        .map_or_else(String::new, |period| format!(" period {period}"));
    format!(
        "{}: action {} lease {} wait {} min_lease {} auto_extend {} slots {}{period}; at tick {}: {nodes}{still}; \
         resource: {writes} writes accepted, {rejected} rejected",
        t.scenario, p.action, p.lease, p.wait, p.min_lease, p.auto_extend, p.slots, t.max_tick
    )
}

/// The partition scenario's line: the parameters, each node's status and shards at the end,
/// and the checks.
fn partition_summary(t: &Timeline, check: &sim::PartitionCheck) -> String {
    let p = &t.params;
    let nodes = t.frames.last().map_or_else(String::new, |f| {
        f.nodes
            .iter()
            .map(|n| {
                let owned = n.shards.as_deref().unwrap_or_default();
                format!("{} {} ({} shards)", n.id, n.status, owned.len())
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
    let (writes, rejected) = t
        .frames
        .last()
        .map_or((0, 0), |f| (f.resource.writes, f.resource.rejected));
    format!(
        "{}: shards {} nodes {} lease {}; at tick {}: {nodes}; {} grants, {} moves, {} overlaps, \
         fences {} on every shard; resource: {writes} writes accepted, {rejected} rejected",
        t.scenario,
        check.shards,
        p.nodes.unwrap_or_default(),
        p.lease,
        t.max_tick,
        check.tenures.len(),
        check.moves,
        check.overlaps,
        if check.fences_rise {
            "rise"
        } else {
            "do NOT rise"
        },
    )
}
