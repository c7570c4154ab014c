//! Store options carried in a Redis URL's query string, read with the core's
//! [`StoreUrl`](leasehold::store::StoreUrl) parser.

use leasehold::store::{StoreOptions, StoreUrl, UrlError};

use crate::options::RedisOptions;

/// The parameters of a TCP URL that redis-rs reads (beside the store's
/// [`RedisOptionKey`](crate::RedisOptionKey)s).
const TCP_DRIVER_PARAMETERS: &[&str] = &["protocol"];

/// The parameters of a `redis+unix:` URL that redis-rs reads.
const UNIX_DRIVER_PARAMETERS: &[&str] = &["protocol", "db", "user", "pass"];

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
        parsed.options(&known(UNIX_DRIVER_PARAMETERS))?
    } else {
        parsed.require_host(&format!("{}://[USER@]HOST[:PORT][/DB]", parsed.scheme()))?;
        parsed.options(&known(TCP_DRIVER_PARAMETERS))?
    };
    let options = base.with_query(&mut query)?;
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

/// The store's parameters and the driver's.
fn known(driver: &[&'static str]) -> Vec<&'static str> {
    let mut known = RedisOptions::known_params();
    known.extend_from_slice(driver);
    known
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
