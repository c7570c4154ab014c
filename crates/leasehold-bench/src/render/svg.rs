//! A hand-rolled SVG chart: leasehold ÷ floor per scenario and backend (bars on a linear axis),
//! and hand-off p50 per backend and side (bars on a log axis).

use std::fmt::Write as _;

use crate::report::Report;
use crate::scenario::Scenario;

const WIDTH: f64 = 960.0;
const PANEL: f64 = 300.0;
const LEFT: f64 = 70.0;
/// One colour per backend of the report, in its order: as many as there are backends, so no two
/// share one (the legend and the bars both index it).
const COLORS: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f",
    "#ff9da7", "#17becf",
];
const _: () = assert!(COLORS.len() >= crate::backend::Backend::ALL.len());
const SIDE_COLORS: [&str; 3] = ["#4e79a7", "#9c9c9c", "#e15759"];
/// A white outline behind value labels, so gridlines do not cross them.
const HALO: &str = r#"paint-order="stroke" stroke="white" stroke-width="3""#;

/// Throughput scenarios shown in the ratio panel.
const RATIO_SCENARIOS: [Scenario; 5] = [
    Scenario::Uncontended,
    Scenario::Contended,
    Scenario::ManyLocks,
    Scenario::Group,
    Scenario::AutoExtend,
];

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Renders the chart.
pub(crate) fn render(report: &Report) -> Result<String, std::fmt::Error> {
    let height = 2.0 * PANEL + 140.0;
    let mut s = String::new();
    writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    )?;
    writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#)?;
    ratios(&mut s, report, 30.0)?;
    handoff(&mut s, report, PANEL + 110.0)?;
    writeln!(s, "</svg>")?;
    Ok(s)
}

/// A vertical axis title, rotated.
fn axis_title(s: &mut String, x: f64, y: f64, text: &str) -> std::fmt::Result {
    writeln!(
        s,
        r#"<text x="{x}" y="{y}" transform="rotate(-90 {x} {y})" text-anchor="middle">{}</text>"#,
        esc(text)
    )
}

fn legend(s: &mut String, x: f64, y: f64, items: &[(&str, &str)]) -> std::fmt::Result {
    let mut at = x;
    for (name, color) in items {
        writeln!(
            s,
            r#"<rect x="{at}" y="{}" width="12" height="12" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
            y - 10.0,
            at + 16.0,
            y,
            esc(name)
        )?;
        at += 24.0 + 7.5 * name.len() as f64;
    }
    Ok(())
}

fn ratios(s: &mut String, report: &Report, top: f64) -> std::fmt::Result {
    let plot_top = top + 40.0;
    let plot_h = PANEL - 60.0;
    let bottom = plot_top + plot_h;
    let right = WIDTH - 20.0;
    let max = report
        .outcomes
        .iter()
        .filter(|o| RATIO_SCENARIOS.iter().any(|r| r.name() == o.scenario))
        .filter_map(crate::outcome::Outcome::ratio_to_floor)
        .fold(1.2_f64, f64::max);
    let max = (max * 5.0).ceil() / 5.0;
    let y = |v: f64| bottom - v / max * plot_h;
    writeln!(
        s,
        r#"<text x="{LEFT}" y="{}" font-size="15" font-weight="bold">Throughput: leasehold ÷ floor (1.0 = the backend's raw round trips; higher is better)</text>"#,
        top + 5.0
    )?;
    let items: Vec<(&str, &str)> = report
        .backends
        .iter()
        .enumerate()
        .map(|(i, b)| (*b, COLORS[i % COLORS.len()]))
        .collect();
    legend(s, LEFT, top + 28.0, &items)?;
    let mut tick = 0.0;
    while tick <= max + 1e-9 {
        writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{right}" y1="{0:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{1}" y="{2:.1}" text-anchor="end">{tick:.1}</text>"##,
            y(tick),
            LEFT - 6.0,
            y(tick) + 4.0
        )?;
        tick += 0.2;
    }
    writeln!(
        s,
        r##"<line x1="{LEFT}" x2="{right}" y1="{0:.1}" y2="{0:.1}" stroke="#333" stroke-dasharray="6 4"/>"##,
        y(1.0)
    )?;
    axis_title(s, 22.0, plot_top + plot_h / 2.0, "leasehold ÷ floor")?;
    let group_w = (right - LEFT) / RATIO_SCENARIOS.len() as f64;
    let n = report.backends.len().max(1) as f64;
    let bar_w = (group_w - 20.0) / n;
    for (g, scenario) in RATIO_SCENARIOS.iter().enumerate() {
        let x0 = LEFT + g as f64 * group_w + 10.0;
        writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + (group_w - 20.0) / 2.0,
            bottom + 18.0,
            scenario.name()
        )?;
        for (b, backend) in report.backends.iter().enumerate() {
            let Some(r) = report
                .outcome(backend, *scenario)
                .and_then(crate::outcome::Outcome::ratio_to_floor)
            else {
                continue;
            };
            let x = x0 + b as f64 * bar_w;
            writeln!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{backend} {}: {r:.2}×</title></rect>"#,
                y(r),
                bar_w - 2.0,
                bottom - y(r),
                COLORS[b % COLORS.len()],
                scenario.name()
            )?;
            writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="9" text-anchor="middle" {HALO}>{r:.2}</text>"#,
                x + (bar_w - 2.0) / 2.0,
                y(r) - 3.0
            )?;
        }
    }
    writeln!(
        s,
        r##"<line x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle">scenario</text>"##,
        (LEFT + right) / 2.0,
        bottom + 36.0
    )
}

