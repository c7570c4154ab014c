//! The README's paragraph of benchmark figures, written from the report (its JSON), so the prose
//! never quotes figures of another run: `scripts/bench-report` rewrites the block between
//! [`START`] and [`END`] in the README, and a test checks that the README's block is the one this
//! renders from `docs/images/bench/benchmarks.json`.

use serde_json::Value;

/// The line before the generated paragraph.
pub(crate) const START: &str = "<!-- bench-summary: written by scripts/bench-report from docs/images/bench/benchmarks.json -->";
/// The line after it.
pub(crate) const END: &str = "<!-- /bench-summary -->";

/// The stores as the prose names them.
fn label(backend: &str) -> &str {
    match backend {
        "sqlite" => "SQLite",
        "postgres" => "PostgreSQL",
        "mysql" => "MariaDB",
        "redis" => "Redis",
        "dynamodb" => "DynamoDB (dynalite)",
        "etcd" => "etcd",
        "nats" => "NATS",
        "zookeeper" => "ZooKeeper",
        other => other,
    }
}

/// The value of `side` in `scenario` on `backend`, if measured.
fn figure(report: &Value, backend: &str, scenario: &str, side: &str) -> Option<f64> {
    report["outcomes"]
        .as_array()?
        .iter()
        .find(|o| o["backend"] == backend && o["scenario"] == scenario)?["figures"]
        .as_array()?
        .iter()
        .find(|f| f["side"] == side)?["value"]
        .as_f64()
}

fn two(v: f64) -> String {
    format!("{v:.2}")
}

/// The paragraph, from the report serialised as JSON.
pub(crate) fn render(report: &Value) -> String {
    let backends: Vec<&str> = report["backends"]
        .as_array()
        .map(|b| b.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let ratios: Vec<String> = backends
        .iter()
        .filter(|b| **b != "memory")
        .filter_map(|b| {
            let lh = figure(report, b, "uncontended", "leasehold")?;
            let floor = figure(report, b, "uncontended", "floor")?;
            Some(format!("{} {}×", label(b), two(lh / floor)))
        })
        .collect();
    let mut text = format!(
        "In the run recorded there, an uncontended `run_if_leader` reached, as a share of the \
         throughput of the backend's own statements or scripts issued raw: {}.",
        ratios.join(", ")
    );
    if let (Some(lh), Some(rs)) = (
        figure(report, "redis", "uncontended", "leasehold"),
        figure(report, "redis", "uncontended", "rslock"),
    ) {
        text.push_str(&format!(
            " On Redis that is {}× rslock, which mints no fences.",
            two(lh / rs)
        ));
    }
    if let Some(per_s) = figure(report, "memory", "uncontended", "leasehold") {
        text.push_str(&format!(
            " A call on `MemoryStore` takes {} µs.",
            two(1e6 / per_s)
        ));
    }
    let handoffs: Vec<String> = ["redis", "etcd"]
        .iter()
        .filter_map(|b| {
            let ms = figure(report, b, "handoff", "leasehold")?;
            Some(format!("{} ms on {}", two(ms), label(b)))
        })
        .collect();
    if !handoffs.is_empty() {
        text.push_str(&format!(
            " A waiter takes over {} after a release (median).",
            handoffs.join(" and ")
        ));
    }
    if let Some(rows) = report["safety"].as_array().filter(|r| !r.is_empty()) {
        let sum = |key: &str| rows.iter().filter_map(|r| r[key].as_u64()).sum::<u64>();
        let contenders = rows.iter().filter_map(|r| r["contenders"].as_u64()).max();
        let rounds = rows.iter().filter_map(|r| r["rounds"].as_u64()).max();
        if let (Some(c), Some(r)) = (contenders, rounds) {
            text.push_str(&format!(
                " The safety runs ({} of them, {c} contenders × {r} rounds, with and without \
                 faults) counted {} violations and {} leaked locks.",
                rows.len(),
                sum("violations"),
                sum("leaked")
            ));
        }
    }
    wrap(&text, 98)
}

/// `text` wrapped at `width` columns, on spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// `document` with the block between [`START`] and [`END`] replaced by `paragraph`, or `None`
/// when it has no such block.
pub(crate) fn replace_block(document: &str, paragraph: &str) -> Option<String> {
    let start = document.find(START)? + START.len();
    let end = document[start..].find(END)? + start;
    Some(format!(
        "{}\n{paragraph}{}",
        &document[..start],
        &document[end..]
    ))
}

/// The block between [`START`] and [`END`] in `document`.
#[cfg(test)]
pub(crate) fn block(document: &str) -> Option<&str> {
    let start = document.find(START)? + START.len() + 1;
    let end = document[start..].find(END)? + start;
    Some(&document[start..end])
}
