//! The limits at the command line: `--slots`, every duration flag and `--node-id` beyond their
//! limit are usage errors (exit 125) naming the flag and the limit — never a panic (exit 101), a
//! huge allocation or a server-side scan — and the largest allowed values work.

mod common;

use common::{Env, code, finish, text, wait_for_file};

/// Runs `leasehold ARGS` and checks a usage error whose message names `flag` and every `needle`.
#[track_caller]
fn usage_error(env: &Env, args: &[&str], flag: &str, needles: &[&str]) {
    let out = env.output(args);
    let err = text(&out.stderr);
    assert_eq!(
        code(&out.status),
        125,
        "{args:?} must be a usage error: {err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(
        err.contains(flag),
        "{args:?}: the message must name {flag}: {err}"
    );
    for needle in needles {
        assert!(
            err.contains(needle),
            "{args:?}: the message must say {needle:?}: {err}"
        );
    }
}

#[test]
fn slots_above_the_limit_are_a_usage_error_on_every_command() {
    let env = Env::new();
    for slots in [
        "1025",
        "4294967295",
        "4294967296",
        "99999999999999999999999",
    ] {
        for args in [
            &["status", "--store", env.store(), "--slots", slots, "a"][..],
            &[
                "release",
                "--store",
                env.store(),
                "--force",
                "--slots",
                slots,
                "a",
            ],
            &[
                "run",
                "--store",
                env.store(),
                "--lock",
                "a",
                "--slots",
                slots,
                "--",
                "true",
            ],
            &[
                "serve",
                "--store",
                env.store(),
                "--lock",
                "a",
                "--slots",
                slots,
            ],
        ] {
            usage_error(&env, args, "--slots", &["1024", "MAX_SLOTS"]);
        }
    }
    usage_error(&env, &["status", "--slots", "0", "a"], "--slots", &["1024"]);
    usage_error(
        &env,
        &["status", "--slots", "many", "a"],
        "--slots",
        &["1024"],
    );

    let out = env.output(&["status", "--store", env.store(), "--slots", "1024", "a"]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1024"), "{}", text(&out.stdout));
    let out = env.output(&[
        "run",
        "--store",
        env.store(),
        "--lock",
        "a",
        "--slots",
        "1024",
        "--",
        "true",
    ]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
}

#[test]
fn durations_beyond_the_maximum_are_a_usage_error_not_a_panic() {
    let env = Env::new();
    for flag in ["--wait", "--lease", "--min-lease", "--kill-grace"] {
        for value in [
            "10000000000000000000s",
            "10000000000000000000s10000000000000000000s",
            "36501d",
            "PT1000000000000H",
        ] {
            usage_error(
                &env,
                &[
                    "run",
                    "--store",
                    env.store(),
                    "--lock",
                    "a",
                    flag,
                    value,
                    "--",
                    "true",
                ],
                flag,
                &["36500d", "MAX_DURATION"],
            );
        }
    }
}

#[test]
fn the_largest_durations_run() {
    let env = Env::new();
    let out = env.output(&[
        "run",
        "--store",
        env.store(),
        "--lock",
        "a",
        "--wait",
        "36500d",
        "--lease",
        "36500d",
        "--min-lease",
        "36500d",
        "--kill-grace",
        "12166d",
        "--",
        "true",
    ]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
}

/// The lease is lost while the command runs, under the largest `--kill-grace` a 1 s lease takes
/// (a third of it): SIGTERM is sent, SIGKILL is bounded by the lease's deadline; the command dies
/// of SIGTERM and `run` exits 124. The largest duration as a grace does not fit a 1 s lease:
/// refused before anything runs.
#[test]
fn losing_the_lease_under_the_largest_kill_grace_stops_the_command() {
    let env = Env::new();
    let started = env.path("started");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; exec sleep 30",
        started.display()
    );
    let holder = env.spawn(&[
        "run",
        "--lock",
        "grace",
        "--lease",
        "1s",
        "--kill-grace",
        "36500d",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let refused = finish(holder);
    assert_eq!(code(&refused.status), 125, "{}", text(&refused.stderr));
    assert!(!started.exists());
    let holder = env.spawn(&[
        "run",
        "--lock",
        "grace",
        "--lease",
        "1s",
        "--kill-grace",
        "333ms",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_for_file(&started);
    let released = env.output(&["release", "--force", "grace"]);
    assert_eq!(code(&released.status), 0, "{}", text(&released.stderr));
    let out = finish(holder);
    let err = text(&out.stderr);
    assert_eq!(code(&out.status), 124, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn node_ids_are_checked_at_the_flag() {
    let env = Env::new();
    let long = "n".repeat(256);
    usage_error(
        &env,
        &[
            "run",
            "--store",
            env.store(),
            "--lock",
            "a",
            "--node-id",
            &long,
            "--",
            "true",
        ],
        "--node-id",
        &["256", "255", "MAX_NODE_ID_LEN"],
    );
    for bad in ["", " ", "a\nb", "a\tb"] {
        usage_error(
            &env,
            &[
                "run",
                "--store",
                env.store(),
                "--lock",
                "a",
                "--node-id",
                bad,
                "--",
                "true",
            ],
            "--node-id",
            &["control characters"],
        );
    }
    // The longest allowed id is recorded whole, on the SQLite store.
    let longest = "é".repeat(127) + "x";
    assert_eq!(longest.len(), 255);
    let owner_file = env.path("owner");
    let script = format!(
        "printf %s \"$LEASEHOLD_OWNER\" > '{}'",
        owner_file.display()
    );
    let out = env.output(&[
        "run",
        "--lock",
        "a",
        "--node-id",
        &longest,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    assert_eq!(wait_for_file(&owner_file), longest);
}
