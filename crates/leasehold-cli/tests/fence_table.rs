//! `leasehold fence init` and `leasehold fence sql`: the fence table a script's SQL writes use,
//! created by the CLI or by the database's own client from the printed DDL, on SQLite,
//! PostgreSQL and MariaDB; then a lower fence is refused by the database itself.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{Env, code, server, text, unique};

/// Runs `client args…` with `input` on stdin; its exit code and stderr.
fn client(program: &str, args: &[&str], input: &str) -> (i32, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e} (scripts/test installs it)"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (code(&out.status), text(&out.stderr))
}

/// The database refuses to lower a fence, and accepts a higher one.
fn lowering_is_refused(program: &str, args: &[&str], table: &str) {
    let insert = format!("INSERT INTO {table} (resource, fence, updated_at) VALUES ('job', 5, 0);");
    assert_eq!(
        client(program, args, &insert).0,
        0,
        "{program}: first write"
    );
    let (c, err) = client(
        program,
        args,
        &format!("UPDATE {table} SET fence = 4 WHERE resource = 'job';"),
    );
    assert_ne!(c, 0, "{program}: a lower fence must be refused");
    assert!(err.contains("leasehold: stale fence"), "{program}: {err}");
    let (c, err) = client(
        program,
        args,
        &format!("UPDATE {table} SET fence = 6 WHERE resource = 'job';"),
    );
    assert_eq!(c, 0, "{program}: a higher fence lands: {err}");
}

/// `fence sql` piped into the client creates the table (twice where the DDL allows it), then
/// `fence init` on the same table finds it ready.
fn ddl_then_init(env: &Env, store: &str, program: &str, args: &[&str]) {
    let table = unique("lh_fences").replace('-', "_");
    let out = env.output(&["fence", "sql", "--store", store, "--table", &table]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    let ddl = text(&out.stdout);
    assert!(ddl.contains(&table), "{ddl}");
    // PostgreSQL's and SQLite's DDL can run again; MySQL has no portable CREATE TRIGGER IF NOT
    // EXISTS (8.0.29+ only), so there a second run fails and `init` is the idempotent way.
    let runs = if program == "mariadb" { 1 } else { 2 };
    for _ in 0..runs {
        let (c, err) = client(program, args, &ddl);
        assert_eq!(
            c, 0,
            "{program} runs the printed DDL as it is: {err}\n{ddl}"
        );
    }
    let out = env.output(&["fence", "init", "--store", store, "--table", &table]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("and its trigger are ready"),
        "{}",
        text(&out.stdout)
    );
    lowering_is_refused(program, args, &table);
}

#[test]
fn sqlite_fence_table_from_the_cli_and_from_sqlite3() {
    let env = Env::new();
    let file = env.path("app.db");
    let store = format!("sqlite://{}", file.display());
    // init alone, twice: idempotent.
    for _ in 0..2 {
        let out = env.output(&["fence", "init", "--store", &store]);
        assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    }
    lowering_is_refused("sqlite3", &[file.to_str().unwrap()], "leasehold_fences");
    let other = env.path("other.db");
    ddl_then_init(
        &env,
        &format!("sqlite://{}", other.display()),
        "sqlite3",
        &[other.to_str().unwrap()],
    );
}

#[test]
fn postgres_fence_table_from_the_cli_and_from_psql() {
    let Some(url) = server("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    let env = Env::new();
    ddl_then_init(
        &env,
        &url,
        "psql",
        &[&url, "-X", "-q", "-v", "ON_ERROR_STOP=1"],
    );
}

#[test]
fn mariadb_fence_table_from_the_cli_and_from_mariadb() {
    let Some(url) = server("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    // mysql://root@127.0.0.1:3306/test, as scripts/test sets it.
    let rest = url.split("://").nth(1).unwrap();
    let (user_host, db) = rest.split_once('/').unwrap();
    let (user, host_port) = user_host.split_once('@').unwrap();
    let (host, port) = host_port.split_once(':').unwrap_or((host_port, "3306"));
    assert!(
        !user.contains(':'),
        "the test server has no password: {url}"
    );
    let args = ["--batch", "-h", host, "-P", port, "-u", user, db];
    let env = Env::new();
    ddl_then_init(&env, &url, "mariadb", &args);
}

#[test]
fn fence_tables_are_for_sql_stores_and_table_names_are_checked() {
    let env = Env::new();
    for (args, needle) in [
        (
            vec!["fence", "init", "--store", "redis://127.0.0.1:6379"],
            "fence tables live in SQL databases",
        ),
        (
            vec!["fence", "sql", "--store", "memory:"],
            "fence tables live in SQL databases",
        ),
        (
            vec![
                "fence",
                "sql",
                "--store",
                "sqlite:///tmp/x.db",
                "--table",
                "f; DROP TABLE x",
            ],
            "--table",
        ),
    ] {
        let out = env.output(&args);
        assert_eq!(code(&out.status), 125, "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
