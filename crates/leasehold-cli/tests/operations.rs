//! `leasehold status` and `leasehold release --force` end to end.

mod common;

use std::time::{Duration, Instant};

use common::{Env, code, finish, text, wait_for_file};

#[test]
fn status_shows_the_holder_while_a_run_is_in_progress_and_nothing_after() {
    let env = Env::new();
    let fence_file = env.path("fence");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; sleep 3",
        fence_file.display()
    );
    let holder = env.spawn(&[
        "run",
        "--lock",
        "report",
        "--node-id",
        "node-\"a\"",
        "--lease",
        "30s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let fence: u64 = wait_for_file(&fence_file).parse().expect("fence");

    let status = env.status("report");
    let lock = &status["locks"][0];
    assert_eq!(lock["lock"], "report");
    assert_eq!(
        (
            lock["slots"].as_u64(),
            lock["used"].as_u64(),
            lock["available"].as_u64()
        ),
        (None, Some(1), None),
        "without --slots every holder is shown, and the group size is not known"
    );
    let counted = env.output(&["status", "--json", "--slots", "1", "report"]);
    let counted: serde_json::Value = serde_json::from_slice(&counted.stdout).expect("json");
    assert_eq!(
        (
            counted["locks"][0]["slots"].as_u64(),
            counted["locks"][0]["available"].as_u64()
        ),
        (Some(1), Some(0))
    );
    let holder_json = &lock["holders"][0];
    assert_eq!(
        holder_json["owner"], "node-\"a\"",
        "owner is escaped properly in JSON"
    );
    assert_eq!(holder_json["fence"].as_u64(), Some(fence));
    assert_eq!(holder_json["slot"], 0);
    let left = holder_json["time_left_ms"].as_u64().expect("time left");
    assert!(left > 10_000 && left <= 30_000, "time left {left}");
    assert!(
        holder_json["expires_at"]
            .as_str()
            .is_some_and(|s| s.ends_with('Z'))
    );

    let text_out = env.output(&["status", "report", "other"]);
    let plain = text(&text_out.stdout);
    assert!(plain.contains("report: held (1 holder)"), "{plain}");
    assert!(plain.contains(&format!("fence {fence}")), "{plain}");
    assert!(plain.contains("other: free"), "{plain}");

    assert_eq!(code(&finish(holder).status), 0);
    assert!(env.holders("report").is_empty(), "released after the run");
}

#[test]
fn release_force_frees_the_lock_and_the_holder_stops_its_command() {
    let env = Env::new();
    let fence_file = env.path("fence");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; exec sleep 30",
        fence_file.display()
    );
    let holder = env.spawn(&[
        "run",
        "--lock",
        "stuck",
        "--lease",
        "2s",
        "--on-lost",
        "kill",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let fence = wait_for_file(&fence_file);

    let refused = env.output(&["release", "stuck"]);
    assert_eq!(code(&refused.status), 125);
    assert!(
        text(&refused.stderr).contains("--force"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(env.holders("stuck").len(), 1, "released without --force");

    let released = env.output(&["release", "--force", "stuck"]);
    assert_eq!(code(&released.status), 0, "{}", text(&released.stderr));
    let said = text(&released.stdout);
    assert!(
        said.contains("released slot 0") && said.contains(&format!("fence {fence}")),
        "{said}"
    );

    let stopped_from = Instant::now();
    let out = finish(holder);
    assert_eq!(code(&out.status), 124, "holder: {}", text(&out.stderr));
    assert!(stopped_from.elapsed() < Duration::from_secs(15));
    assert!(text(&out.stderr).contains("lost"), "{}", text(&out.stderr));

    let again = env.output(&["release", "--force", "stuck"]);
    assert_eq!(code(&again.status), 0);
    assert!(
        text(&again.stdout).contains("nothing was held"),
        "{}",
        text(&again.stdout)
    );
}

#[test]
fn on_lost_continue_lets_the_command_finish() {
    let env = Env::new();
    let fence_file = env.path("fence");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; sleep 2; exit 6",
        fence_file.display()
    );
    let holder = env.spawn(&[
        "run",
        "--lock",
        "cont",
        "--lease",
        "1s",
        "--on-lost",
        "continue",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_for_file(&fence_file);
    let released = env.output(&["release", "--force", "cont"]);
    assert_eq!(code(&released.status), 0);
    let out = finish(holder);
    assert_eq!(code(&out.status), 6, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("keeps running"),
        "{}",
        text(&out.stderr)
    );
}
