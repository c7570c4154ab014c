//! The stable leader across OS processes, on SQLite, PostgreSQL, MySQL/MariaDB and Redis: two
//! processes run `Elector::lead` on one lock; SIGKILL the leader and the follower leads within
//! the lease plus one retry interval; the `leadership` stream, watched from this test process,
//! reports both leaders in order with growing fences; stopping the survivor frees the lock.
//!
//! The test re-runs its own binary as the children (`child_leader`, ignored when run directly).
//! This crate already depends on every store, so one test reaches them all.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // test helpers

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use leasehold::{
    CancellationToken, ElectionOptions, Elector, LeaseStore, RetryPolicy, TermEnd,
    lead::Leadership, store::StoreRegistry,
};
use tokio::time::{Instant, timeout};

/// The children's lease: short, so the takeover is quick, yet renewed comfortably (every 1/3).
const LEASE: Duration = Duration::from_secs(2);
/// How often the test's stream asks the store.
const POLL: Duration = Duration::from_millis(100);
/// Generous bounds for a small, shared machine.
const PATIENCE: Duration = Duration::from_secs(30);
const SLACK: Duration = Duration::from_millis(1500);

fn registry() -> StoreRegistry {
    StoreRegistry::new()
        .with(leasehold_sql::SqlOpener::new())
        .with(leasehold_redis::RedisOpener::new())
}

fn options(node: &str) -> ElectionOptions {
    ElectionOptions::builder()
        .node_id(node)
        .lease(LEASE)
        .build()
        .expect("valid options")
}

/// One contender process: leads `LEASEHOLD_LEAD_LOCK` until its stdin closes, appending
/// `elected <node> <fence>` to `LEASEHOLD_LEAD_LOG` at the start of each term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by the *_sigkill_hands_leadership_on tests as a child process"]
async fn child_leader() {
    let var = |name: &str| std::env::var(name).ok();
    let (Some(url), Some(lock), Some(node), Some(log)) = (
        var("LEASEHOLD_LEAD_URL"),
        var("LEASEHOLD_LEAD_LOCK"),
        var("LEASEHOLD_LEAD_NODE"),
        var("LEASEHOLD_LEAD_LOG"),
    ) else {
        return;
    };
    let store = registry().open(&url).await.expect("open the store");
    let elector = Elector::with_options(store, options(&node));
    let stop = CancellationToken::new();
    {
        // The parent closes our stdin to stop us gracefully.
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            stop.cancel();
        });
    }
    append(Path::new(&log), &format!("started {node}"));
    elector
        .lead(lock.as_str(), stop, |ctx| {
            append(Path::new(&log), &format!("elected {node} {}", ctx.fence()));
            async move {
                ctx.lost().await;
                TermEnd::Resign
            }
        })
        .await
        .expect("lead");
    append(Path::new(&log), &format!("stopped {node}"));
}

fn append(log: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

fn spawn_child(url: &str, lock: &str, node: &str, log: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_leader",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LEASEHOLD_LEAD_URL", url)
        .env("LEASEHOLD_LEAD_LOCK", lock)
        .env("LEASEHOLD_LEAD_NODE", node)
        .env("LEASEHOLD_LEAD_LOG", log)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn a child process")
}

/// Kills a child on drop, so a failing assertion leaves no process behind.
struct Reaper(Option<Child>);

