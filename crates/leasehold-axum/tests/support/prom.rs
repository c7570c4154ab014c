//! Test support for every Prometheus output of leasehold (leasehold-axum's `/metrics`,
//! `leasehold serve`'s `/metrics`, `leasehold run --metrics-file`), shared by the tests of
//! leasehold-axum and leasehold-cli (`#[path]`):
//!
//! * [`check`] parses a text with the `prometheus-parse` text-format parser and checks what a
//!   Prometheus server relies on beyond it: a `# HELP` and a `# TYPE` line for every family,
//!   before its samples, once; well-formed histograms (`_bucket` with `le` up to `+Inf`,
//!   cumulative, `_sum`, `_count` equal to the `+Inf` bucket); each family is the one of
//!   leasehold's registry (`leasehold::metrics::FAMILIES`) with its type, labels and help.
//! * [`Tsdb`] keeps scrapes as time series and evaluates PromQL expressions over them: each
//!   expression is parsed by `promql-parser` (so the manual's alerts are valid PromQL) and
//!   evaluated here, for the functions and operators the manual's alerts use, with Prometheus's
//!   semantics (without `increase`'s extrapolation: a simple difference over the range).
//! * [`alerts`] reads the alerting rules (`- alert: NAME` / `expr: EXPR`) of a page of the manual.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp
)]

use std::collections::{BTreeMap, BTreeSet};

use leasehold::metrics::{FAMILIES, Kind};
use promql_parser::parser::{self, Expr, LabelModifier};

/// A series' labels, `__name__` included.
pub type Labels = BTreeMap<String, String>;

/// One sample line: metric name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub name: String,
    pub labels: Labels,
    pub value: f64,
}

/// A family as the text declares it.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    pub help: Option<String>,
    pub kind: Option<String>,
    pub samples: Vec<Line>,
}

/// A checked text: its families by name.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    pub families: BTreeMap<String, Declared>,
}

impl Exposition {
    /// The value of the series `name` with (at least) `labels`, if there is one.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.lines(name, labels).first().map(|l| l.value)
    }

    /// The sample lines named `name` with (at least) `labels`.
    pub fn lines(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Line> {
        self.families
            .values()
            .flat_map(|f| &f.samples)
            .filter(|l| {
                l.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.labels.get(*k).is_some_and(|x| x == v))
            })
            .collect()
    }

    /// Whether a series of the family `family` (any of its sample names) has `labels`.
    pub fn has_series(&self, family: &str, labels: &[(&str, &str)]) -> bool {
        self.families.get(family).is_some_and(|f| {
            f.samples.iter().any(|l| {
                labels
                    .iter()
                    .all(|(k, v)| l.labels.get(*k).is_some_and(|x| x == v))
            })
        })
    }
}

/// The family a sample name belongs to, given the declared families (`x_bucket`, `x_sum` and
/// `x_count` belong to a histogram `x`).
fn family_of(name: &str, declared: &BTreeMap<String, Declared>) -> String {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && declared
                .get(base)
                .is_some_and(|d| matches!(d.kind.as_deref(), Some("histogram" | "summary")))
        {
            return base.to_owned();
        }
    }
    name.to_owned()
}

