//! Store options carried in a Redis URL's query string.

use leasehold::parse_duration;

use crate::options::RedisOptions;

/// Splits `url` into the URL for redis-rs and the store options from its query string, starting
/// from `base`. The error says which parameter is wrong and what is allowed.
pub(crate) fn split_options(
    url: &str,
    base: RedisOptions,
) -> Result<(String, RedisOptions), String> {
    let (head, fragment) = match url.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (url, None),
    };
    let Some((path, query)) = head.split_once('?') else {
        return Ok((url.to_owned(), base));
    };
    let mut options = base;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let duration =
            || parse_duration(value).map_err(|e| format!("{key}={value:?}: {e} (e.g. 500ms, 2s)"));
        match key {
            "prefix" => options = options.prefix(value),
            "response_timeout" => options = options.response_timeout(duration()?),
            "connect_timeout" => options = options.connect_timeout(duration()?),
            "idle_retention" => options = options.idle_retention(duration()?),
            "notifications" => {
                let on = match value.to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" | "yes" => true,
                    "off" | "false" | "0" | "no" => false,
                    _ => return Err(format!("notifications={value:?}: use on or off")),
                };
                options = options.notifications(on);
            }
            _ => rest.push(pair),
        }
    }
    let mut cleaned = path.to_owned();
    if !rest.is_empty() {
        cleaned.push('?');
        cleaned.push_str(&rest.join("&"));
    }
    if let Some(fragment) = fragment {
        cleaned.push('#');
        cleaned.push_str(fragment);
    }
    Ok((cleaned, options))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn store_options_are_taken_out_and_the_rest_is_kept() {
        let (url, o) = split_options(
            "rediss://:pw@h:6380/2?prefix=app&protocol=resp3&response_timeout=250ms&notifications=off#insecure",
            RedisOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(url, "rediss://:pw@h:6380/2?protocol=resp3#insecure");
        assert_eq!(o.prefix_str(), "app");
        assert_eq!(o.response_timeout_value(), Duration::from_millis(250));
        assert!(!o.notifications_enabled());
        let (url, _) = split_options("redis://h", RedisOptions::default()).unwrap_or_default();
        assert_eq!(url, "redis://h");
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let e = split_options("redis://h?connect_timeout=soon", RedisOptions::default())
            .err()
            .unwrap_or_default();
        assert!(e.contains("connect_timeout"), "{e}");
        let e = split_options("redis://h?notifications=maybe", RedisOptions::default())
            .err()
            .unwrap_or_default();
        assert!(e.contains("on or off"), "{e}");
    }
}
