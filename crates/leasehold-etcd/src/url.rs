//! `etcd://` and `etcds://` URLs: endpoints, credentials, prefix and store options, read with the
//! core's [`StoreUrl`](leasehold::store::StoreUrl) parser (the same decoding, user-info checks and
//! unknown/duplicate-parameter errors as every store). Only the comma-separated endpoint list is
//! etcd's own: the URL is parsed with its first endpoint, and every endpoint is checked here.

use leasehold::store::{Secret, StoreOptions, StoreUrl, UrlError, UrlOptions, percent_decode};

use crate::options::EtcdOptions;

/// The port used when an endpoint gives none (etcd's client port).
pub(crate) const DEFAULT_PORT: u16 = 2379;

/// The options a URL may set only with `etcds://`.
const TLS_PARAMS: [&str; 3] = ["ca_file", "cert_file", "key_file"];

/// The form of an etcd URL, for error messages.
/// (Like the other stores' forms, it shows no `user:password@`: a message quoting one would be
/// redacted.)
const EXPECTED: &str = "etcd://[USER@]HOST[:PORT][,HOST[:PORT]…][/PREFIX] (etcds:// for TLS)";

/// What an etcd URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Endpoints as etcd-client takes them: `http://host:port` or `https://host:port`.
    pub(crate) endpoints: Vec<String>,
    /// True for `etcds://`.
    pub(crate) tls: bool,
    /// User name and password, percent-decoded.
    pub(crate) user: Option<(String, Secret)>,
    /// The options, starting from the caller's and overridden by the URL (checked with
    /// [`EtcdOptions::validate`]).
    pub(crate) options: EtcdOptions,
}

/// Parses `etcd://[user:password@]host[:port][,host[:port]…][/prefix][?param=value&…]`.
/// The error says what is wrong and what is allowed; it never contains the password.
pub(crate) fn parse(url: &str, base: EtcdOptions) -> Result<Target, UrlError> {
    let (parsed, hosts) = StoreUrl::parse_servers(url, EXPECTED, DEFAULT_PORT, "endpoint")?;
    let tls = match parsed.scheme().to_ascii_lowercase().as_str() {
        "etcd" => false,
        "etcds" => true,
        _ => {
            return Err(UrlError::syntax(format!(
                "unsupported scheme; expected {EXPECTED}"
            )));
        }
    };
    let user = parsed.user_password()?;
    let http = if tls { "https" } else { "http" };
    let endpoints = hosts.iter().map(|e| format!("{http}://{e}")).collect();
    let mut options = base;
    let path = parsed.url().path().trim_start_matches('/');
    if !path.is_empty() {
        let prefix = percent_decode(path).ok_or_else(|| {
            UrlError::syntax("the prefix is not valid percent-encoded UTF-8 (write `%` as %25)")
        })?;
        options = options.with_prefix(prefix);
    }
    let mut query = parsed.options(&EtcdOptions::known_params())?;
    let options = store_options(&mut query, options, tls)?;
    options.validate()?;
    Ok(Target {
        endpoints,
        tls,
        user,
        options,
    })
}

