//! `leasehold run --metrics-file`: node_exporter textfile metrics after each run, read back with
//! a Prometheus text-format parser.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)] // tests

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Env, code, finish, text, wait_for_file};
use prometheus_parse::{Scrape, Value};

/// Every sample of the file by metric name, each checked to be a documented gauge labelled with
/// `lock`, and every sample line understood by the parser.
fn read_metrics(path: &Path, lock: &str) -> HashMap<String, f64> {
    let content = std::fs::read_to_string(path).expect("the metrics file");
    let scrape = Scrape::parse(content.lines().map(|l| Ok(l.to_owned()))).expect("parses");
    let sample_lines = content
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(scrape.samples.len(), sample_lines, "{content}");
    let mut values = HashMap::new();
    for sample in scrape.samples {
        let Value::Gauge(value) = sample.value else {
            panic!("{} is not a gauge: {content}", sample.metric);
        };
        assert!(
            scrape.docs.contains_key(&sample.metric),
            "no HELP for {}",
            sample.metric
        );
        assert_eq!(sample.labels.get("lock"), Some(lock), "{content}");
        assert!(
            values.insert(sample.metric.clone(), value).is_none(),
            "{} twice",
            sample.metric
        );
    }
    values
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Item 6 of issue 19: (a) a success, (b) a skip while another node holds the lock, (c) a
/// failure; the last success time survives (b) and (c).
#[test]
fn the_metrics_file_records_success_skip_and_failure() {
    let env = Env::new();
    let file = env.path("job.prom");
    let file_arg = file.to_str().unwrap();
    let metric = |values: &HashMap<String, f64>, name: &str| -> f64 {
        *values
            .get(&format!("leasehold_job_{name}"))
            .unwrap_or_else(|| panic!("no leasehold_job_{name} in {values:?}"))
    };

    // (a) success
    let before = now();
    let out = env.output(&[
        "run",
        "--lock",
        "job",
        "--metrics-file",
        file_arg,
        "--",
        "sh",
        "-c",
        "echo $LEASEHOLD_FENCE",
    ]);
    let after = now();
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    let fence_a: f64 = text(&out.stdout).trim().parse().unwrap();
    let a = read_metrics(&file, "job");
    assert_eq!(metric(&a, "exit_code"), 0.0);
    assert_eq!(metric(&a, "ran"), 1.0);
    assert_eq!(metric(&a, "skipped"), 0.0);
    assert_eq!(metric(&a, "fence"), fence_a);
    let success_a = metric(&a, "last_success_timestamp_seconds");
    let start_a = metric(&a, "start_timestamp_seconds");
    let last_run_a = metric(&a, "last_run_timestamp_seconds");
    assert!(before - 0.01 <= start_a && start_a <= last_run_a, "{a:?}");
    assert!(
        last_run_a <= after + 0.01 && success_a == last_run_a,
        "{a:?}"
    );
    assert!(metric(&a, "last_duration_seconds") >= 0.0);
    // Nothing but the file is left in the directory (the temporary file was renamed).
    assert_eq!(
        std::fs::read_dir(env.path(""))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("job.prom")
            })
            .count(),
        1
    );

    // (b) skipped: another run holds the lock
    let fence_file = env.path("fence");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; exec sleep 30",
        fence_file.display()
    );
    let holder = env.spawn(&[
        "run", "--lock", "job", "--lease", "2s", "--", "sh", "-c", &script,
    ]);
    wait_for_file(&fence_file);
    let out = env.output(&[
        "run",
        "--lock",
        "job",
        "--skipped-exit-code",
        "3",
        "--metrics-file",
        file_arg,
        "--",
        "true",
    ]);
    assert_eq!(code(&out.status), 3, "{}", text(&out.stderr));
    let b = read_metrics(&file, "job");
    assert_eq!(metric(&b, "skipped"), 1.0);
    assert_eq!(metric(&b, "ran"), 0.0);
    assert_eq!(metric(&b, "exit_code"), 3.0);
    assert!(
        !b.contains_key("leasehold_job_fence"),
        "no lease, no fence: {b:?}"
    );
    assert_eq!(metric(&b, "last_success_timestamp_seconds"), success_a);
    assert!(metric(&b, "last_run_timestamp_seconds") > last_run_a);
    assert_eq!(code(&env.output(&["release", "--force", "job"]).status), 0);
    assert_eq!(code(&finish(holder).status), 124);

    // (c) failure
    let out = env.output(&[
        "run",
        "--lock",
        "job",
        "--metrics-file",
        file_arg,
        "--",
        "sh",
        "-c",
        "echo $LEASEHOLD_FENCE; exit 4",
    ]);
    assert_eq!(code(&out.status), 4, "{}", text(&out.stderr));
    let fence_c: f64 = text(&out.stdout).trim().parse().unwrap();
    let c = read_metrics(&file, "job");
    assert_eq!(metric(&c, "exit_code"), 4.0);
    assert_eq!(metric(&c, "ran"), 1.0);
    assert_eq!(metric(&c, "skipped"), 0.0);
    assert_eq!(metric(&c, "fence"), fence_c);
    assert!(fence_c > fence_a);
    assert_eq!(metric(&c, "last_success_timestamp_seconds"), success_a);
}

/// A file in a directory that does not exist is a usage error before anything runs.
#[test]
fn a_metrics_file_in_a_missing_directory_is_a_usage_error() {
    let env = Env::new();
    let ran = env.path("ran");
    let missing = env.path("no-such-dir/job.prom");
    let out = env.output(&[
        "run",
        "--lock",
        "job",
        "--metrics-file",
        missing.to_str().unwrap(),
        "--",
        "touch",
        ran.to_str().unwrap(),
    ]);
    assert_eq!(code(&out.status), 125);
    let err = text(&out.stderr);
    assert!(
        err.contains("--metrics-file") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!ran.exists(), "the command must not run");
    assert!(env.holders("job").is_empty());
}
