//! `leasehold run --shards N`: one command per owned shard, with the built binary and a
//! temporary SQLite store shared by several leasehold processes.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{Env, PATIENCE, Stderr, code, exit_status, signal};

/// A shard's command: writes `start SHARD NODE FENCE SHARDS` to the journal, `stop SHARD NODE`
/// on SIGTERM, and `gone SHARD NODE` when its leasehold is gone (SIGKILL stops nothing: the
/// command watches for it itself, as a real one would use the fence).
fn worker(journal: &Path, node: &str) -> String {
    let journal = common::shell_quote(&journal.display().to_string());
    format!(
        "echo \"start $LEASEHOLD_SHARD {node} $LEASEHOLD_FENCE $LEASEHOLD_SHARDS $LEASEHOLD_LOCK\" \
         >> {journal}; \
         trap 'echo \"stop $LEASEHOLD_SHARD {node}\" >> {journal}; exit 0' TERM; \
         while kill -0 $PPID 2>/dev/null; do sleep 0.1; done; \
         echo \"gone $LEASEHOLD_SHARD {node}\" >> {journal}"
    )
}

fn join_set(env: &Env, set: &str, node: &str, journal: &Path) -> Child {
    let script = worker(journal, node);
    env.spawn(&[
        "run",
        "--shards",
        "8",
        "--lock",
        set,
        "--lease",
        "2s",
        "--node-id",
        node,
        "--",
        "sh",
        "-c",
        &script,
    ])
}

/// One line of the journal.
#[derive(Debug, Clone)]
struct Line {
    start: bool,
    shard: u32,
    node: String,
    fence: u64,
}

fn journal(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let shard = words.get(1)?.parse().ok()?;
            let node = (*words.get(2)?).to_owned();
            let fence = words.get(3).and_then(|f| f.parse().ok()).unwrap_or(0);
            Some(Line {
                start: words.first() == Some(&"start"),
                shard,
                node,
                fence,
            })
        })
        .collect()
}

/// Which node runs each shard's command now, from the journal; panics if a shard ever started
/// while another command of it still ran, or if a shard's fence did not grow across moves.
fn running(path: &Path) -> BTreeMap<u32, String> {
    let mut now: BTreeMap<u32, String> = BTreeMap::new();
    let mut fences: BTreeMap<u32, (String, u64)> = BTreeMap::new();
    for line in journal(path) {
        if line.start {
            if let Some(other) = now.get(&line.shard) {
                panic!(
                    "shard {} started on {} while {other} still ran it:\n{}",
                    line.shard,
                    line.node,
                    std::fs::read_to_string(path).unwrap_or_default()
                );
            }
            if let Some((node, fence)) = fences.get(&line.shard)
                && *node != line.node
            {
                assert!(
                    line.fence > *fence,
                    "shard {} moved to {} with fence {} after {fence}",
                    line.shard,
                    line.node,
                    line.fence
                );
            }
            fences.insert(line.shard, (line.node.clone(), line.fence));
            now.insert(line.shard, line.node);
        } else {
            now.remove(&line.shard);
        }
    }
    now
}

fn count(now: &BTreeMap<u32, String>, node: &str) -> usize {
    now.values().filter(|n| *n == node).count()
}

/// Waits until `done` holds for the shards running now.
fn wait_until(path: &Path, what: &str, done: impl Fn(&BTreeMap<u32, String>) -> bool) -> Duration {
    let start = Instant::now();
    loop {
        let now = running(path);
        if done(&now) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{what}: not within {PATIENCE:?}; running {now:?}"
        );
        sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_processes_split_the_shards_and_the_survivor_of_a_kill_takes_them_all() {
    let env = Env::new();
    let path = env.path("journal");
    let mut a = join_set(&env, "split", "a", &path);
    let a_err = Stderr::watch(&mut a);
    wait_until(&path, "a alone runs all 8", |now| count(now, "a") == 8);
    let first = journal(&path);
    assert!(
        first.iter().all(|l| !l.start || l.fence > 0),
        "every command gets its fence: {first:?}"
    );
    let env_line = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        env_line.contains(" 8 split.shard-"),
        "LEASEHOLD_SHARDS and LEASEHOLD_LOCK: {env_line}"
    );

    let mut b = join_set(&env, "split", "b", &path);
    let b_err = Stderr::watch(&mut b);
    wait_until(&path, "a and b run 4 each", |now| {
        count(now, "a") == 4 && count(now, "b") == 4
    });
    // The 4 shards handed over were stopped gracefully (SIGTERM) on a.
    let stops = journal(&path)
        .iter()
        .filter(|l| !l.start && l.node == "a")
        .count();
    assert!(stops >= 4, "a stopped its handed-over commands: {stops}");

    signal(a.id(), "KILL");
    let killed = Instant::now();
    let _ = exit_status(a);
    wait_until(&path, "b takes over a's shards", |now| count(now, "b") == 8);
    let took = killed.elapsed();
    // a's leases must expire first (2 s lease, renewed every third of it).
    assert!(
        took >= Duration::from_millis(1200),
        "taken over before a's leases could expire: {took:?}\n{}",
        a_err.text()
    );

    signal(b.id(), "TERM");
    let status = exit_status(b);
    assert_eq!(code(&status), 143, "stderr of b: {}", b_err.text());
    let after = running(&path);
    assert!(
        after.is_empty(),
        "SIGTERM stops every command: {after:?}\n{}",
        b_err.text()
    );
    assert!(
        b_err.text().contains("leaving partition set split"),
        "{}",
        b_err.text()
    );
}

