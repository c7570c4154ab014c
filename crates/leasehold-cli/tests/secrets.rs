//! Store passwords never reach leasehold's output, and an unreachable store fails fast with its
//! own exit code.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, code, finish, text};

const URL: &str = "postgres://u:hunter2@127.0.0.1:1/x";

#[test]
fn an_unreachable_store_fails_with_75_and_no_password() {
    let env = Env::new();
    let started = Instant::now();
    // Started together: each waits out the SQL store's connect timeout.
    let runs: Vec<_> = [
        &["run", "--store", URL, "--lock", "x", "--", "true"][..],
        &["status", "--store", URL, "x"],
        &["release", "--force", "--store", URL, "x"],
    ]
    .into_iter()
    .map(|args| {
        let child = env
            .cmd(args)
            .env("LEASEHOLD_LOG", "trace")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        (args, child)
    })
    .collect();
    for (args, child) in runs {
        let out = finish(child);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(code(&out.status), 75, "{args:?}: {stderr}");
        assert!(stderr.contains("store unavailable"), "{stderr}");
        assert!(stderr.contains("u:***@127.0.0.1:1"), "{stderr}");
        assert!(
            !stdout.contains("hunter2") && !stderr.contains("hunter2"),
            "{stdout}\n{stderr}"
        );
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_password_in_the_environment_is_not_shown_by_help_or_errors() {
    let env = Env::new();
    for args in [
        &["run", "--help"][..],
        &["--help"],
        &["run", "--lock", "x"],
        &["status", "bad name"],
        &["status", URL],
        // Not understood, with a password that a quote or a space would cut short.
        &["status", "postgres://u:hun'ter2@127.0.0.1:1/x"],
        &["status", "postgres://u:hun ter2@127.0.0.1:1/x"],
        &[
            "status",
            "--store=postgres://u:hun\"ter2@127.0.0.1:1/x",
            "--bogus",
        ],
    ] {
        let out = env
            .cmd(args)
            .env("LEASEHOLD_STORE", URL)
            .output()
            .expect("run");
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            !all.contains("hunter2") && !all.contains("ter2"),
            "{args:?}: {all}"
        );
    }
    let out = env
        .cmd(&["status", "--json", "x"])
        .env("LEASEHOLD_STORE", "nosuch://u:hunter2@h/x")
        .output()
        .expect("run");
    assert_eq!(code(&out.status), 125);
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("hunter2") && stderr.contains("u:***@h"),
        "{stderr}"
    );
}

/// Every RFC 3986 gen-delim and sub-delim, `%` (alone and as an escape), space and non-ASCII.
const RESERVED: &[&str] = &[
    ":", "/", "?", "#", "[", "]", "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=", "%",
    "%41", " ", "é", "密",
];

/// Runs `status --json x` with each store URL at once (from a scratch directory, as an
/// `sqlite:` URL names a file) and checks that none of `Hunt`, `Er2` reaches stdout or stderr,
/// even at trace level, and that each fails as a usage error or an unreachable store (or, for
/// an `sqlite:` URL naming an odd but valid file name, succeeds).
fn assert_secret_never_printed(env: &Env, urls: &[String]) {
    let scratch = env.path("scratch");
    std::fs::create_dir_all(&scratch).unwrap_or_else(|e| panic!("scratch dir: {e}"));
    let children: Vec<_> = urls
        .iter()
        .map(|url| {
            let child = env
                .cmd(&["status", "--json", "--store", url, "x"])
                .current_dir(&scratch)
                .env("LEASEHOLD_LOG", "trace")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("spawn: {e}"));
            (url, child)
        })
        .collect();
    for (url, child) in children {
        let out = finish(child);
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            [0, 75, 125].contains(&code(&out.status)),
            "{url}: {}: {all}",
            code(&out.status)
        );
        assert!(
            !all.contains("Hunt") && !all.contains("Er2"),
            "{url} leaked: {all}"
        );
        assert!(all.contains("***"), "{url}: {all}");
    }
}

#[test]
fn passwords_with_any_reserved_character_are_hidden_for_every_scheme() {
    let env = Env::new();
    for scheme in [
        "postgres",
        "postgresql",
        "mysql",
        "mariadb",
        "redis",
        "rediss",
        "valkey",
        "etcd",
        "etcds",
        "sqlite",
        "nats",
        "nosuch",
    ] {
        let mut urls = Vec::new();
        for c in RESERVED {
            let password = format!("Hunt{c}Er2");
            urls.push(format!("{scheme}://app:{password}@127.0.0.1:1/x"));
            urls.push(format!("{scheme}://us{c}er:{password}@127.0.0.1:1/x"));
            urls.push(format!("{scheme}://:{password}@127.0.0.1:1"));
            // In a query value `&` and `#` end the value unless encoded.
            if !matches!(*c, "&" | "#") {
                urls.push(format!("{scheme}://127.0.0.1:1/x?password={password}"));
            }
        }
        // Several delimiters at once, so that a parser reading the password as host, path,
        // query and fragment could quote a piece of it as a key.
        for password in [
            "Hunt@ss/w?Er2#x",
            "Hunt/x?y#Er2@z",
            "Hunt:x@y/z?Er2=1#w",
            "Hunt%zz Er2",
        ] {
            urls.push(format!("{scheme}://app:{password}@127.0.0.1:1/x"));
            urls.push(format!(
                "{scheme}://app:{password}@127.0.0.1:1/x?sslmode=disable"
            ));
        }
        assert_secret_never_printed(&env, &urls);
    }
}

