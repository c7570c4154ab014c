//! `leasehold release --force`: break-glass release of a lock, whoever holds it.

use std::process::ExitCode;

use crate::args::ReleaseArgs;
use crate::exit::Failure;
use crate::say;
use crate::store::StoreUrl;
use crate::time_text::{printable, rfc3339};

/// Runs `leasehold release`.
pub(crate) async fn release(args: ReleaseArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    let lock = &args.lock;
    if !args.force {
        return Err(Failure::usage(format!(
            "refusing to release lock {lock} without --force: this takes the lock from its \
             holder, which may keep working until its next renewal and overlap with the next \
             holder. Check `leasehold status {lock}` first, then run \
             `leasehold release --force {lock}`"
        )));
    }
    let store = url.open_shared(std::time::Duration::ZERO).await?;
    let freed = store.force_release(lock, args.slots).await?;
    let mut lines = Vec::new();
    if freed.is_empty() {
        lines.push(format!("lock {lock}: nothing was held; nothing released"));
    }
    for h in &freed {
        lines.push(format!(
            "lock {lock}: released slot {} held by {} (fence {}, acquired {})",
            h.slot,
            printable(&h.owner),
            h.fence,
            rfc3339(h.acquired_at),
        ));
    }
    if !say::out(&lines.join("\n")) {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok(ExitCode::SUCCESS)
}