/// Parses and checks `text` (see the module docs); panics with the text on any fault.
pub fn check(text: &str) -> Exposition {
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .unwrap_or_else(|e| panic!("prometheus-parse refused it ({e}):\n{text}"));
    let mut exp = Exposition::default();
    let mut order: Vec<String> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let d = exp.families.entry(name.to_owned()).or_default();
            assert!(d.help.is_none(), "two HELP lines for {name}:\n{text}");
            assert!(
                d.samples.is_empty(),
                "HELP after samples of {name}:\n{text}"
            );
            assert!(!help.trim().is_empty(), "empty HELP for {name}:\n{text}");
            d.help = Some(unescape_help(help));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            let d = exp.families.entry(name.to_owned()).or_default();
            assert!(d.kind.is_none(), "two TYPE lines for {name}:\n{text}");
            assert!(
                d.samples.is_empty(),
                "TYPE after samples of {name}:\n{text}"
            );
            d.kind = Some(kind.to_owned());
            continue;
        }
        assert!(!line.starts_with('#'), "a comment line: {line}");
        let sample = parse_line(line).unwrap_or_else(|e| panic!("{e}: {line:?}\n{text}"));
        let family = family_of(&sample.name, &exp.families);
        if order.last() != Some(&family) {
            assert!(
                !order.contains(&family),
                "the samples of {family} are not together:\n{text}"
            );
            order.push(family.clone());
        }
        let d = exp.families.entry(family.clone()).or_default();
        assert!(
            d.help.is_some(),
            "no HELP before the samples of {family}:\n{text}"
        );
        assert!(
            d.kind.is_some(),
            "no TYPE before the samples of {family}:\n{text}"
        );
        d.samples.push(sample);
    }
    // prometheus-parse read the same samples: as many (histograms grouped by series), and the
    // same HELP texts.
    for (name, d) in &exp.families {
        assert_eq!(
            parsed.docs.get(name).map(|h| unescape_help(h)),
            d.help.clone(),
            "{name}"
        );
    }
    for (name, d) in &exp.families {
        assert!(
            !d.samples.is_empty(),
            "a family without samples: {name}\n{text}"
        );
        let kind = d.kind.as_deref().unwrap_or("");
        assert!(
            matches!(kind, "counter" | "gauge" | "histogram"),
            "{name} is a {kind}: leasehold exports counters, gauges and histograms only\n{text}"
        );
        if kind == "histogram" {
            check_histogram(name, d, text);
        } else {
            for l in &d.samples {
                assert_eq!(&l.name, name, "{text}");
                let seen = parsed.samples.iter().any(|s| {
                    s.metric == *name && s.labels.iter().all(|(k, v)| l.labels.get(k) == Some(v))
                });
                assert!(seen, "prometheus-parse lost {l:?}");
                if kind == "counter" {
                    assert!(name.ends_with("_total"), "counter {name} without _total");
                    assert!(l.value >= 0.0 && l.value.fract() == 0.0, "{l:?}");
                }
            }
        }
        if let Some(f) = FAMILIES.iter().find(|f| f.name == name) {
            assert_eq!(kind, f.kind.as_str(), "{name}: the registry's type");
            assert_eq!(
                d.help.as_deref(),
                Some(f.help),
                "{name}: the registry's help"
            );
            for l in &d.samples {
                let mut labels: BTreeSet<&str> = l.labels.keys().map(String::as_str).collect();
                labels.remove("__name__");
                if l.name.ends_with("_bucket") && f.kind == Kind::Histogram {
                    labels.remove("le");
                }
                let expected: BTreeSet<&str> = f.labels.iter().copied().collect();
                assert_eq!(labels, expected, "{name}: the registry's labels, {l:?}");
            }
            if f.kind == Kind::Histogram {
                let les: BTreeSet<String> = d
                    .samples
                    .iter()
                    .filter_map(|l| l.labels.get("le").cloned())
                    .collect();
                for b in f.buckets {
                    assert!(
                        les.contains(&format_le(*b)),
                        "{name}: bucket {b} missing: {les:?}"
                    );
                }
            }
        } else {
            assert!(
                !name.starts_with("leasehold_") && !name.starts_with("leader_election_"),
                "{name} is not in leasehold's registry"
            );
        }
    }
    exp
}

/// `le` as the exporters write it.
fn format_le(b: f64) -> String {
    format!("{b}")
}

/// One series of a histogram: its buckets (`le`, count), `_sum` and `_count`.
type HistogramSeries = (Vec<(f64, f64)>, Option<f64>, Option<f64>);

