//! Rendering a small made-up report.

use crate::outcome::{Figure, Outcome, Unit};
use crate::render::{markdown, svg};
use crate::report::Report;
use crate::safety::SafetyRow;

fn figure(side: &str, value: f64) -> Figure {
    Figure {
        side: side.to_owned(),
        value,
        p50_ms: Some(0.1),
        p99_ms: Some(0.2),
        count: 10,
        failures: 0,
        per_task: Some((26, 12_345)),
        first_error: None,
        server: None,
        requests: None,
        partition: None,
    }
}

fn safety_row(violations: usize) -> SafetyRow {
    SafetyRow {
        backend: "redis",
        faults: "none",
        contenders: 8,
        rounds: 10,
        lease_ms: 2000,
        runs: 5,
        skips: 75,
        errors: 0,
        lost: 0,
        injected: 0,
        proxy_cuts: 0,
        accepted_writes: 10,
        rejected_writes: 0,
        max_inside: 1,
        violations,
        first_violations: Vec::new(),
        held_at_end: 0,
        recovered_ms: Some(0.1),
        leaked: 0,
        elapsed_s: 1.0,
        first_errors: Vec::new(),
    }
}

fn report(violations: usize) -> Report {
    Report {
        size_flags: "--seconds 1".to_owned(),
        backends: vec!["redis"],
        outcomes: vec![
            Outcome {
                backend: "redis",
                scenario: "uncontended",
                unit: Unit::PerSecond,
                figures: vec![
                    figure("leasehold", 900.0),
                    figure("floor", 1000.0),
                    figure("rslock", 1800.0),
                ],
            },
            Outcome {
                backend: "redis",
                scenario: "handoff",
                unit: Unit::Millis,
                figures: vec![figure("leasehold", 0.5), figure("floor", 0.01)],
            },
        ],
        safety: vec![safety_row(violations)],
        fenced: vec![fenced_row(violations)],
        failures: Vec::new(),
    }
}

fn fenced_row(violations: usize) -> crate::safety::fenced::FencedRow {
    crate::safety::fenced::FencedRow {
        backend: "redis",
        sink: "redis fenced set".to_owned(),
        rounds: 10_000,
        expired: 100,
        stale_rejected: 7_000,
        stale_before_successor: 3_000 - violations as u64,
        stale_accepted: violations as u64,
        violations,
        first_violations: vec![
            "round 7: the stale write was accepted".to_owned();
            violations.min(1)
        ],
        errors: 0,
        first_errors: Vec::new(),
        elapsed_s: 12.5,
    }
}

#[test]
fn the_fenced_sinks_table_shows_each_sink_and_its_verdict() -> Result<(), std::fmt::Error> {
    let md = markdown::render(&report(0))?;
    assert!(
        md.contains("## Safety: fenced sinks with paused stale holders"),
        "{md}"
    );
    assert!(md.contains("| redis | redis fenced set | 10000 | 100 | 7000 | 3000 | **0** | **0** | 0 | 12.5 s | pass |"), "{md}");
    let failed = markdown::render(&report(1))?;
    assert!(
        failed.contains("Problems of redis fenced set on redis"),
        "{failed}"
    );
    assert!(
        failed.contains("* round 7: the stale write was accepted"),
        "{failed}"
    );
    Ok(())
}

#[test]
fn markdown_has_ratios_commands_and_the_verdict() -> Result<(), std::fmt::Error> {
    let md = markdown::render(&report(0))?;
    assert!(md.contains("| redis | 0.90× |"), "{md}");
    assert!(md.contains("| 0.90× | 0.50× |"), "{md}");
    assert!(md.contains("| 0.500 / 0.0100 |"), "{md}");
    assert!(md.contains("; per task 26–12,345 |"), "{md}");
    assert!(
        md.contains("leasehold-bench --backend redis --scenario uncontended --seconds 1"),
        "{md}"
    );
    assert!(md.contains("| pass |"), "{md}");
    let failed = markdown::render(&report(2))?;
    assert!(failed.contains("**FAIL**"), "{failed}");
    assert!(!report(2).passed() && report(0).passed());
    Ok(())
}

