//! `leasehold fence`: the fence table that makes a shell script's SQL writes fenced — create it
//! (`init`) or print its DDL for a migration (`sql`). The writes themselves are plain SQL that
//! uses `$LEASEHOLD_FENCE` (docs/fencing.md).

use std::process::ExitCode;

use leasehold::store::StoreOpener;
use leasehold_sql::{Dialect, SqlFences, SqlOpener, SqlOptions, SqlStore};

use crate::args::{FenceArgs, FenceCommand};
use crate::exit::Failure;
use crate::say;
use crate::store::StoreUrl;

/// Runs `leasehold fence …`.
pub(crate) async fn fence(args: FenceArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    check_sql(&url)?;
    let (table, print) = match &args.command {
        FenceCommand::Init(a) => (a.table.clone(), false),
        FenceCommand::Sql(a) => (a.table.clone(), true),
    };
    let store = if print {
        // Printing needs the dialect only: no connection.
        SqlStore::connect_lazy(url.as_str(), SqlOptions::default())?
    } else {
        SqlStore::connect(url.as_str()).await?
    };
    let mut fences = SqlFences::new(&store);
    if let Some(table) = table {
        fences = fences
            .table(table)
            .map_err(|e| Failure::usage(format!("--table: {e}")))?;
    }
    if print {
        say::out(&script(fences.dialect(), &fences.statements().create));
    } else {
        fences.migrate().await?;
        say::out(&format!(
            "fence table {} and its trigger are ready on {}",
            fences.table_name(),
            url.redacted()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Fence tables live in SQL databases; anything else is a usage error naming what to use.
fn check_sql(url: &StoreUrl) -> Result<(), Failure> {
    let scheme = url
        .as_str()
        .split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if SqlOpener::new().schemes().contains(&scheme.as_str()) {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "fence tables live in SQL databases (sqlite:, postgres://, mysql://, mariadb://); {} is \
         not one. Redis, DynamoDB and etcd writes are fenced by the library (docs/fencing.md)",
        url.redacted()
    )))
}

/// The statements as a script the database's own client runs as it is: each ends with `;`, and
/// for MySQL/MariaDB, whose trigger bodies hold `;`, inside `DELIMITER //`.
fn script(dialect: Dialect, statements: &[String]) -> String {
    let mysql = matches!(dialect, Dialect::MySql);
    let end = if mysql { "//" } else { ";" };
    let mut out = String::new();
    if mysql {
        out.push_str("DELIMITER //\n");
    }
    for statement in statements {
        out.push_str(statement.trim().trim_end_matches(';'));
        out.push_str(end);
        out.push_str("\n\n");
    }
    if mysql {
        out.push_str("DELIMITER ;\n");
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_scripts_change_the_delimiter_and_others_end_with_semicolons() {
        let statements = [
            "CREATE TABLE t (a INT)".to_owned(),
            "CREATE TRIGGER g BEGIN x; y; END;".to_owned(),
        ];
        let my = script(Dialect::MySql, &statements);
        assert!(
            my.starts_with("DELIMITER //\nCREATE TABLE t (a INT)//"),
            "{my}"
        );
        assert!(
            my.contains("BEGIN x; y; END//") && my.ends_with("DELIMITER ;"),
            "{my}"
        );
        let pg = script(Dialect::Postgres, &statements);
        assert_eq!(
            pg,
            "CREATE TABLE t (a INT);\n\nCREATE TRIGGER g BEGIN x; y; END;"
        );
    }
}
