//! `leasehold clear-ledger --force`: break-glass deletion of a lock's period ledger record, so
//! that its `--once-per` period runs again.

use std::process::ExitCode;

use crate::args::ClearLedgerArgs;
use crate::exit::Failure;
use crate::say;
use crate::status::ledger_text;
use crate::store::StoreUrl;
use crate::time_text::printable;

/// Runs `leasehold clear-ledger`.
pub(crate) async fn clear_ledger(
    args: ClearLedgerArgs,
    url: StoreUrl,
) -> Result<ExitCode, Failure> {
    let lock = &args.lock;
    if !args.force {
        return Err(Failure::usage(format!(
            "refusing to clear the period ledger of lock {lock} without --force: the next \
             `leasehold run --once-per` of it would run its command again, even in a period that \
             already ran. Check `leasehold status {lock}` first, then run \
             `leasehold clear-ledger --force {lock}`"
        )));
    }
    let store = url.open_shared(std::time::Duration::ZERO).await?;
    let Some(cleared) = store.clear_period_ledger(lock).await? else {
        return say_lines(&[format!(
            "lock {lock}: no period ledger record; nothing cleared"
        )]);
    };
    let mut lines = vec![format!(
        "lock {lock}: cleared the period ledger record: {}",
        ledger_text(&cleared)
    )];
    // Only the ledger went: a holder keeps its lease, and the period runs again after it.
    let holders = store.holders(lock).await?;
    match holders.first() {
        Some(h) => lines.push(format!(
            "lock {lock}: still held by {} (fence {}); the next --once-per run after it lets go \
             runs its command again",
            printable(&h.owner),
            h.fence
        )),
        None => lines.push(format!(
            "lock {lock}: the next --once-per run runs its command again"
        )),
    }
    say_lines(&lines)
}

fn say_lines(lines: &[String]) -> Result<ExitCode, Failure> {
    if !say::out(&lines.join("\n")) {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok(ExitCode::SUCCESS)
}
