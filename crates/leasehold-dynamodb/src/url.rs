//! Parsing `dynamodb://TABLE?region=…&endpoint=…` store URLs.

use std::time::Duration;

use leasehold::parse_duration;

use crate::options::{DEFAULT_TABLE, DynamoDbOptions};

/// What a `dynamodb:` URL says.
#[derive(Debug, Clone)]
pub(crate) struct DynamoDbUrl {
    pub(crate) options: DynamoDbOptions,
    pub(crate) region: Option<String>,
    pub(crate) endpoint: Option<String>,
    pub(crate) profile: Option<String>,
    pub(crate) create_table: bool,
}

/// The query parameters a `dynamodb:` URL accepts.
pub(crate) const PARAMETERS: &[&str] = &[
    "region",
    "endpoint",
    "profile",
    "prefix",
    "skew",
    "ttl_padding",
    "retry_delay",
    "max_attempts",
    "attempt_timeout",
    "node_id",
    "create_table",
];

impl DynamoDbUrl {
    /// Parses `dynamodb://TABLE?…` (or `dynamodb:` / `dynamodb://` for the default table).
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .split_once(':')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("dynamodb"))
            .map(|(_, rest)| rest)
            .ok_or("expected a dynamodb:// URL")?;
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let (table, query) = rest.split_once('?').unwrap_or((rest, ""));
        let table = decode(table)?;
        if table.contains('/') {
            return Err(format!(
                "expected dynamodb://TABLE?PARAMETERS, found a path after the table in {table:?}"
            ));
        }
        let mut parsed = Self {
            options: DynamoDbOptions::default().table(if table.is_empty() {
                DEFAULT_TABLE.to_owned()
            } else {
                table
            }),
            region: None,
            endpoint: None,
            profile: None,
            create_table: false,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value)?;
            parsed.set(name, value)?;
        }
        parsed.options.validate().map_err(|e| e.to_string())?;
        Ok(parsed)
    }

    fn set(&mut self, name: &str, value: String) -> Result<(), String> {
        let duration = |v: &str| -> Result<Duration, String> {
            parse_duration(v).map_err(|e| format!("{name}: {e}"))
        };
        let o = std::mem::take(&mut self.options);
        self.options = match name {
            "region" => {
                self.region = Some(nonempty(name, value)?);
                o
            }
            "endpoint" => {
                let endpoint = nonempty(name, value)?;
                if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                    return Err(format!(
                        "endpoint {endpoint:?} must start with http:// or https://"
                    ));
                }
                self.endpoint = Some(endpoint);
                o
            }
            "profile" => {
                self.profile = Some(nonempty(name, value)?);
                o
            }
            "prefix" => o.key_prefix(value),
            "skew" => o.clock_skew_tolerance(duration(&value)?),
            "ttl_padding" => o.ttl_padding(duration(&value)?),
            "retry_delay" => o.retry_delay(duration(&value)?),
            "attempt_timeout" => o.attempt_timeout(duration(&value)?),
            "max_attempts" => o.max_attempts(
                value
                    .parse()
                    .map_err(|_| format!("max_attempts {value:?} is not a whole number"))?,
            ),
            "node_id" => o.node_id(nonempty(name, value)?),
            "create_table" => {
                self.create_table = match value.as_str() {
                    "" | "true" | "1" | "yes" => true,
                    "false" | "0" | "no" => false,
                    other => return Err(format!("create_table {other:?} must be true or false")),
                };
                o
            }
            other => {
                return Err(format!(
                    "unknown parameter {other:?}; known parameters are {}",
                    PARAMETERS.join(", ")
                ));
            }
        };
        Ok(())
    }
}

fn nonempty(name: &str, value: String) -> Result<String, String> {
    if value.is_empty() {
        Err(format!("{name} must not be empty"))
    } else {
        Ok(value)
    }
}

/// Percent-decodes `text` (UTF-8).
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-escape in {text:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_url_parses() {
        let u = DynamoDbUrl::parse(
            "dynamodb://ops_leases?region=eu-west-1&endpoint=http%3A%2F%2F127.0.0.1%3A8000\
             &prefix=billing&skew=500ms&ttl_padding=10m&retry_delay=20ms&max_attempts=5\
             &attempt_timeout=1s&node_id=n1&create_table=true&profile=dev",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.options.table_name(), "ops_leases");
        assert_eq!(u.region.as_deref(), Some("eu-west-1"));
        assert_eq!(u.endpoint.as_deref(), Some("http://127.0.0.1:8000"));
        assert_eq!(u.profile.as_deref(), Some("dev"));
        assert_eq!(u.options.prefix(), "billing");
        assert_eq!(u.options.skew_tolerance(), Duration::from_millis(500));
        assert!(u.create_table);
    }

    #[test]
    fn the_default_table_and_unencoded_endpoints_work() {
        for url in [
            "dynamodb:",
            "dynamodb://",
            "DYNAMODB://?endpoint=http://localhost:8000",
        ] {
            let u = DynamoDbUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(u.options.table_name(), DEFAULT_TABLE);
        }
    }

    #[test]
    fn mistakes_are_explained() {
        for (url, says) in [
            ("dynamodb://t?regoin=x", "unknown parameter"),
            ("dynamodb://ab", "3-255"),
            ("dynamodb://tab/le", "path"),
            ("dynamodb://table?skew=soon", "skew"),
            ("dynamodb://table?endpoint=127.0.0.1", "http://"),
            ("dynamodb://table?create_table=maybe", "create_table"),
            ("dynamodb://table?max_attempts=x", "max_attempts"),
            ("dynamodb://table?prefix=a%2", "percent"),
        ] {
            let err = DynamoDbUrl::parse(url).err().unwrap_or_default();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}