/// Each backend's peer (rslock on Redis, etcd's lock API on etcd) gets its column and the
/// shared "leasehold ÷ peer" ratio.
#[test]
fn every_backends_peer_gets_the_peer_ratio() -> Result<(), std::fmt::Error> {
    let mut r = report(0);
    r.backends.push("etcd");
    r.outcomes.push(Outcome {
        backend: "etcd",
        scenario: "uncontended",
        unit: Unit::PerSecond,
        figures: vec![
            figure("leasehold", 300.0),
            figure("floor", 400.0),
            figure("etcd lock", 600.0),
        ],
    });
    let md = markdown::render(&r)?;
    assert!(
        md.contains("| rslock | etcd lock | leasehold ÷ floor | leasehold ÷ peer |"),
        "{md}"
    );
    assert!(md.contains("| 0.90× | 0.50× |"), "redis: {md}");
    assert!(md.contains("| 0.75× | 0.50× |"), "etcd: {md}");
    assert!(
        md.contains("leasehold-bench --backend redis,etcd --scenario uncontended"),
        "{md}"
    );
    Ok(())
}

#[test]
fn svg_is_one_document_with_a_bar_per_ratio() -> Result<(), std::fmt::Error> {
    let svg = svg::render(&report(0))?;
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("<title>redis uncontended: 0.90×</title>"),
        "{svg}"
    );
    assert!(
        svg.contains("<title>redis floor: 0.010 ms</title>"),
        "{svg}"
    );
    // The smallest hand-off bar sits above the bottom of the log axis.
    assert!(!svg.contains(r#"height="0.0""#), "{svg}");
    Ok(())
}

#[test]
fn numbers_are_grouped_and_rounded() {
    use crate::render::number;
    assert_eq!(number(8564.4), "8,564");
    assert_eq!(number(123_456_789.0), "123,456,789");
    assert_eq!(number(412.0), "412");
    assert_eq!(number(61.94), "61.9");
    assert_eq!(number(0.5234), "0.523");
    assert_eq!(number(0.000_647_3), "0.000647");
    assert_eq!(number(0.0), "0");
    assert_eq!(number(f64::NAN), "–");
}

#[test]
fn every_backend_has_a_colour_of_its_own_in_the_legend_and_the_bars() {
    let mut r = report(0);
    r.backends = crate::backend::Backend::ALL
        .iter()
        .map(|b| b.name())
        .collect();
    r.outcomes = r
        .backends
        .iter()
        .map(|&backend| Outcome {
            backend,
            scenario: "uncontended",
            unit: Unit::PerSecond,
            figures: vec![figure("leasehold", 900.0), figure("floor", 1000.0)],
        })
        .collect();
    let chart = svg::render(&r).unwrap();
    let legend: Vec<(&str, &str)> = r
        .backends
        .iter()
        .map(|b| {
            let at = chart
                .find(&format!(">{b}</text>"))
                .unwrap_or_else(|| panic!("{b} is missing from the legend"));
            let fill = chart[..at].rfind("fill=\"").map(|i| &chart[i + 6..i + 13]);
            (*b, fill.unwrap_or_default())
        })
        .collect();
    let mut colours: Vec<&str> = legend.iter().map(|(_, c)| *c).collect();
    colours.sort_unstable();
    colours.dedup();
    assert_eq!(colours.len(), r.backends.len(), "{legend:?}");
    for (backend, colour) in &legend {
        assert!(
            chart.contains(&format!("fill=\"{colour}\"><title>{backend} uncontended")),
            "{backend}'s bar is not drawn in its legend colour {colour}"
        );
    }
}

/// The README's figures are the recorded report's: the paragraph between the bench-summary
/// markers is exactly what the renderer makes of `docs/images/bench/benchmarks.json`, so a
/// figure copied by hand, or left from another run, fails here.
#[test]
fn the_readme_quotes_the_recorded_report() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let json = std::fs::read_to_string(root.join("docs/images/bench/benchmarks.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let quoted = crate::render::summary::block(&readme).expect("the README's bench-summary block");
    assert_eq!(
        quoted,
        crate::render::summary::render(&report),
        "README.md's benchmark paragraph is not the recorded report's; scripts/bench-report \
         rewrites it"
    );
}

#[test]
fn the_summary_names_each_measured_backend_and_the_safety_totals() {
    let text = crate::render::summary::render(&serde_json::to_value(report(0)).unwrap());
    assert!(text.contains("Redis 0.90×"), "{text}");
    assert!(text.contains("0.50× rslock"), "{text}");
    assert!(text.contains("0 violations"), "{text}");
    let doc = format!(
        "a\n{}\nold\n{}\nb\n",
        crate::render::summary::START,
        crate::render::summary::END
    );
    let new = crate::render::summary::replace_block(&doc, "new\n").unwrap();
    assert_eq!(crate::render::summary::block(&new), Some("new\n"));
    assert!(new.starts_with("a\n") && new.ends_with("\nb\n"), "{new}");
}

fn session(size: u64, server: Option<f64>, client: f64, followers: Option<f64>) -> Figure {
    let statistic = server.map(|_| "grpc_server_msg_received_total");
    Figure::requests(
        format!("N = {size}"),
        crate::outcome::RequestFigures {
            size,
            window_s: 12.0,
            server_per_s: server,
            statistic,
            writes_per_s: server.map(|_| 1.0),
            write_statistic: statistic.map(|_| "etcd_debugging_mvcc_current_revision"),
            client_per_s: client,
            followers_client_per_s: followers,
            lost: 0,
            acquire_s: followers.is_none().then_some(0.25),
        },
        None,
    )
}

/// The session scenarios get one row per backend and size, with the statistic named once.
#[test]
fn session_tables_have_a_row_per_size() -> Result<(), std::fmt::Error> {
    let mut r = report(0);
    r.outcomes.push(Outcome {
        backend: "etcd",
        scenario: "hold-many",
        unit: Unit::RequestsPerSecond,
        figures: vec![
            session(1, Some(3.0), 1.0, None),
            session(100, Some(300.0), 100.0, None),
        ],
    });
    r.outcomes.push(Outcome {
        backend: "sqlite",
        scenario: "idle-followers",
        unit: Unit::RequestsPerSecond,
        figures: vec![session(16, None, 81.0, Some(80.0))],
    });
    let md = markdown::render(&r)?;
    assert!(
        md.contains("| etcd | 1 | 3.00/s | 3.00× | 1.00/s | 1.00/s | 0 | 250 ms | `grpc_server_msg_received_total`; `etcd_debugging_mvcc_current_revision` |"),
        "{md}"
    );
    assert!(
        md.contains("|  | 100 | 300/s | 300.00× | 100/s | 1.00/s | 0 | 250 ms |  |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| sqlite | 16 | – | 5.00/s | 81.0/s (80.0/s) | – | 0 | none: client-side count |"
        ),
        "{md}"
    );
    Ok(())
}

/// The partition scenario gets one row per backend and number of members, with the moves
/// beside their minimum and the shards with two owners in bold.
#[test]
fn partition_table_has_a_row_per_size() -> Result<(), std::fmt::Error> {
    use crate::outcome::PartitionFigures;
    let mut r = report(0);
    let size = |p: u64, server: Option<f64>| {
        let mut f = session(p, server, 2.0 * p as f64, None);
        f.side = format!("P = {p}");
        f.partition = Some(PartitionFigures {
            members: p,
            shards: 1024,
            lease_s: 3.0,
            join_leases: 0.68,
            join_moved: 1024 / p,
            join_minimum: 1024 / p,
            kill_leases: 1.25,
            killed_owned: 1024 / p,
            two_owners: 0,
            tenures: 3000,
        });
        f
    };
    r.outcomes.push(Outcome {
        backend: "redis",
        scenario: "partition",
        unit: Unit::RequestsPerSecond,
        figures: vec![size(2, Some(4.5)), size(16, Some(40.0))],
    });
    // A backend whose second size did not settle keeps its first size's row and says why.
    let mut stopped = session(4, None, 0.0, None);
    stopped.requests = None;
    stopped.first_error = Some("P = 4: the join: not balanced over 4 members within 60s".into());
    r.outcomes.push(Outcome {
        backend: "dynamodb",
        scenario: "partition",
        unit: Unit::RequestsPerSecond,
        figures: vec![size(2, None), stopped],
    });
    let md = markdown::render(&r)?;
    assert!(md.contains("| dynamodb | 2 | 1,024 |"), "{md}");
    assert!(
        md.contains("* dynamodb: P = 4: the join: not balanced over 4 members within 60s"),
        "{md}"
    );
    assert!(md.contains("## Partitions: 1,024 shards"), "{md}");
    assert!(
        md.contains("| redis | 2 | 1,024 | 0.680 leases | 512 (512) | 4.50/s | 4.00/s | 1.25 leases (512) | **0** | `grpc_server_msg_received_total` |"),
        "{md}"
    );
    assert!(
        md.contains("|  | 16 | 1,024 | 0.680 leases | 64 (64) | 40.0/s | 32.0/s | 1.25 leases (64) | **0** |  |"),
        "{md}"
    );
    Ok(())
}