fn check_histogram(name: &str, d: &Declared, text: &str) {
    let mut by_series: BTreeMap<Labels, HistogramSeries> = BTreeMap::new();
    for l in &d.samples {
        let mut labels = l.labels.clone();
        labels.remove("__name__");
        if l.name == format!("{name}_bucket") {
            let le = labels.remove("le").expect("a bucket has le");
            let le = parse_float(&le).expect("le is a number");
            by_series.entry(labels).or_default().0.push((le, l.value));
        } else if l.name == format!("{name}_sum") {
            by_series.entry(labels).or_default().1 = Some(l.value);
        } else if l.name == format!("{name}_count") {
            by_series.entry(labels).or_default().2 = Some(l.value);
        } else {
            panic!("{} in histogram {name}:\n{text}", l.name);
        }
    }
    for (labels, (buckets, sum, count)) in by_series {
        assert!(!buckets.is_empty(), "{name}{labels:?}: no buckets");
        assert!(
            buckets
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{name}{labels:?}: buckets not ascending and cumulative: {buckets:?}"
        );
        let last = buckets.last().expect("buckets");
        assert!(last.0.is_infinite(), "{name}{labels:?}: no +Inf bucket");
        let count = count.unwrap_or_else(|| panic!("{name}{labels:?}: no _count"));
        assert!(sum.is_some(), "{name}{labels:?}: no _sum");
        assert_eq!(last.1, count, "{name}{labels:?}: +Inf bucket != _count");
        assert!(
            count > 0.0,
            "{name}{labels:?}: a histogram series with no observation"
        );
    }
}

