//! Checking `sqlite:`, `postgres://` and `mysql://` URLs at the edge, with the core's
//! [`StoreUrl`](leasehold::store::StoreUrl) parser, before `sqlx` reads them: `sqlx` ignores unknown
//! PostgreSQL and MySQL parameters (a typo such as `sslmdoe=require` would silently connect
//! without TLS) and connects to `localhost` when the host is missing.

use leasehold::store::{StoreUrl, UrlError, UrlOptions};

use crate::dialect::Dialect;

/// The parameters `sqlx` reads from a PostgreSQL URL.
const POSTGRES_PARAMETERS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
    "options[*]",
];

/// The parameters `sqlx` reads from a MySQL/MariaDB URL.
const MYSQL_PARAMETERS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslca",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "charset",
    "collation",
    "statement-cache-capacity",
    "socket",
    "timezone",
    "time-zone",
];

/// The parameters `sqlx` reads from an SQLite URL.
const SQLITE_PARAMETERS: &[&str] = &["mode", "cache", "immutable", "vfs"];

/// Checks `url` for `dialect`: a host (or socket) for the servers, a file (or memory) for SQLite,
/// and only parameters `sqlx` knows, each given once and well encoded.
pub(crate) fn check(url: &str, dialect: Dialect) -> Result<(), UrlError> {
    match dialect {
        Dialect::Sqlite => check_sqlite(url),
        Dialect::Postgres => {
            let parsed = StoreUrl::parse(url)?;
            let mut query = parsed.options(POSTGRES_PARAMETERS)?;
            let socket = query.text("host")?.or(query.text("hostaddr")?);
            if socket.is_none() {
                parsed.require_host(
                    "postgres://USER@HOST:PORT/DATABASE \
                     (or postgres:///DATABASE?host=/run/postgresql for a Unix socket)",
                )?;
            }
            Ok(())
        }
        Dialect::MySql => {
            let parsed = StoreUrl::parse(url)?;
            let mut query = parsed.options(MYSQL_PARAMETERS)?;
            if query.text("socket")?.is_none() {
                parsed.require_host(&format!(
                    "{}://USER@HOST:PORT/DATABASE \
                     (or {0}:///DATABASE?socket=/run/mysqld/mysqld.sock for a Unix socket)",
                    parsed.scheme()
                ))?;
            }
            Ok(())
        }
    }
}

/// `sqlite:` URLs are not parsed as URLs by `sqlx` (a path may hold spaces): the path is what
/// follows `sqlite:` and an optional `//`, up to the first `?`.
fn check_sqlite(url: &str) -> Result<(), UrlError> {
    let rest = url.trim().split_once(':').map_or("", |(_, r)| r);
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut query = UrlOptions::parse(query, SQLITE_PARAMETERS)?;
    let memory = query.take("mode").is_some_and(|m| m == "memory");
    if path.is_empty() && !memory {
        return Err(UrlError::MissingHost {
            expected: "sqlite:///ABSOLUTE/PATH.db, sqlite://RELATIVE/PATH.db or sqlite::memory: \
                       (an empty path would give every connection its own temporary database)"
                .to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(url: &str) -> Result<(), String> {
        let dialect = match url.split_once(':').map(|(s, _)| s) {
            Some("sqlite") => Dialect::Sqlite,
            Some("postgres" | "postgresql") => Dialect::Postgres,
            _ => Dialect::MySql,
        };
        check(url, dialect).map_err(|e| e.to_string())
    }

    #[test]
    fn legitimate_urls_pass() -> Result<(), String> {
        for url in [
            "sqlite:///var/lib/app/leases.db?mode=rwc",
            "sqlite://leases.db",
            "sqlite:leases.db",
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://?mode=memory&cache=shared",
            "sqlite:///a b/100%25%3F%23.db",
            "postgres://app:p%2Fw@db.internal:5432/app?sslmode=require&application_name=x",
            "postgresql://127.0.0.1/test",
            "postgres:///app?host=/run/postgresql",
            "postgres://%2Frun%2Fpostgresql/app",
            "postgres://h/app?options[search_path]=ops",
            "mysql://root@127.0.0.1:3306/test?ssl-mode=disabled&charset=utf8mb4",
            "mariadb://root@127.0.0.1/test",
            "mysql:///test?socket=/run/mysqld/mysqld.sock",
        ] {
            checked(url).map_err(|e| format!("{url}: {e}"))?;
        }
        Ok(())
    }

    #[test]
    fn missing_hosts_unknown_and_repeated_parameters_are_refused() {
        for (url, says) in [
            ("postgres:/", "a host is required"),
            ("postgres:", "a host is required"),
            ("postgres://", "a host is required"),
            ("postgres:///app", "host=/run/postgresql"),
            ("postgres://u:pw@/app", "empty host"),
            ("mysql://", "a host is required"),
            ("mariadb:/x", "mariadb://USER"),
            ("sqlite:", "sqlite:///ABSOLUTE"),
            ("sqlite://", "sqlite:///ABSOLUTE"),
            (
                "postgres://h/x?sslmdoe=require",
                "unknown parameter \"sslmdoe\"; known parameters are sslmode",
            ),
            ("mysql://h/x?prefix=a", "unknown parameter \"prefix\""),
            ("sqlite:///x.db?mdoe=ro", "known parameters are mode, cache"),
            ("postgres://h/x?sslmode=a&sslmode=b", "more than once"),
            ("postgres://u:s3c/r3t@h/x", "percent-encode"),
        ] {
            let e = checked(url).err().unwrap_or_default();
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
