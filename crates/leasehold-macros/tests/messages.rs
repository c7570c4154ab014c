//! The attribute refuses a literal with the message leasehold gives at run time for the same
//! input: each error of the UI tests' expected output (`tests/ui/fail/*.stderr`, which trybuild
//! holds to the compiler's actual output) is the run-time error's message, in order.

use std::time::Duration;

use leasehold::{ElectionOptions, LockName, parse_duration};

/// The messages of the `error: …` lines of one expected output.
fn compile_errors(case: &str) -> Vec<String> {
    let path = format!("{}/tests/ui/fail/{case}.stderr", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter_map(|line| line.strip_prefix("error: "))
        .map(str::to_owned)
        .collect()
}

/// The message of a refusal; a panic naming the input when it was accepted.
fn refusal<T: std::fmt::Debug, E: std::fmt::Display>(input: &str, got: Result<T, E>) -> String {
    match got {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{input:?} must be refused, got {v:?}"),
    }
}

fn name_error(name: &str) -> String {
    refusal(name, LockName::new(name))
}

fn duration_error(text: &str) -> String {
    refusal(text, parse_duration(text))
}

fn options_error(lease: &str, min_lease: &str, auto_extend: bool) -> String {
    let read = |text| match parse_duration(text) {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let built = ElectionOptions::builder()
        .lease(read(lease))
        .min_lease(read(min_lease))
        .auto_extend(auto_extend)
        .build();
    refusal(&format!("{lease} {min_lease} {auto_extend}"), built)
}

#[test]
fn lock_names_are_refused_as_lock_name_new_refuses_them() {
    let long = "a".repeat(256);
    let names = [
        "billing nightly",
        "reports/../daily",
        "a..b",
        "-report",
        "",
        long.as_str(),
    ];
    let run_time: Vec<String> = names.into_iter().map(name_error).collect();
    assert_eq!(compile_errors("bad_lock_name"), run_time);
}

#[test]
fn durations_are_refused_as_parse_duration_refuses_them() {
    let texts = ["30x", "-1s", "36501d", "30", "PT5X", "", "ms", "1.2.3s"];
    let run_time: Vec<String> = texts.into_iter().map(duration_error).collect();
    assert_eq!(compile_errors("bad_duration"), run_time);
}

#[test]
fn lease_bounds_are_refused_as_the_options_builder_refuses_them() {
    let run_time = vec![
        options_error("0", "0", false),
        options_error("50ms", "0", true),
        options_error("1s", "2s", false),
        options_error("0.5ms", "0", false),
    ];
    assert_eq!(compile_errors("lease_rules"), run_time);
    assert!(run_time[3].ends_with(&format!("got {:?}", Duration::from_micros(500))));
}

#[test]
fn every_refused_literal_of_one_attribute_is_reported() {
    let run_time = vec![
        name_error("a b"),
        duration_error("5x"),
        duration_error("-1s"),
        options_error("0", "0", false),
    ];
    assert_eq!(compile_errors("every_literal"), run_time);
}