fn handoff(s: &mut String, report: &Report, top: f64) -> std::fmt::Result {
    let plot_top = top + 40.0;
    let plot_h = PANEL - 60.0;
    let bottom = plot_top + plot_h;
    let right = WIDTH - 20.0;
    let outcomes: Vec<_> = report
        .backends
        .iter()
        .filter_map(|b| report.outcome(b, Scenario::Handoff))
        .collect();
    let values = outcomes
        .iter()
        .flat_map(|o| o.figures.iter().map(|f| f.value))
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo > hi { (0.01, 1000.0) } else { (lo, hi) };
    // Half a decade of room below the smallest bar, so it never has zero height.
    let d0 = (lo / 2.0).log10().floor();
    let (d0, d1) = (d0 as i32, hi.log10().ceil().max(d0 + 1.0) as i32);
    let y = |v: f64| bottom - (v.log10() - f64::from(d0)) / f64::from(d1 - d0) * plot_h;
    writeln!(
        s,
        r#"<text x="{LEFT}" y="{}" font-size="15" font-weight="bold">Hand-off latency p50: release → next holder (ms, log scale; lower is better)</text>"#,
        top + 5.0
    )?;
    legend(
        s,
        LEFT,
        top + 28.0,
        &[
            ("leasehold", SIDE_COLORS[0]),
            ("floor", SIDE_COLORS[1]),
            ("rslock / etcd lock", SIDE_COLORS[2]),
        ],
    )?;
    for d in d0..=d1 {
        let v = 10f64.powi(d);
        let label = if d < 0 {
            format!("{v:.*}", usize::try_from(-d).unwrap_or(0))
        } else {
            format!("{v:.0}")
        };
        writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{right}" y1="{0:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{1}" y="{2:.1}" text-anchor="end">{label}</text>"##,
            y(v),
            LEFT - 6.0,
            y(v) + 4.0
        )?;
    }
    axis_title(s, 22.0, plot_top + plot_h / 2.0, "p50 ms (log)")?;
    let group_w = (right - LEFT) / outcomes.len().max(1) as f64;
    let bar_w = (group_w - 30.0) / 3.0;
    for (g, o) in outcomes.iter().enumerate() {
        let x0 = LEFT + g as f64 * group_w + 15.0;
        writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + (group_w - 30.0) / 2.0,
            bottom + 18.0,
            o.backend
        )?;
        for (i, f) in o.figures.iter().enumerate().take(3) {
            if !(f.value.is_finite() && f.value > 0.0) {
                continue;
            }
            let x = x0 + i as f64 * bar_w;
            let top_y = y(f.value).min(bottom);
            writeln!(
                s,
                r#"<rect x="{x:.1}" y="{top_y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {:.3} ms</title></rect>"#,
                bar_w - 3.0,
                bottom - top_y,
                SIDE_COLORS[i],
                o.backend,
                esc(&f.side),
                f.value
            )?;
            writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="9" text-anchor="middle" {HALO}>{}</text>"#,
                x + (bar_w - 3.0) / 2.0,
                top_y - 3.0,
                crate::render::number(f.value)
            )?;
        }
    }
    writeln!(
        s,
        r##"<line x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle">backend</text>"##,
        (LEFT + right) / 2.0,
        bottom + 36.0
    )
}
