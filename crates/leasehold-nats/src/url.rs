//! `nats://` URLs: server, credentials, bucket and store options, read with the core's
//! [`StoreUrl`] parser (the same decoding, user-info checks and unknown/duplicate-parameter
//! errors as every store).

use leasehold::store::{Secret, StoreUrl, UrlError, UserInfo, percent_decode};

use leasehold::store::StoreOptions;

use crate::options::NatsOptions;

/// The port used when the URL gives none (NATS's client port).
pub(crate) const DEFAULT_PORT: u16 = 4222;

/// The query parameter a URL may carry besides the options' keys ([`NatsOptionKey`](crate::NatsOptionKey)).
const TOKEN_PARAM: &str = "token";

/// The form of a NATS URL, for error messages.
const EXPECTED: &str = "nats://[USER:PASSWORD@]HOST[:PORT][/BUCKET][?token=TOKEN&…]";

/// How the client authenticates. The secrets are [`Secret`]s: `Debug` shows `***`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credentials {
    None,
    /// `user:password@`.
    UserPassword(String, Secret),
    /// `?token=` (never in the user-info, where URL redaction would not hide it).
    Token(Secret),
}

/// What a NATS URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `nats://host:port`, without credentials.
    pub(crate) server: String,
    pub(crate) credentials: Credentials,
    /// The options, starting from the caller's and overridden by the URL (checked with
    /// [`NatsOptions::validate`]).
    pub(crate) options: NatsOptions,
}

/// Parses `nats://[user:password@]host[:port][/bucket][?param=value&…]`. The error says what is
/// wrong and what is allowed; it never contains the password or token.
pub(crate) fn parse(url: &str, base: NatsOptions) -> Result<Target, UrlError> {
    let parsed = StoreUrl::parse(url.trim())?;
    if !parsed.scheme().eq_ignore_ascii_case("nats") {
        return Err(UrlError::syntax(format!(
            "unsupported scheme; expected {EXPECTED}"
        )));
    }
    let host = parsed.require_host(EXPECTED)?.to_owned();
    let port = parsed.url().port().unwrap_or(DEFAULT_PORT);
    if port == 0 {
        return Err(UrlError::syntax("the port must be 1-65535"));
    }
    let mut credentials = credentials(&parsed)?;
    let mut options = base;
    let path = parsed.url().path().trim_start_matches('/');
    if !path.is_empty() {
        let bucket = percent_decode(path)
            .ok_or_else(|| UrlError::syntax("the bucket is not valid percent-encoded UTF-8"))?;
        options = options.with_bucket(bucket);
    }
    let mut known = NatsOptions::known_params();
    known.push(TOKEN_PARAM);
    let mut query = parsed.options(&known)?;
    if let Some(token) = query.secret(TOKEN_PARAM)? {
        if credentials != Credentials::None {
            return Err(UrlError::syntax(
                "give either USER:PASSWORD@ or ?token=, not both",
            ));
        }
        credentials = Credentials::Token(token);
    }
    let options = options.with_query(&mut query)?;
    options.validate()?;
    Ok(Target {
        server: format!("nats://{host}:{port}"),
        credentials,
        options,
    })
}

/// The user name and password, percent-decoded.
fn credentials(parsed: &StoreUrl) -> Result<Credentials, UrlError> {
    match parsed.user_info()? {
        None => Ok(Credentials::None),
        Some(UserInfo {
            user,
            password: Some(password),
            ..
        }) => Ok(Credentials::UserPassword(user, password)),
        // `nats://TOKEN@HOST` is NATS's own form, but a user name is shown in messages.
        Some(_) => Err(UrlError::syntax(
            "a user name needs a password (nats://USER:PASSWORD@HOST); give a token as ?token=TOKEN, never before the host",
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parsed(url: &str) -> Target {
        parse(url, NatsOptions::default()).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn error(url: &str) -> String {
        parse(url, NatsOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn server_credentials_bucket_and_options() {
        let t = parsed(
            "nats://app:p%40ss@nats.example:4333/jobs?request_timeout=250ms&notifications=off",
        );
        assert_eq!(t.server, "nats://nats.example:4333");
        assert_eq!(
            t.credentials,
            Credentials::UserPassword("app".to_owned(), Secret::new("p@ss"))
        );
        assert_eq!(t.options.bucket(), "jobs");
        assert_eq!(t.options.request_timeout(), Duration::from_millis(250));
        assert!(!t.options.notifications());
        let t = parsed("nats://127.0.0.1?token=s3cr3t");
        assert_eq!(t.server, "nats://127.0.0.1:4222");
        assert_eq!(t.credentials, Credentials::Token(Secret::new("s3cr3t")));
        assert!(!format!("{t:?}").contains("s3cr3t"), "no secret in Debug");
        assert_eq!(
            leasehold::store::redact_url("nats://127.0.0.1?token=s3cr3t"),
            "nats://127.0.0.1?token=***"
        );
        assert_eq!(t.options.bucket(), "leasehold");
        assert_eq!(parsed("nats://h?bucket=b2").options.bucket(), "b2");
    }

    #[test]
    fn bad_urls_say_what_is_allowed() {
        let e = error("nats://h/p?color=blue");
        assert!(
            e.contains("\"color\"") && e.contains("request_timeout"),
            "{e}"
        );
        assert!(error("nats://h?connect_timeout=soon").contains("connect_timeout"));
        assert!(error("nats://h?notifications=maybe").contains("true or false"));
        assert!(error("nats://h/a.b").contains("bucket"));
        assert!(error("http://h").contains("nats://"));
        assert!(error("nats:").contains("a host is required"));
        assert!(error("nats://:pw@h").contains("needs a user name"));
        let e = error("nats://s3cr3t@h");
        assert!(e.contains("?token=") && !e.contains("s3cr3t"), "{e}");
        assert!(error("nats://u:p@h?token=t").contains("not both"));
        // The core's redaction reads a lone NATS user name as the token it is.
        assert_eq!(
            leasehold::store::redact_url("nats://s3cr3t@h:1/b?x=1"),
            "nats://***@h:1/b?x=1"
        );
        assert_eq!(
            leasehold::store::redact_url("nats://u:p@h"),
            "nats://u:***@h"
        );
        assert_eq!(leasehold::store::redact_url("nats://h/b"), "nats://h/b");
        let e = error("nats://u:sec%ZZret@h");
        assert!(!e.contains("sec"), "the password must not leak: {e}");
    }
}
