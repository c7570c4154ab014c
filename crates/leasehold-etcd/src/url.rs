//! `etcd://` and `etcds://` URLs: endpoints, credentials, prefix and store options.

use leasehold::parse_duration;

use crate::options::EtcdOptions;

/// The port used when an endpoint gives none (etcd's client port).
pub(crate) const DEFAULT_PORT: u16 = 2379;

/// The query parameters a URL may carry.
pub(crate) const KNOWN_PARAMS: &[&str] = &[
    "prefix",
    "request_timeout",
    "connect_timeout",
    "notifications",
    "ca_file",
    "cert_file",
    "key_file",
];

/// What an etcd URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Endpoints as etcd-client takes them: `http://host:port` or `https://host:port`.
    pub(crate) endpoints: Vec<String>,
    /// True for `etcds://`.
    pub(crate) tls: bool,
    /// User name and password, percent-decoded.
    pub(crate) user: Option<(String, String)>,
    /// The options, starting from the caller's and overridden by the URL.
    pub(crate) options: EtcdOptions,
}

/// Parses `etcd://[user:password@]host[:port][,host[:port]…][/prefix][?param=value&…]`.
/// The error says what is wrong and what is allowed; it never contains the password.
pub(crate) fn parse(url: &str, base: EtcdOptions) -> Result<Target, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| "expected etcd://host:port[,host:port…]/prefix or etcds://…".to_owned())?;
    let tls = match scheme.to_ascii_lowercase().as_str() {
        "etcd" => false,
        "etcds" => true,
        other => {
            return Err(format!(
                "unsupported scheme {other:?}; use etcd:// or etcds://"
            ));
        }
    };
    let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    let (rest, query) = rest
        .split_once('?')
        .map_or((rest, None), |(r, q)| (r, Some(q)));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, hosts) = match authority.rsplit_once('@') {
        Some((info, hosts)) => {
            let (name, password) = info.split_once(':').unwrap_or((info, ""));
            let name = decode(name).map_err(|e| format!("user name: {e}"))?;
            let password =
                decode(password).map_err(|_| "password: invalid percent-encoding".to_owned())?;
            if name.is_empty() {
                return Err("a password needs a user name (etcd://user:password@host)".to_owned());
            }
            (Some((name, password)), hosts)
        }
        None => (None, authority),
    };
    let scheme = if tls { "https" } else { "http" };
    let mut endpoints = Vec::new();
    for host in hosts.split(',') {
        endpoints.push(format!("{scheme}://{}", endpoint(host)?));
    }
    let mut options = base;
    if !path.is_empty() {
        options = options.prefix(decode(path).map_err(|e| format!("prefix: {e}"))?);
    }
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(raw).map_err(|e| format!("{key}: {e}"))?;
        let duration =
            || parse_duration(&value).map_err(|e| format!("{key}={value:?}: {e} (e.g. 500ms, 2s)"));
        match key {
            "prefix" => options = options.prefix(value.clone()),
            "request_timeout" => options = options.request_timeout(duration()?),
            "connect_timeout" => options = options.connect_timeout(duration()?),
            "notifications" => {
                options = options.notifications(match value.to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" | "yes" => true,
                    "off" | "false" | "0" | "no" => false,
                    _ => return Err(format!("notifications={value:?}: use on or off")),
                });
            }
            "ca_file" | "cert_file" | "key_file" if !tls => {
                return Err(format!("{key} needs TLS: use etcds://"));
            }
            "ca_file" => options.ca_file = Some(value.into()),
            "cert_file" => options.cert_file = Some(value.into()),
            "key_file" => options.key_file = Some(value.into()),
            _ => {
                return Err(format!(
                    "unknown parameter {key:?}; known parameters: {}",
                    KNOWN_PARAMS.join(", ")
                ));
            }
        }
    }
    options.validate()?;
    Ok(Target {
        endpoints,
        tls,
        user,
        options,
    })
}

/// Checks one `host[:port]` (or `[v6]:port`) and adds the default port.
fn endpoint(host: &str) -> Result<String, String> {
    if host.is_empty() {
        return Err("empty endpoint; list them as host:port,host:port".to_owned());
    }
    let (name, port) = if let Some(v6) = host.strip_prefix('[') {
        let (addr, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("endpoint {host:?}: unclosed '[' in an IPv6 address"))?;
        (format!("[{addr}]"), tail.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name.to_owned(), Some(port)),
            None => (host.to_owned(), None),
        }
    };
    if name.is_empty()
        || name
            .chars()
            .any(|c| !(c.is_ascii_alphanumeric() || "-._[]:".contains(c)))
    {
        return Err(format!("endpoint {host:?}: invalid host name"));
    }
    let port = match port {
        None | Some("") => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("endpoint {host:?}: port must be 1-65535"))?,
    };
    Ok(format!("{name}:{port}"))
}

/// Percent-decodes `text` (UTF-8).
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "invalid percent-encoding (use %XX)".to_owned())?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8 after percent-decoding".to_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parsed(url: &str) -> Target {
        parse(url, EtcdOptions::default()).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn error(url: &str) -> String {
        parse(url, EtcdOptions::default()).err().unwrap_or_default()
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
        assert_eq!(t.user, Some(("app".to_owned(), "p@ss".to_owned())));
        assert_eq!(t.options.prefix_str(), "jobs/x");
        assert_eq!(
            t.options.request_timeout_value(),
            Duration::from_millis(250)
        );
        assert!(!t.options.notifications_enabled());
        assert_eq!(
            t.options.ca_file_value(),
            Some(std::path::Path::new("/ca.pem"))
        );
        let t = parsed("etcd://127.0.0.1:2379");
        assert_eq!(t.endpoints, ["http://127.0.0.1:2379"]);
        assert_eq!(t.options.prefix_str(), "leasehold");
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
        assert!(error("etcd://h?notifications=maybe").contains("on or off"));
        assert!(error("etcd://h:99999").contains("1-65535"));
        assert!(error("etcd://h:2379,,g").contains("empty endpoint"));
        assert!(error("etcd://h?ca_file=/x").contains("etcds://"));
        assert!(error("http://h").contains("etcd://"));
        assert!(error("etcd://h/a//b").contains("//"));
        let e = error("etcd://u:sec%ZZret@h");
        assert!(!e.contains("sec"), "the password must not leak: {e}");
    }
}
