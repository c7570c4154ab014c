//! Where the test etcd is, factories of store clients for the testkit, and private etcd members
//! for tests that kill, restart and cut them off.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::LeaseStore;
use leasehold_etcd::{EtcdOptions, EtcdStore};

/// The variable naming the test cluster's client endpoints (`host:port[,host:port…]`).
pub const ENDPOINTS_VAR: &str = "LEASEHOLD_TEST_ETCD_ENDPOINTS";
/// Used when the variable is unset outside CI: the member scripts/test starts.
pub const DEFAULT_ENDPOINTS: &str = "127.0.0.1:23790";

/// The endpoints, or `None` to skip. With `CI` set they must be given; without it, a local member
/// on 23790 is used when it answers.
pub fn endpoints() -> Option<String> {
    match std::env::var(ENDPOINTS_VAR) {
        Ok(e) if !e.is_empty() => Some(e),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{ENDPOINTS_VAR} is not set; scripts/test starts etcd and sets it")
        }
        _ => {
            if std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::from(([127, 0, 0, 1], 23790)),
                Duration::from_millis(500),
            )
            .is_ok()
            {
                Some(DEFAULT_ENDPOINTS.to_owned())
            } else {
                eprintln!(
                    "skipping: {ENDPOINTS_VAR} is not set and nothing answers on 127.0.0.1:23790 (run scripts/test to start etcd)"
                );
                None
            }
        }
    }
}

/// The store URL for `endpoints`.
pub fn url(endpoints: &str) -> String {
    format!("etcd://{endpoints}")
}

/// Options with a key prefix unique to this test run, so runs sharing a server never meet.
pub fn options() -> EtcdOptions {
    EtcdOptions::default()
        .with_prefix(format!(
            "lhtest-{}",
            &leasehold::store::Token::random().to_hex()[..12]
        ))
        .with_request_timeout(Duration::from_secs(2))
        .with_connect_timeout(Duration::from_secs(2))
}

/// A factory making a new store (its own connections) per call, as separate nodes would have;
/// all share one key prefix.
pub fn factory_with(
    url: String,
    options: EtcdOptions,
) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    move || {
        Arc::new(EtcdStore::connect_lazy(&url, options.clone()).expect("valid URL"))
            as Arc<dyn LeaseStore>
    }
}

/// [`factory_with`] the default test options.
pub fn factory(url: String) -> impl Fn() -> Arc<dyn LeaseStore> + Send + Sync {
    factory_with(url, options())
}

/// True if the `etcd` binary is installed; otherwise skips (or fails under CI).
pub fn etcd_installed() -> bool {
    let installed = std::process::Command::new("etcd")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        if std::env::var_os("CI").is_some() {
            panic!("etcd is not installed; scripts/test installs Debian's etcd-server");
        }
        eprintln!("skipping: etcd is not installed (apt-get install etcd-server)");
    }
    installed
}

/// A free loopback port for a server this test starts (see [`leasehold_testkit::free_port`]).
pub fn free_port() -> u16 {
    leasehold_testkit::free_port().expect("a free port")
}