#[test]
fn a_command_that_exits_is_started_again_while_the_shard_is_owned() {
    let env = Env::new();
    let path = env.path("runs");
    let journal = common::shell_quote(&path.display().to_string());
    let script = format!("echo \"start $LEASEHOLD_SHARD x $LEASEHOLD_FENCE\" >> {journal}; exit 3");
    let mut run = env.spawn(&[
        "run", "--shards", "1", "--lock", "again", "--lease", "3s", "--", "sh", "-c", &script,
    ]);
    let err = Stderr::watch(&mut run);
    err.wait_for("starting it again in 1.0s");
    err.wait_for("starting it again in 2.0s");
    let runs = std::fs::read_to_string(&path).unwrap_or_default();
    let fences: Vec<&str> = runs
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    assert!(fences.len() >= 2, "started again: {runs}");
    assert!(
        fences.windows(2).all(|w| w[0] == w[1]),
        "the same lease, the same fence: {runs}"
    );
    assert!(err.text().contains("exit code 3"), "{}", err.text());
    signal(run.id(), "INT");
    assert_eq!(code(&exit_status(run)), 130, "{}", err.text());
}

#[test]
fn bad_shard_flags_are_refused_before_anything_runs() {
    let env = Env::new();
    let cases: [(&[&str], &str); 5] = [
        (&["--shards", "0"], "0 shards"),
        (&["--shards", "65537"], "at most 65536 shards"),
        (&["--shards", "4", "--once-per", "1m"], "--once-per"),
        (&["--shards", "4", "--slots", "2"], "--slots"),
        (&["--shards", "4", "--wait", "5s"], "--wait"),
    ];
    for (flags, needle) in cases {
        let mut args = vec!["run", "--lock", "bad"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "touch", "ran"]);
        let out = env.output(&args);
        let err = common::text(&out.stderr);
        assert_eq!(code(&out.status), 125, "{flags:?}: {err}");
        assert!(err.contains(needle), "{flags:?}: {needle:?} in {err}");
    }
    let out = env.output(&[
        "run",
        "--lock",
        "no-such",
        "--shards",
        "2",
        "--",
        "/no/such/command",
    ]);
    assert_eq!(
        code(&out.status),
        127,
        "a command that cannot start stops the whole run: {}",
        common::text(&out.stderr)
    );
}

#[test]
fn a_shard_freed_under_its_command_stops_it_and_is_taken_again_with_a_higher_fence() {
    let env = Env::new();
    let path = env.path("journal");
    let mut run = join_set(&env, "freed", "solo", &path);
    let err = Stderr::watch(&mut run);
    wait_until(&path, "solo runs all 8", |now| count(now, "solo") == 8);
    let fence_before = journal(&path)
        .iter()
        .find(|l| l.start && l.shard == 3)
        .map(|l| l.fence)
        .expect("shard 3 started");

    let out = env.output(&["release", "--force", "freed.shard-3"]);
    assert_eq!(code(&out.status), 0, "{}", common::text(&out.stderr));
    err.wait_for("lease on lock freed.shard-3 lost");
    // Stopped, then started again under a new lease once the set takes the shard back.
    wait_until(&path, "shard 3 runs again", |_| {
        let lines = journal(&path);
        let stopped = lines.iter().any(|l| !l.start && l.shard == 3);
        let again = lines.iter().filter(|l| l.start && l.shard == 3).count() == 2;
        stopped && again
    });
    let fence_after = journal(&path)
        .iter()
        .rev()
        .find(|l| l.start && l.shard == 3)
        .map(|l| l.fence)
        .expect("shard 3 started again");
    assert!(
        fence_after > fence_before,
        "{fence_before} then {fence_after}"
    );
    assert_eq!(running(&path).len(), 8);

    signal(run.id(), "TERM");
    assert_eq!(code(&exit_status(run)), 143, "{}", err.text());
}