#[test]
fn a_nats_token_before_the_host_is_hidden() {
    let env = Env::new();
    // (With a `:` it is a user name and a password, which the test above covers.)
    let urls: Vec<String> = RESERVED
        .iter()
        .filter(|c| **c != ":")
        .map(|c| format!("nats://Hunt{c}Er2@127.0.0.1:1/x"))
        .chain(["nats://HuntEr2@127.0.0.1:1".to_owned()])
        .collect();
    assert_secret_never_printed(&env, &urls);
}

#[test]
fn credentials_in_a_dynamodb_endpoint_are_hidden() {
    let env = Env::new();
    let mut urls = Vec::new();
    for c in RESERVED {
        let password = format!("Hunt{c}Er2");
        urls.push(format!(
            "dynamodb://tab?endpoint=http://id:{password}@127.0.0.1:1&region=us-east-1\
             &max_attempts=1&attempt_timeout=300ms"
        ));
        urls.push(format!(
            "dynamodb://tab?endpoint=http://id:{password}@127.0.0.1:1&bad=1"
        ));
        // In a plain query value `&` and `#` end the value unless encoded.
        if !matches!(*c, "&" | "#") {
            urls.push(format!(
                "dynamodb://tab?region=eu&aws_secret_access_key={password}"
            ));
        }
    }
    urls.push(
        "dynamodb://tab?endpoint=http%3A%2F%2Fid%3AHunt%2FEr2%40127.0.0.1%3A1&max_attempts=x"
            .to_owned(),
    );
    assert_secret_never_printed(&env, &urls);
}

#[test]
fn unknown_store_parameters_are_refused_before_connecting() {
    let env = Env::new();
    for (url, typo, known) in [
        ("redis://127.0.0.1:1?prefx=jobs", "prefx", "prefix"),
        (
            "redis+unix:///tmp/nosuch.sock?prefx=jobs",
            "prefx",
            "prefix",
        ),
        (
            "postgres://127.0.0.1:1/x?sslmdoe=require",
            "sslmdoe",
            "sslmode",
        ),
        ("mysql://root@127.0.0.1:1/x?prefix=a", "prefix", "ssl-mode"),
        (
            "mariadb://root@127.0.0.1:1/x?sslmode=a&sslmode=b",
            "sslmode",
            "more than once",
        ),
        ("sqlite:///nonexistent-dir/x.db?mdoe=ro", "mdoe", "mode"),
        (
            "dynamodb://tab?regoin=eu&endpoint=http://127.0.0.1:1",
            "regoin",
            "region",
        ),
        (
            "etcd://127.0.0.1:1,127.0.0.1:2/jobs?prefx=jobs",
            "prefx",
            "prefix",
        ),
        (
            "etcd://127.0.0.1:1?notifications=on&notifications=off",
            "notifications",
            "more than once",
        ),
    ] {
        let started = Instant::now();
        let out = env.output(&["status", "--store", url, "x"]);
        let stderr = text(&out.stderr);
        assert_eq!(code(&out.status), 125, "{url}: {stderr}");
        assert!(
            stderr.contains("invalid store URL") && stderr.contains(typo) && stderr.contains(known),
            "{url}: {stderr}"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{url}");
    }
}

#[test]
fn a_network_store_url_without_a_host_is_refused() {
    let env = Env::new();
    for url in [
        "postgres:/",
        "postgres:",
        "postgresql://",
        "postgres:///x",
        "mysql://",
        "mariadb:/x",
        "redis://?prefix=x",
        "redis:",
        "rediss:///0",
        "redis+unix://",
        "etcd://",
        "etcd:",
        "etcds:///jobs",
        "etcd://?prefix=x",
    ] {
        for command in [
            &["status", "--store", url, "x"][..],
            &["run", "--store", url, "--lock", "x", "--", "true"],
        ] {
            let out = env.output(command);
            let stderr = text(&out.stderr);
            assert_eq!(code(&out.status), 125, "{url}: {stderr}");
            assert!(
                stderr.contains("invalid store URL")
                    && stderr.contains("required")
                    && !stderr.contains("***"),
                "{url}: {stderr}"
            );
        }
    }
    for url in ["sqlite:", "sqlite://"] {
        let out = env.output(&["status", "--store", url, "x"]);
        let stderr = text(&out.stderr);
        assert_eq!(code(&out.status), 125, "{url}: {stderr}");
        assert!(
            stderr.contains("sqlite:///ABSOLUTE/PATH.db"),
            "{url}: {stderr}"
        );
    }
}

/// A password that is also a key of the JSON document (`holders`): `status --json` hides it
/// where it stands as data (the store's URL) and leaves the document's keys alone, so the
/// output still parses into the documented shape. PostgreSQL on trust authentication accepts
/// any password.
#[test]
fn a_password_equal_to_a_json_key_leaves_the_document_intact() {
    let Some(url) = common::server("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    let with_password = url.replacen("://postgres@", "://postgres:holders@", 1);
    assert_ne!(
        with_password, url,
        "the test URL names the postgres user: {url}"
    );
    let env = Env::new();
    let out = env
        .cmd(&["status", "--json", "--store", &with_password, "x"])
        .output()
        .unwrap_or_else(|e| panic!("run: {e}"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(code(&out.status), 0, "{stderr}");
    let doc: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(
        doc["locks"][0]["holders"].is_array(),
        "the key survives: {stdout}"
    );
    let store = doc["store"].as_str().unwrap_or_default();
    assert!(
        store.contains("postgres:***@") && !store.contains("holders"),
        "{stdout}"
    );
}