/// Sets the options the query gives ([`EtcdOptionKey`](crate::EtcdOptionKey)); TLS files only
/// with `etcds://`.
fn store_options(
    query: &mut UrlOptions,
    options: EtcdOptions,
    tls: bool,
) -> Result<EtcdOptions, UrlError> {
    if !tls {
        for key in TLS_PARAMS {
            if let Some(path) = query.text(key)? {
                return Err(UrlError::BadValue {
                    key: key.to_owned(),
                    value: path,
                    expected: "an etcds:// URL: TLS files apply to TLS connections only".to_owned(),
                });
            }
        }
    }
    options.with_query(query)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parsed(url: &str) -> Target {
        parse(url, EtcdOptions::default()).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn error(url: &str) -> String {
        parse(url, EtcdOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn endpoints_credentials_prefix_and_options() {
        let t = parsed(
            "etcds://app:p%40ss@a.example:2380,10.0.0.2,[::1]:23790/jobs/x?request_timeout=250ms&notifications=off&ca_file=/ca.pem",
        );
        assert!(t.tls);
        assert_eq!(
            t.endpoints,
            [
                "https://a.example:2380",
                "https://10.0.0.2:2379",
                "https://[::1]:23790"
            ]
        );
        assert_eq!(t.user, Some(("app".to_owned(), Secret::new("p@ss"))));
        let shown = format!("{t:?}");
        assert!(shown.contains("app") && !shown.contains("p@ss"), "{shown}");
        assert_eq!(t.options.prefix(), "jobs/x");
        assert_eq!(t.options.request_timeout(), Duration::from_millis(250));
        assert!(!t.options.notifications());
        assert_eq!(t.options.ca_file(), Some(std::path::Path::new("/ca.pem")));
        let t = parsed("etcd://127.0.0.1:2379");
        assert_eq!(t.endpoints, ["http://127.0.0.1:2379"]);
        assert_eq!(t.options.prefix(), "leasehold");
        assert_eq!(t.user, None);
    }

    #[test]
    fn bad_urls_say_what_is_allowed() {
        let e = error("etcd://h:2379/p?color=blue");
        assert!(
            e.contains("\"color\"") && e.contains("request_timeout"),
            "{e}"
        );
        assert!(error("etcd://h?connect_timeout=soon").contains("connect_timeout"));
        assert!(error("etcd://h?notifications=maybe").contains("true or false"));
        assert!(error("etcd://h:99999").contains("port"));
        assert!(error("etcd://h:2379,g:99999").contains("1-65535"));
        assert!(error("etcd://h,g:x").contains("1-65535"));
        assert!(error("etcd://h:2379,,g").contains("empty endpoint"));
        assert!(error("etcd://h?ca_file=/x").contains("etcds://"));
        assert!(error("http://h").contains("etcd://"));
        assert!(error("etcd:").contains("a host is required"));
        assert!(error("etcd://h/a//b").contains("//"));
        let e = error("etcd://u:sec%ZZret@h");
        assert!(!e.contains("sec"), "the password must not leak: {e}");
    }

    /// The core parser's rules hold for etcd URLs too, with several endpoints.
    #[test]
    fn the_core_url_rules_apply_with_several_endpoints() {
        let e = error("etcd://a:1,b:2/p?prefix=x&prefix=y");
        assert!(e.contains("more than once"), "{e}");
        let e = error("etcd://a:1,b:2?prefx=x");
        assert!(
            e.contains("unknown parameter \"prefx\"") && e.contains("known parameters are prefix"),
            "{e}"
        );
        assert!(error("etcd://a,b?prefix=%zz").contains("percent-encoded"));
        assert!(error("etcd://").contains("a host is required"));
        assert!(error("etcd:///jobs").contains("a host is required"));
        assert!(error("etcd://:pw@h").contains("needs a user name"));
        // A password with an unencoded delimiter is refused without quoting any of it.
        for url in [
            "etcd://u:pa/sswordX@a:1,b:2/p",
            "etcd://u:pa?sswordX@a:1,b:2",
            "etcd://u:pa#sswordX@a,b",
        ] {
            let e = error(url);
            assert!(!e.is_empty(), "{url} must be refused");
            assert!(!e.contains("sswordX"), "the password must not leak: {e}");
        }
        let t = parsed("etcd://u%3Aser:p%2Fw%3F@a:1,b:2/team%2Fjobs?notifications=no");
        assert_eq!(t.user, Some(("u:ser".to_owned(), Secret::new("p/w?"))));
        assert_eq!(t.endpoints, ["http://a:1", "http://b:2"]);
        assert_eq!(t.options.prefix(), "team/jobs");
        assert!(!t.options.notifications());
    }
}
