//! The manual's shell snippets ("Fencing your writes" → "From the shell"), read from
//! `docs/leasehold-sql.md` and run as they are by the real clients — `psql`, `mariadb`,
//! `sqlite3` — with the environment `leasehold run` gives: a stale fence must exit non-zero
//! and change nothing; a current (or the same) fence must land its writes.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stderr)]

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::fence::{exec, scalar, unique};
use leasehold::fence::{FenceRegister, ResourceName};
use leasehold_sql::{SqlFences, SqlStore};

/// The `sh` block after `<!-- fence-snippet: NAME -->` in the manual.
fn snippet(name: &str) -> String {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/leasehold-sql.md"
    ))
    .expect("the manual");
    let marker = format!("<!-- fence-snippet: {name} -->");
    let after = page
        .split_once(&marker)
        .unwrap_or_else(|| panic!("{marker} is missing from the manual"))
        .1;
    let body = after
        .trim_start()
        .strip_prefix("```sh\n")
        .unwrap_or_else(|| panic!("{marker} must be followed by a ```sh block"));
    body.split_once("\n```")
        .expect("the block ends")
        .0
        .to_owned()
        + "\n"
}

/// Whether `client` is installed; under `CI` a missing client fails the run.
fn have(client: &str) -> bool {
    let found = Command::new(client).arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{client} is not installed; scripts/test installs it"
        );
        eprintln!("skipping: {client} is not installed");
    }
    found
}

/// Runs the snippet with `bash` and the given environment; true when it exited 0.
fn run(script: &str, env: &HashMap<&str, String>) -> bool {
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .envs(env)
        .output()
        .expect("run bash");
    if !out.status.success() {
        eprintln!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.status.success()
}

/// Against `url` (the database of the fence table): a fence of 100 is accepted by the Rust API
/// first, then the snippet runs with 99 (refused), 101 (lands), 101 again (lands) and 100
/// (refused).
async fn snippets_fence_writes(url: &str, client: &str, mut env: HashMap<&'static str, String>) {
    let store = SqlStore::connect_with(url, common::options())
        .await
        .unwrap();
    let fences = SqlFences::new(&store);
    fences.migrate().await.unwrap();
    exec(
        store.pool(),
        "CREATE TABLE IF NOT EXISTS export_runs (job VARCHAR(255) NOT NULL, fence BIGINT NOT NULL)",
    )
    .await
    .unwrap();
    let lock = unique("shell");
    let resource = ResourceName::new(&lock).unwrap();
    assert!(fences.admit(&resource, 100).await.unwrap().is_admitted());
    let script = snippet(client);
    env.insert("LEASEHOLD_LOCK", lock.clone());
    env.insert("LEASEHOLD_SLOT", "0".to_owned());
    let runs = |fence: u64| {
        format!("SELECT COUNT(*) FROM export_runs WHERE job = '{lock}' AND fence = {fence}")
    };
    for (fence, lands, highest) in [
        (99, false, 100),
        (101, true, 101),
        (101, true, 101),
        (100, false, 101),
    ] {
        env.insert("LEASEHOLD_FENCE", fence.to_string());
        assert_eq!(run(&script, &env), lands, "{client} with fence {fence}");
        assert_eq!(
            fences.highest(&resource).await.unwrap(),
            Some(highest),
            "{client} with fence {fence}"
        );
        let written = scalar(store.pool(), &runs(fence)).await.unwrap();
        assert_eq!(written > 0, lands, "{client} with fence {fence}: its write");
    }
    assert_eq!(fences.highest(&resource).await.unwrap(), Some(101));
    assert_eq!(scalar(store.pool(), &runs(99)).await, Some(0));
    assert_eq!(scalar(store.pool(), &runs(101)).await, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_snippet() {
    let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    if have("psql") {
        let env = HashMap::from([("DATABASE_URL", url.clone())]);
        snippets_fence_writes(&url, "psql", env).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_snippet() {
    let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    if !have("mariadb") {
        return;
    }
    // The connection settings in a `~/.my.cnf`, as the manual says, in a home of its own.
    let (cnf, db) = my_cnf(&url);
    let home = std::env::temp_dir().join(format!("leasehold-my-cnf-{}", unique("home")));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".my.cnf"), cnf).unwrap();
    let env = HashMap::from([("HOME", home.display().to_string()), ("DB_NAME", db)]);
    snippets_fence_writes(&url, "mariadb", env).await;
    let _ = std::fs::remove_dir_all(home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite3_snippet() {
    if !have("sqlite3") {
        return;
    }
    let url = common::sqlite_url("shell");
    let file = url
        .strip_prefix("sqlite://")
        .expect("a file URL")
        .to_owned();
    let env = HashMap::from([("DB_FILE", file)]);
    snippets_fence_writes(&url, "sqlite3", env).await;
}

/// A `[client]` option file for `mysql://user[:password]@host[:port]/db`, and the database.
fn my_cnf(url: &str) -> (String, String) {
    let rest = url.split_once("://").expect("a URL").1;
    let (auth, rest) = rest.rsplit_once('@').unwrap_or(("", rest));
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let (host_port, db) = rest.split_once('/').expect("a database in the URL");
    let db = db.split('?').next().unwrap_or_default().to_owned();
    let (host, port) = host_port.split_once(':').unwrap_or((host_port, "3306"));
    let mut cnf = format!("[client]\nhost={host}\nport={port}\n");
    if !user.is_empty() {
        cnf.push_str(&format!("user={user}\n"));
    }
    if !password.is_empty() {
        cnf.push_str(&format!("password={password}\n"));
    }
    (cnf, db)
}
