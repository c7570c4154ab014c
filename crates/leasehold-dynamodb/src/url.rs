//! Parsing `dynamodb://TABLE?region=…&endpoint=…` store URLs.

use leasehold::store::{StoreOptions, UrlError, UrlOptions, percent_decode};

use crate::options::{DEFAULT_TABLE, DynamoDbOptions};

/// What a `dynamodb:` URL says (its `Debug` form redacts the endpoint).
#[derive(Clone)]
pub(crate) struct DynamoDbUrl {
    pub(crate) options: DynamoDbOptions,
    pub(crate) region: Option<String>,
    pub(crate) endpoint: Option<String>,
    pub(crate) profile: Option<String>,
    pub(crate) create_table: bool,
}

impl std::fmt::Debug for DynamoDbUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoDbUrl")
            .field("options", &self.options)
            .field("region", &self.region)
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(leasehold::store::redact_url),
            )
            .field("profile", &self.profile)
            .field("create_table", &self.create_table)
            .finish()
    }
}

/// The query parameters of a `dynamodb:` URL beside the options' keys
/// ([`DynamoDbOptionKey`](crate::DynamoDbOptionKey)): where and how to connect.
const CONNECTION_PARAMETERS: &[&str] = &["region", "endpoint", "profile", "create_table"];

/// Every query parameter a `dynamodb:` URL accepts.
fn parameters() -> Vec<&'static str> {
    let mut known = CONNECTION_PARAMETERS.to_vec();
    known.extend(DynamoDbOptions::known_params());
    known
}

impl DynamoDbUrl {
    /// Parses `dynamodb://TABLE?…` (or `dynamodb:` / `dynamodb://` for the default table). The
    /// query is read by the core's [`UrlOptions`] parser: values are percent-decoded once, and
    /// an unknown or repeated parameter is an error listing the known ones.
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .trim()
            .split_once(':')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("dynamodb"))
            .map(|(_, rest)| rest)
            .ok_or("expected a dynamodb:// URL")?;
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let (table, query) = rest.split_once('?').unwrap_or((rest, ""));
        let table = percent_decode(table).ok_or_else(|| {
            format!(
                "the table name {table:?} is not valid percent-encoded UTF-8 (write `%` as %25)"
            )
        })?;
        if table.contains('/') {
            return Err(format!(
                "expected dynamodb://TABLE?PARAMETERS, found a path after the table in {table:?}"
            ));
        }
        let mut query = UrlOptions::parse(query, &parameters()).map_err(|e| e.to_string())?;
        let parsed = Self::from_options(&mut query, table).map_err(|e| e.to_string())?;
        parsed.options.validate().map_err(|e| e.to_string())?;
        Ok(parsed)
    }

    fn from_options(q: &mut UrlOptions, table: String) -> Result<Self, UrlError> {
        let o = DynamoDbOptions::default().with_table(if table.is_empty() {
            DEFAULT_TABLE.to_owned()
        } else {
            table
        });
        let o = o.with_query(q)?;
        let endpoint = q.typed(
            "endpoint",
            "an http:// or https:// URL, e.g. http://127.0.0.1:8000",
            |e| {
                if e.starts_with("http://") || e.starts_with("https://") {
                    Ok(e.to_owned())
                } else {
                    Err(())
                }
            },
        )?;
        Ok(Self {
            options: o,
            region: q.text("region")?,
            endpoint,
            profile: q.text("profile")?,
            create_table: q.flag("create_table")?.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_full_url_parses() {
        let u = DynamoDbUrl::parse(
            "dynamodb://ops_leases?region=eu-west-1&endpoint=http%3A%2F%2F127.0.0.1%3A8000\
             &prefix=billing&skew=500ms&ttl_padding=10m&retry_delay=20ms&max_attempts=5\
             &attempt_timeout=1s&node_id=n1&create_table=true&profile=dev\
             &stale_refresh=10m&stale_refresh_pages=3",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.options.table_name(), "ops_leases");
        assert_eq!(u.region.as_deref(), Some("eu-west-1"));
        assert_eq!(u.endpoint.as_deref(), Some("http://127.0.0.1:8000"));
        assert_eq!(u.profile.as_deref(), Some("dev"));
        assert_eq!(u.options.key_prefix(), "billing");
        assert_eq!(
            u.options.stale_refresh(),
            Some(std::time::Duration::from_secs(600))
        );
        assert_eq!(u.options.stale_refresh_pages(), 3);
        assert_eq!(u.options.clock_skew_tolerance(), Duration::from_millis(500));
        assert!(u.create_table);
        let u = DynamoDbUrl::parse("dynamodb://tab?endpoint=http://id:hunter2@127.0.0.1:8000")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!format!("{u:?}").contains("hunter2"));
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
        let endpoint = DynamoDbUrl::parse("dynamodb://table?endpoint=127.0.0.1")
            .err()
            .unwrap_or_default();
        assert!(endpoint.contains("http://"), "{endpoint}");
        for (url, says) in [
            ("dynamodb://t?regoin=x", "unknown parameter"),
            ("dynamodb://ab", "3-255"),
            ("dynamodb://tab/le", "path"),
            ("dynamodb://table?skew=soon", "skew"),
            ("dynamodb://table?region=a&region=b", "more than once"),
            ("dynamodb://table?region=", "non-empty"),
            ("dynamodb://table?create_table=maybe", "create_table"),
            ("dynamodb://table?max_attempts=x", "max_attempts"),
            ("dynamodb://table?prefix=a%2", "percent"),
        ] {
            let err = DynamoDbUrl::parse(url).err().unwrap_or_default();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}
