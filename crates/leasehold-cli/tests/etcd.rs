//! `leasehold run`, `status` and `release --force` end to end against a real etcd
//! (`LEASEHOLD_TEST_ETCD_ENDPOINTS`, set by scripts/test; skipped locally when unset and nothing
//! answers on 127.0.0.1:23790, a failure under CI).

#![allow(clippy::expect_used, clippy::print_stderr)]

mod common;

use std::time::Duration;

use common::{Env, code, finish, text, wait_for_file};

fn etcd_url() -> Option<String> {
    let endpoints = match std::env::var("LEASEHOLD_TEST_ETCD_ENDPOINTS") {
        Ok(e) if !e.is_empty() => e,
        _ if std::env::var_os("CI").is_some() => {
            panic!("LEASEHOLD_TEST_ETCD_ENDPOINTS is not set; scripts/test starts etcd and sets it")
        }
        _ => {
            let up = std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::from(([127, 0, 0, 1], 23790)),
                Duration::from_millis(500),
            )
            .is_ok();
            if !up {
                eprintln!("skipping: no etcd (run scripts/test)");
                return None;
            }
            "127.0.0.1:23790".to_owned()
        }
    };
    let prefix = format!(
        "lhcli-{}",
        &leasehold::store::Token::random().to_hex()[..12]
    );
    Some(format!("etcd://{endpoints}/{prefix}"))
}

#[test]
fn run_status_and_forced_release_work_on_etcd() {
    let Some(store) = etcd_url() else { return };
    let env = Env::new();
    let fence_file = env.path("fence");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; sleep 30",
        fence_file.display()
    );
    let holder = env.spawn(&[
        "run", "--store", &store, "--lock", "x", "--lease", "2s", "--", "sh", "-c", &script,
    ]);
    let fence: u64 = wait_for_file(&fence_file).trim().parse().expect("a fence");
    assert!(fence > 0);

    let status = env.output(&["status", "--store", &store, "--json", "x"]);
    assert_eq!(code(&status.status), 0, "{}", text(&status.stderr));
    let shown = text(&status.stdout);
    assert!(
        shown.contains(&fence.to_string()),
        "status must show the holder's fence {fence}: {shown}"
    );

    let skipped = env.output(&[
        "run",
        "--store",
        &store,
        "--lock",
        "x",
        "--skipped-exit-code",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(code(&skipped.status), 3, "{}", text(&skipped.stderr));

    let released = env.output(&["release", "--store", &store, "--force", "x"]);
    assert_eq!(code(&released.status), 0, "{}", text(&released.stderr));
    let out = finish(holder);
    assert_ne!(
        code(&out.status),
        0,
        "the holder must stop once its lease is gone"
    );

    let ran = env.output(&["run", "--store", &store, "--lock", "x", "--", "true"]);
    assert_eq!(code(&ran.status), 0, "{}", text(&ran.stderr));
}