impl Reaper {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("running")
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn wait_for_line(log: &Path, line: &str) {
    let start = Instant::now();
    loop {
        if std::fs::read_to_string(log).is_ok_and(|t| t.lines().any(|l| l == line)) {
            return;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{line:?} did not appear in the log"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The next change whose leader is `node` (or free, if `node` is `None`); every change seen on
/// the way is pushed to `seen`.
async fn next_change(
    changes: &mut leasehold::lead::LeadershipStream,
    node: Option<&str>,
    within: Duration,
    seen: &mut Vec<Leadership>,
) -> Leadership {
    let deadline = Instant::now() + within;
    loop {
        let change = timeout(deadline - Instant::now(), changes.next())
            .await
            .unwrap_or_else(|_| {
                panic!("no leadership change to {node:?} within {within:?}: {seen:?}")
            })
            .expect("the stream never ends");
        seen.push(change.clone());
        if change.owner() == node {
            return change;
        }
    }
}

async fn sigkill_hands_leadership_on(url: &str) {
    let lock = format!(
        "lead-processes-{}",
        &leasehold::store::Token::random().to_hex()[..12]
    );
    let log: PathBuf = std::env::temp_dir().join(format!("leasehold-{lock}.log"));
    let store: Arc<dyn LeaseStore> = registry().open(url).await.expect("open the store");
    let observer = Elector::with_options(Arc::clone(&store), options("observer"));
    let mut changes = observer.leadership_every(lock.as_str(), POLL).unwrap();
    let mut seen = Vec::new();
    let first = next_change(&mut changes, None, PATIENCE, &mut seen).await;
    assert!(first.is_free(), "a new lock is free: {first:?}");

    let mut a = Reaper(Some(spawn_child(url, &lock, "proc-a", &log)));
    let led_a = next_change(&mut changes, Some("proc-a"), PATIENCE, &mut seen).await;
    let mut b = Reaper(Some(spawn_child(url, &lock, "proc-b", &log)));
    wait_for_line(&log, "started proc-b").await;
    // proc-b is contending (it polls at least every retry interval): a term of proc-a long
    // enough for several of its attempts, and renewals keep proc-a leading.
    tokio::time::sleep(LEASE).await;
    let still = store.state(&led_a.lock, 1).await.unwrap();
    assert_eq!(
        still.holder().map(|h| (h.owner.as_str(), h.fence)),
        Some(("proc-a", led_a.fence().unwrap())),
        "one renewed term while proc-a lives"
    );

    a.child().kill().expect("SIGKILL proc-a");
    let killed = Instant::now();
    let _ = a.child().wait();
    a.0 = None;
    let led_b = next_change(&mut changes, Some("proc-b"), PATIENCE, &mut seen).await;
    let took = killed.elapsed();
    eprintln!(
        "{url_kind}: proc-b led {took:?} after proc-a was killed",
        url_kind = url.split(':').next().unwrap_or("?")
    );
    // The longest pause of either store default (the options set none).
    assert!(ElectionOptions::default().retry().is_none());
    let retry = RetryPolicy::default()
        .max()
        .max(RetryPolicy::polling().max());
    assert!(
        took <= LEASE + retry + POLL + SLACK,
        "proc-b led {took:?} after the kill; lease {LEASE:?} + retry {retry:?}"
    );
    assert!(
        took >= LEASE / 2,
        "proc-b led {took:?} after the kill, before proc-a's lease could have ended"
    );
    let leaders: Vec<_> = seen
        .iter()
        .filter_map(|c| Some((c.owner()?.to_owned(), c.fence()?)))
        .collect();
    assert_eq!(
        leaders.iter().map(|(o, _)| o.as_str()).collect::<Vec<_>>(),
        ["proc-a", "proc-b"],
        "{seen:?}"
    );
    assert!(leaders[1].1 > leaders[0].1, "fences grow: {leaders:?}");
    assert!(led_b.since() >= led_a.since());

    // The store can show proc-b's grant before proc-b has read the answer: wait for its term
    // to begin, with the fence the stream reported.
    wait_for_line(&log, &format!("elected proc-b {}", leaders[1].1)).await;

    // Stopping the survivor gracefully frees the lock, and the stream says so.
    drop(b.child().stdin.take());
    let status = b.child().wait().unwrap();
    b.0 = None;
    assert!(status.success(), "proc-b stopped cleanly: {status:?}");
    let freed = next_change(&mut changes, None, Duration::from_secs(5), &mut seen).await;
    assert!(freed.is_free());
    assert!(
        store.state(&led_a.lock, 1).await.unwrap().is_free(),
        "no lease left behind"
    );

    let text = std::fs::read_to_string(&log).unwrap();
    let elected: Vec<&str> = text.lines().filter(|l| l.starts_with("elected")).collect();
    assert_eq!(
        elected,
        [
            format!("elected proc-a {}", leaders[0].1),
            format!("elected proc-b {}", leaders[1].1)
        ],
        "{text}"
    );
    assert!(text.lines().any(|l| l == "stopped proc-b"), "{text}");
    let _ = std::fs::remove_file(log);
}

/// The URL in `var`; unset outside CI, the conventional local server if it answers on `port`,
/// else `None` (skip). With `CI` set the server must be given.
fn server_url(var: &str, port: u16, conventional: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set; scripts/test starts the server and sets it")
        }
        _ => {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok() {
                Some(conventional.to_owned())
            } else {
                eprintln!("skipping: {var} is not set and nothing answers on {addr}");
                None
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sigkill_hands_leadership_on() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("leases.db").display());
    sigkill_hands_leadership_on(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sigkill_hands_leadership_on() {
    if let Some(url) = server_url(
        "LEASEHOLD_TEST_POSTGRES_URL",
        5432,
        "postgres://postgres@127.0.0.1:5432/test",
    ) {
        sigkill_hands_leadership_on(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sigkill_hands_leadership_on() {
    if let Some(url) = server_url("LEASEHOLD_TEST_REDIS_URL", 6379, "redis://127.0.0.1:6379") {
        sigkill_hands_leadership_on(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_sigkill_hands_leadership_on() {
    if let Some(url) = server_url(
        "LEASEHOLD_TEST_MYSQL_URL",
        3306,
        "mysql://root@127.0.0.1:3306/test",
    ) {
        sigkill_hands_leadership_on(&url).await;
    }
}