fn unescape_help(help: &str) -> String {
    help.replace("\\n", "\n").replace("\\\\", "\\")
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// One sample line of the text format: `name{label="value",…} value [timestamp]`.
pub fn parse_line(line: &str) -> Result<Line, String> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("bad metric name".into());
    }
    let mut labels = Labels::new();
    labels.insert("__name__".into(), name.to_owned());
    let mut rest = &line[name_end..];
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            while chars.peek().is_some_and(|(_, c)| *c == ',' || *c == ' ') {
                chars.next();
            }
            match chars.peek() {
                Some((i, '}')) => {
                    rest = &body[i + 1..];
                    break;
                }
                None => return Err("unterminated labels".into()),
                _ => {}
            }
            let mut key = String::new();
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("bad label name {key:?}"));
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err("label value not quoted".into());
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        _ => return Err("bad escape".into()),
                    },
                    Some((_, '"')) => break,
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated label value".into()),
                }
            }
            if labels.insert(key.clone(), value).is_some() {
                return Err(format!("label {key} twice"));
            }
        }
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or("no value")?;
    let value = parse_float(value).ok_or_else(|| format!("bad value {value:?}"))?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>()
            .map_err(|_| format!("bad timestamp {ts:?}"))?;
    }
    if fields.next().is_some() {
        return Err("trailing fields".into());
    }
    Ok(Line {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// The alerting rules of a page of the manual: every `- alert: NAME` with the `expr:` on the
/// line after it, in the page's order.
pub fn alerts(page: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = page.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = line.trim().strip_prefix("- alert:") else {
            continue;
        };
        let name = name.split('#').next().unwrap_or("").trim().to_owned();
        let expr = lines
            .get(i + 1)
            .and_then(|l| l.trim().strip_prefix("expr:"))
            .unwrap_or_else(|| panic!("alert {name}: no expr on the next line"))
            .trim()
            .to_owned();
        found.push((name, expr));
    }
    found
}

/// The expression of the alert `name` in `page`.
pub fn alert(page: &str, name: &str) -> String {
    alerts(page)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no alert {name} in the page"))
        .1
}

/// Scrapes kept as time series (seconds on any clock the test chooses).
#[derive(Debug, Default)]
pub struct Tsdb {
    series: BTreeMap<Labels, Vec<(f64, f64)>>,
}

/// How far back an instant selector looks (Prometheus's default).
const LOOKBACK: f64 = 300.0;

#[derive(Debug, Clone)]
enum Val {
    Scalar(f64),
    Vector(Vec<(Labels, f64)>),
    Matrix(Vec<(Labels, Vec<(f64, f64)>)>),
}

impl Tsdb {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every sample of a checked exposition at time `at`, with the target's labels
    /// (`instance`, `job`, …) as Prometheus adds them.
    pub fn ingest(&mut self, at: f64, exp: &Exposition, target: &[(&str, &str)]) {
        for l in exp.families.values().flat_map(|f| &f.samples) {
            let mut labels = l.labels.clone();
            for (k, v) in target {
                labels
                    .entry((*k).to_owned())
                    .or_insert_with(|| (*v).to_owned());
            }
            let points = self.series.entry(labels).or_default();
            assert!(
                points.last().is_none_or(|(t, _)| *t < at),
                "scrapes in time order"
            );
            points.push((at, l.value));
        }
    }

    /// The result of the PromQL expression `expr` at time `at`: (labels, value) per series.
    pub fn eval(&self, expr: &str, at: f64) -> Vec<(Labels, f64)> {
        let ast = parser::parse(expr).unwrap_or_else(|e| panic!("not PromQL: {expr}: {e}"));
        match self.eval_expr(&ast, at) {
            Val::Vector(v) => v,
            Val::Scalar(s) => vec![(Labels::new(), s)],
            Val::Matrix(_) => panic!("{expr}: a range vector is no alert"),
        }
    }

    /// Whether the alert expression `expr` fires at `at` (has any result; `for:` aside).
    pub fn fires(&self, expr: &str, at: f64) -> bool {
        !self.eval(expr, at).is_empty()
    }

    /// The label sets for which `expr` fires at `at`, each as `label=value` of `label`.
    pub fn firing(&self, expr: &str, at: f64, label: &str) -> BTreeSet<String> {
        self.eval(expr, at)
            .into_iter()
            .map(|(l, _)| l.get(label).cloned().unwrap_or_default())
            .collect()
    }

    /// Which of `rules` (name, expression) fire at `at`, each with the `instance` it fires for
    /// ("" once aggregated away).
    pub fn rules_firing(&self, rules: &[(String, String)], at: f64) -> BTreeSet<(String, String)> {
        rules
            .iter()
            .flat_map(|(name, expr)| {
                self.firing(expr, at, "instance")
                    .into_iter()
                    .map(move |instance| (name.clone(), instance))
            })
            .collect()
    }

    fn select(
        &self,
        vs: &parser::VectorSelector,
    ) -> impl Iterator<Item = (&Labels, &Vec<(f64, f64)>)> {
        self.series.iter().filter(move |(labels, _)| {
            vs.name
                .as_ref()
                .is_none_or(|n| labels.get("__name__") == Some(n))
                && vs.matchers.matchers.iter().all(|m| {
                    let v = labels.get(&m.name).map_or("", String::as_str);
                    m.is_match(v)
                })
                && vs.matchers.or_matchers.is_empty()
        })
    }

    fn eval_expr(&self, e: &Expr, at: f64) -> Val {
        match e {
            Expr::NumberLiteral(n) => Val::Scalar(n.val),
            Expr::Paren(p) => self.eval_expr(&p.expr, at),
            Expr::Unary(u) => match self.eval_expr(&u.expr, at) {
                Val::Scalar(s) => Val::Scalar(-s),
                Val::Vector(v) => {
                    Val::Vector(v.into_iter().map(|(l, x)| (drop_name(l), -x)).collect())
                }
                Val::Matrix(_) => panic!("-range"),
            },
            Expr::VectorSelector(vs) => {
                assert!(
                    vs.offset.is_none() && vs.at.is_none(),
                    "offset/@ unsupported"
                );
                Val::Vector(
                    self.select(vs)
                        .filter_map(|(l, points)| {
                            points
                                .iter()
                                .rev()
                                .find(|(t, _)| *t <= at && *t > at - LOOKBACK)
                                .map(|(_, v)| (l.clone(), *v))
                        })
                        .collect(),
                )
            }
            Expr::MatrixSelector(ms) => {
                let range = ms.range.as_secs_f64();
                Val::Matrix(
                    self.select(&ms.vs)
                        .map(|(l, points)| {
                            let inside: Vec<(f64, f64)> = points
                                .iter()
                                .copied()
                                .filter(|(t, _)| *t <= at && *t > at - range)
                                .collect();
                            (l.clone(), inside)
                        })
                        .filter(|(_, p)| !p.is_empty())
                        .collect(),
                )
            }
            Expr::Call(call) => self.eval_call(call, at),
            Expr::Aggregate(agg) => self.eval_aggregate(agg, at),
            Expr::Binary(b) => self.eval_binary(b, at),
            other => panic!("unsupported in these tests: {other}"),
        }
    }

    fn eval_call(&self, call: &parser::Call, at: f64) -> Val {
        let args: Vec<Val> = call
            .args
            .args
            .iter()
            .map(|a| self.eval_expr(a, at))
            .collect();
        match (call.func.name, args.as_slice()) {
            ("time", []) => Val::Scalar(at),
            ("abs", [Val::Vector(v)]) => Val::Vector(
                v.iter()
                    .map(|(l, x)| (drop_name(l.clone()), x.abs()))
                    .collect(),
            ),
            (f @ ("increase" | "rate"), [Val::Matrix(m)]) => {
                let range = match call.args.args[0].as_ref() {
                    Expr::MatrixSelector(ms) => ms.range.as_secs_f64(),
                    _ => unreachable!(),
                };
                Val::Vector(
                    m.iter()
                        .filter(|(_, p)| p.len() >= 2)
                        .map(|(l, p)| {
                            // Counter resets: a drop starts over from 0.
                            let inc: f64 = p
                                .windows(2)
                                .map(|w| {
                                    if w[1].1 < w[0].1 {
                                        w[1].1
                                    } else {
                                        w[1].1 - w[0].1
                                    }
                                })
                                .sum();
                            let v = if f == "rate" { inc / range } else { inc };
                            (drop_name(l.clone()), v)
                        })
                        .collect(),
                )
            }
            ("histogram_quantile", [Val::Scalar(q), Val::Vector(v)]) => {
                let mut groups: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
                for (l, x) in v {
                    let mut l = drop_name(l.clone());
                    let Some(le) = l.remove("le").and_then(|le| parse_float(&le)) else {
                        continue;
                    };
                    groups.entry(l).or_default().push((le, *x));
                }
                Val::Vector(
                    groups
                        .into_iter()
                        .map(|(l, mut b)| {
                            b.sort_by(|a, c| a.0.total_cmp(&c.0));
                            (l, bucket_quantile(*q, &b))
                        })
                        .collect(),
                )
            }
            (name, args) => panic!("unsupported call {name}({args:?})"),
        }
    }

    fn eval_aggregate(&self, agg: &parser::AggregateExpr, at: f64) -> Val {
        let Val::Vector(v) = self.eval_expr(&agg.expr, at) else {
            panic!("aggregating a non-vector");
        };
        let op = agg.op.to_string();
        let mut groups: BTreeMap<Labels, Vec<f64>> = BTreeMap::new();
        for (l, x) in v {
            let key: Labels = match &agg.modifier {
                Some(LabelModifier::Include(by)) => l
                    .into_iter()
                    .filter(|(k, _)| by.labels.iter().any(|b| b == k))
                    .collect(),
                Some(LabelModifier::Exclude(without)) => drop_name(l)
                    .into_iter()
                    .filter(|(k, _)| !without.labels.iter().any(|b| b == k))
                    .collect(),
                None => Labels::new(),
            };
            groups.entry(key).or_default().push(x);
        }
        Val::Vector(
            groups
                .into_iter()
                .map(|(l, xs)| {
                    let v = match op.as_str() {
                        "sum" => xs.iter().sum(),
                        "max" => xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                        "min" => xs.iter().copied().fold(f64::INFINITY, f64::min),
                        "count" => xs.len() as f64,
                        other => panic!("unsupported aggregation {other}"),
                    };
                    (l, v)
                })
                .collect(),
        )
    }

    fn eval_binary(&self, b: &parser::BinaryExpr, at: f64) -> Val {
        let op = b.op.to_string();
        let return_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
        let matching = b.modifier.as_ref().and_then(|m| m.matching.clone());
        let lhs = self.eval_expr(&b.lhs, at);
        let rhs = self.eval_expr(&b.rhs, at);
        let signature = |l: &Labels| -> Labels {
            let l = drop_name(l.clone());
            match &matching {
                Some(LabelModifier::Include(on)) => l
                    .into_iter()
                    .filter(|(k, _)| on.labels.iter().any(|x| x == k))
                    .collect(),
                Some(LabelModifier::Exclude(ign)) => l
                    .into_iter()
                    .filter(|(k, _)| !ign.labels.iter().any(|x| x == k))
                    .collect(),
                None => l,
            }
        };
        if matches!(op.as_str(), "and" | "or" | "unless") {
            let (Val::Vector(l), Val::Vector(r)) = (lhs, rhs) else {
                panic!("set operator on non-vectors");
            };
            let right: BTreeSet<Labels> = r.iter().map(|(l, _)| signature(l)).collect();
            return Val::Vector(match op.as_str() {
                "and" => l
                    .into_iter()
                    .filter(|(l, _)| right.contains(&signature(l)))
                    .collect(),
                "unless" => l
                    .into_iter()
                    .filter(|(l, _)| !right.contains(&signature(l)))
                    .collect(),
                _ => {
                    let left: BTreeSet<Labels> = l.iter().map(|(l, _)| signature(l)).collect();
                    let mut out = l;
                    out.extend(r.into_iter().filter(|(l, _)| !left.contains(&signature(l))));
                    out
                }
            });
        }
        let comparison = matches!(op.as_str(), "==" | "!=" | ">" | "<" | ">=" | "<=");
        let apply = |x: f64, y: f64| -> Option<f64> {
            if comparison {
                let t = match op.as_str() {
                    "==" => x == y,
                    "!=" => x != y,
                    ">" => x > y,
                    "<" => x < y,
                    ">=" => x >= y,
                    _ => x <= y,
                };
                if return_bool {
                    Some(if t { 1.0 } else { 0.0 })
                } else {
                    t.then_some(x)
                }
            } else {
                Some(match op.as_str() {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    "/" => x / y,
                    other => panic!("unsupported operator {other}"),
                })
            }
        };
        // A filtering comparison keeps the left sample's labels; anything else drops the name.
        let keep = |l: Labels| {
            if comparison && !return_bool {
                l
            } else {
                drop_name(l)
            }
        };
        match (lhs, rhs) {
            (Val::Scalar(x), Val::Scalar(y)) => {
                assert!(!comparison || return_bool, "scalar comparison needs bool");
                Val::Scalar(apply(x, y).expect("arithmetic"))
            }
            (Val::Vector(v), Val::Scalar(y)) => Val::Vector(
                v.into_iter()
                    .filter_map(|(l, x)| apply(x, y).map(|r| (keep(l), r)))
                    .collect(),
            ),
            (Val::Scalar(x), Val::Vector(v)) => Val::Vector(
                v.into_iter()
                    .filter_map(|(l, y)| {
                        // A comparison keeps the vector's value.
                        let r = apply(x, y)?;
                        Some((keep(l), if comparison && !return_bool { y } else { r }))
                    })
                    .collect(),
            ),
            (Val::Vector(l), Val::Vector(r)) => {
                let right: BTreeMap<Labels, f64> =
                    r.iter().map(|(l, v)| (signature(l), *v)).collect();
                Val::Vector(
                    l.into_iter()
                        .filter_map(|(l, x)| {
                            let y = *right.get(&signature(&l))?;
                            apply(x, y).map(|v| (keep(l), v))
                        })
                        .collect(),
                )
            }
            _ => panic!("unsupported operands of {op}"),
        }
    }
}

fn drop_name(mut l: Labels) -> Labels {
    l.remove("__name__");
    l
}

/// Prometheus's `histogram_quantile` over cumulative buckets (`le`, count), ascending: NaN
/// without a `+Inf` bucket or observations; linear interpolation inside the bucket that holds
/// the rank; the highest finite bound when it falls into `+Inf`.
fn bucket_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    if !(0.0..=1.0).contains(&q) {
        return if q < 0.0 {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let Some(&(last_le, total)) = buckets.last() else {
        return f64::NAN;
    };
    if !last_le.is_infinite() || total == 0.0 || buckets.len() < 2 {
        return f64::NAN;
    }
    let rank = q * total;
    let i = buckets
        .iter()
        .position(|(_, c)| *c >= rank)
        .unwrap_or(buckets.len() - 1);
    if i == buckets.len() - 1 {
        return buckets[buckets.len() - 2].0;
    }
    let (upper, count) = buckets[i];
    let (lower, below) = if i == 0 {
        (if upper > 0.0 { 0.0 } else { upper }, 0.0)
    } else {
        buckets[i - 1]
    };
    if i == 0 && upper <= 0.0 {
        return upper;
    }
    lower + (upper - lower) * ((rank - below) / (count - below))
}

/// `(rule, instance)` pairs, as [`Tsdb::rules_firing`] returns them.
pub fn pairs(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs
        .iter()
        .map(|(a, i)| ((*a).to_owned(), (*i).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(texts: &[(f64, &str)]) -> Tsdb {
        let mut db = Tsdb::new();
        for (t, text) in texts {
            db.ingest(*t, &check(text), &[("instance", "a")]);
        }
        db
    }

    const T0: &str =
        "# HELP x_total Things.\n# TYPE x_total counter\nx_total{k=\"a\"} 1\nx_total{k=\"b\"} 5\n";
    const T1: &str =
        "# HELP x_total Things.\n# TYPE x_total counter\nx_total{k=\"a\"} 3\nx_total{k=\"b\"} 5\n";

    #[test]
    fn the_evaluator_follows_prometheus() {
        let db = db(&[(0.0, T0), (60.0, T1)]);
        assert_eq!(
            db.firing("increase(x_total[5m]) > 0", 60.0, "k"),
            ["a".to_owned()].into()
        );
        assert!(
            !db.fires("increase(x_total[5m]) > 0", 0.0),
            "one point is no increase"
        );
        assert_eq!(db.eval("sum by (instance) (x_total)", 60.0)[0].1, 8.0);
        assert!(db.fires("x_total{k=~\"a|b\"} == 5", 60.0));
        assert!(!db.fires("x_total{k=\"a\"} == 5", 60.0));
        assert!(db.fires("time() - x_total > 50", 60.0));
        assert_eq!(
            db.eval("x_total > 2 unless x_total{k=\"b\"}", 60.0).len(),
            1
        );
        assert!(
            !db.fires("x_total", 60.0 + LOOKBACK),
            "stale after the lookback"
        );
        let buckets = [(1.0, 1.0), (2.0, 3.0), (f64::INFINITY, 4.0)];
        assert_eq!(bucket_quantile(0.5, &buckets), 1.5);
        assert_eq!(bucket_quantile(0.99, &buckets), 2.0);
        assert!(bucket_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 0.0)]).is_nan());
    }

    #[test]
    fn the_checks_refuse_what_prometheus_would_not_take_well() {
        let faulty = [
            "x_total 1\n",                         // no HELP/TYPE
            "# TYPE x_total counter\nx_total 1\n", // no HELP
            "# HELP x_total a\n# TYPE x_total counter\nx_total{a=\"1\",a=\"2\"} 1\n",
            "# HELP h a\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", // no +Inf
            "# HELP h a\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n", // empty
            "# HELP s a\n# TYPE s summary\ns{quantile=\"0\"} 0\ns_sum 0\ns_count 0\n",
        ];
        for text in faulty {
            assert!(std::panic::catch_unwind(|| check(text)).is_err(), "{text}");
        }
        let line = parse_line(r#"m{lock="a,b=\"c\"\\",x="y"} 1.5"#).unwrap();
        assert_eq!(line.labels["lock"], "a,b=\"c\"\\");
        assert_eq!(line.value, 1.5);
    }
}
