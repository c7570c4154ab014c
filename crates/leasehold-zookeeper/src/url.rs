//! `zk://` URLs: servers, digest credentials, chroot and store options, read with the core's
//! [`StoreUrl`] parser (the same decoding, user-info checks and unknown/duplicate-parameter
//! errors as every store). Only the comma-separated server list is ZooKeeper's own: the URL is
//! parsed with its first server, and every server is checked here.

use leasehold::store::{Secret, StoreOptions, StoreUrl, UrlError, percent_decode};

use crate::options::{ZooKeeperOptions, check_path};

/// The port used when a server gives none (ZooKeeper's client port).
pub(crate) const DEFAULT_PORT: u16 = 2181;

/// The form of a ZooKeeper URL, for error messages.
const EXPECTED: &str = "zk://[USER@]HOST[:PORT][,HOST[:PORT]…][/CHROOT]";

/// What a ZooKeeper URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `host:port,host:port`, as zookeeper-client takes it.
    pub(crate) servers: String,
    /// The chroot (the URL's path), prepended to the prefix; empty for none.
    pub(crate) chroot: String,
    /// User name and password for ZooKeeper's `digest` scheme, percent-decoded.
    pub(crate) user: Option<(String, Secret)>,
    /// The options, starting from the caller's and overridden by the URL (checked with `validate`).
    pub(crate) options: ZooKeeperOptions,
}

/// Parses `zk://[user:password@]host[:port][,host[:port]…][/chroot][?param=value&…]`.
/// The error says what is wrong and what is allowed; it never contains the password.
pub(crate) fn parse(url: &str, base: ZooKeeperOptions) -> Result<Target, UrlError> {
    let (parsed, servers) = StoreUrl::parse_servers(url, EXPECTED, DEFAULT_PORT, "server")?;
    if !parsed.scheme().eq_ignore_ascii_case("zk") {
        return Err(UrlError::syntax(format!(
            "unsupported scheme; expected {EXPECTED}"
        )));
    }
    let user = parsed.user_password()?;
    let servers = servers.join(",");
    let path = parsed.url().path();
    let chroot = if path.is_empty() || path == "/" {
        String::new()
    } else {
        let decoded = percent_decode(path).ok_or_else(|| {
            UrlError::syntax("the chroot is not valid percent-encoded UTF-8 (write `%` as %25)")
        })?;
        check_path("chroot", &decoded).map_err(|e| UrlError::syntax(e.to_string()))?;
        decoded
    };
    let mut query = parsed.options(&ZooKeeperOptions::known_params())?;
    let options = base.with_query(&mut query)?;
    options.validate()?;
    Ok(Target {
        servers,
        chroot,
        user,
        options,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parsed(url: &str) -> Target {
        parse(url, ZooKeeperOptions::default()).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn error(url: &str) -> String {
        parse(url, ZooKeeperOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn servers_chroot_and_options() {
        let t = parsed(
            "zk://a:2182,b,[::1]:2183/apps/x?request_timeout=300ms&skew=100ms&notifications=off&prefix=/p",
        );
        assert_eq!(t.servers, "a:2182,b:2181,[::1]:2183");
        assert_eq!(t.chroot, "/apps/x");
        assert_eq!(t.options.request_timeout, Duration::from_millis(300));
        assert_eq!(t.options.clock_skew_tolerance, Duration::from_millis(100));
        assert!(!t.options.notifications);
        assert_eq!(t.options.prefix, "/p");
        assert_eq!(parsed("zk://h").chroot, "");
        assert_eq!(parsed("zk://h/").chroot, "");
        let u = parsed("zk://app:p%40ss@h");
        assert_eq!(u.user, Some(("app".to_owned(), Secret::new("p@ss"))));
        let shown = format!("{u:?}");
        assert!(shown.contains("app") && !shown.contains("p@ss"), "{shown}");
    }

    #[test]
    fn bad_urls_say_what_is_allowed_without_the_password() {
        assert!(error("zk://h?prefx=a").contains("unknown parameter \"prefx\""));
        assert!(error("zk://h:0").contains("port must be 1-65535"));
        assert!(error("zk://h,/x").contains("empty server"));
        assert!(error("etcd://h").contains("unsupported scheme"));
        assert!(error("zk://h/a//b").contains("chroot"));
        assert!(error("zk://h?prefix=rel").contains("must start with '/'"));
        assert!(error("zk:/").contains("zk://"));
        let e = error("zk://app:hunter2@h?request_timeout=soon");
        assert!(
            e.contains("request_timeout") && !e.contains("hunter2"),
            "{e}"
        );
    }
}
