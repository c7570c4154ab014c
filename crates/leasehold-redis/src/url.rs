//! Store options carried in a Redis URL's query string, read with the core's
//! [`StoreUrl`](leasehold::store::StoreUrl) parser.

use leasehold::store::{StoreUrl, UrlError, UrlOptions};

use crate::options::RedisOptions;

/// Every parameter of a TCP URL: the store's and those redis-rs reads.
const TCP_PARAMETERS: &[&str] = &[
    "prefix",
    "response_timeout",
    "connect_timeout",
    "idle_retention",
    "notifications",
    "protocol",
];

/// Every parameter of a `redis+unix:` URL: the store's and those redis-rs reads.
const UNIX_PARAMETERS: &[&str] = &[
    "prefix",
    "response_timeout",
    "connect_timeout",
    "idle_retention",
    "notifications",
    "protocol",
    "db",
    "user",
    "pass",
];

/// Splits `url` into the URL for redis-rs and the store options from its query string, starting
/// from `base`. A URL without a host (or, for `redis+unix:`, a socket path), an unknown or
/// repeated parameter, or a bad value is an error saying what is allowed.
pub(crate) fn split_options(
    url: &str,
    base: RedisOptions,
) -> Result<(String, RedisOptions), UrlError> {
    let parsed = StoreUrl::parse(url)?;
    let unix = parsed.scheme().ends_with("+unix");
    let mut query = if unix {
        if parsed.url().path().trim_matches('/').is_empty() {
            return Err(UrlError::MissingHost {
                expected: "redis+unix:///PATH/TO/redis.sock".to_owned(),
            });
        }
        parsed.options(UNIX_PARAMETERS)?
    } else {
        parsed.require_host(&format!("{}://[USER@]HOST[:PORT][/DB]", parsed.scheme()))?;
        parsed.options(TCP_PARAMETERS)?
    };
    let options = store_options(&mut query, base)?;
    let mut driver = parsed.url().clone();
    driver.set_query(None);
    let rest = query.remaining();
    if !rest.is_empty() {
        let mut pairs = driver.query_pairs_mut();
        for (key, value) in &rest {
            pairs.append_pair(key, value);
        }
    }
    Ok((driver.to_string(), options))
}

fn store_options(query: &mut UrlOptions, base: RedisOptions) -> Result<RedisOptions, UrlError> {
    let mut options = base;
    if let Some(prefix) = query.take("prefix") {
        options = options.with_prefix(prefix);
    }
    if let Some(d) = query.duration("response_timeout")? {
        options = options.with_response_timeout(d);
    }
    if let Some(d) = query.duration("connect_timeout")? {
        options = options.with_connect_timeout(d);
    }
    if let Some(d) = query.duration("idle_retention")? {
        options = options.with_idle_retention(d);
    }
    if let Some(on) = query.flag("notifications")? {
        options = options.with_notifications(on);
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn split(url: &str) -> Result<(String, RedisOptions), String> {
        split_options(url, RedisOptions::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn store_options_are_taken_out_and_the_rest_is_kept() -> Result<(), String> {
        let (url, o) = split(
            "rediss://:pw@h:6380/2?prefix=app%2Fx&protocol=resp3&response_timeout=250ms&notifications=off#insecure",
        )?;
        assert_eq!(url, "rediss://:pw@h:6380/2?protocol=resp3#insecure");
        assert_eq!(o.prefix(), "app/x");
        assert_eq!(o.response_timeout(), Duration::from_millis(250));
        assert!(!o.notifications());
        let (url, _) = split("redis://h")?;
        assert_eq!(url, "redis://h");
        let (url, _) = split("redis+unix:///run/redis.sock?db=2&prefix=p")?;
        assert_eq!(url, "redis+unix:///run/redis.sock?db=2");
        Ok(())
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (url, says) in [
            ("redis://h?connect_timeout=soon", "connect_timeout"),
            ("redis://h?notifications=maybe", "true or false"),
            (
                "redis://h?prefx=jobs",
                "unknown parameter \"prefx\"; known parameters are prefix,",
            ),
            ("redis://h?prefix=a&prefix=b", "more than once"),
            ("redis://h?db=1", "unknown parameter \"db\""),
            ("redis://h?prefix=%zz", "percent-encoded"),
            ("redis://?prefix=a", "a host is required"),
            ("redis://", "a host is required"),
            ("rediss:/x", "a host is required"),
            ("redis+unix://", "redis+unix:///PATH"),
        ] {
            let e = split(url).err().unwrap_or_default();
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
