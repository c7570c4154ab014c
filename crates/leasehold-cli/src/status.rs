//! `leasehold status`: who holds which lock, as text or JSON.

use std::process::ExitCode;
use std::time::SystemTime;

use leasehold::{Holder, LockState};
use serde::Serialize;

use crate::args::StatusArgs;
use crate::exit::Failure;
use crate::say;
use crate::store::StoreUrl;
use crate::time_text::{human, printable, rfc3339, until};

/// The JSON document `status --json` prints.
#[derive(Debug, Serialize)]
struct Report {
    /// The store, with secrets redacted.
    store: String,
    /// When this machine took the snapshot (its clock), RFC 3339 UTC.
    checked_at: String,
    locks: Vec<LockReport>,
}

#[derive(Debug, Serialize)]
struct LockReport {
    lock: String,
    slots: u32,
    used: u32,
    available: u32,
    holders: Vec<HolderReport>,
}

#[derive(Debug, Serialize)]
struct HolderReport {
    slot: u32,
    owner: String,
    fence: u64,
    /// By the store's clock.
    acquired_at: String,
    /// By the store's clock.
    expires_at: String,
    /// `expires_at` minus this machine's clock, in milliseconds (0 if past).
    time_left_ms: u64,
}

impl From<&LockState> for LockReport {
    fn from(s: &LockState) -> Self {
        Self {
            lock: s.lock.to_string(),
            slots: s.slots,
            used: s.active(),
            available: s.available(),
            holders: s.holders.iter().map(HolderReport::from).collect(),
        }
    }
}

impl From<&Holder> for HolderReport {
    fn from(h: &Holder) -> Self {
        Self {
            slot: h.slot,
            owner: h.owner.clone(),
            fence: h.fence,
            acquired_at: rfc3339(h.acquired_at),
            expires_at: rfc3339(h.expires_at),
            time_left_ms: u64::try_from(until(h.expires_at).as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// Runs `leasehold status`.
pub(crate) async fn status(args: StatusArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    let store = url.open().await?;
    let mut states = Vec::with_capacity(args.locks.len());
    for lock in &args.locks {
        states.push(store.state(lock, args.slots).await?);
    }
    let written = if args.json {
        let report = Report {
            store: url.redacted(),
            checked_at: rfc3339(SystemTime::now()),
            locks: states.iter().map(LockReport::from).collect(),
        };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::usage(format!("cannot encode the status as JSON: {e}")))?;
        say::out(&text)
    } else {
        say::out(&text_report(&states))
    };
    if !written {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok(ExitCode::SUCCESS)
}

/// The human-readable report: one line per lock, one indented line per holder.
fn text_report(states: &[LockState]) -> String {
    let mut lines = Vec::new();
    for s in states {
        let summary = if s.is_free() { "free" } else { "held" };
        lines.push(format!(
            "{}: {summary} ({} of {} slots used, {} available)",
            s.lock,
            s.active(),
            s.slots,
            s.available()
        ));
        for h in &s.holders {
            lines.push(format!(
                "  slot {}  owner {}  fence {}  acquired {}  expires {}  ({} left by this machine's clock)",
                h.slot,
                printable(&h.owner),
                h.fence,
                rfc3339(h.acquired_at),
                rfc3339(h.expires_at),
                human(until(h.expires_at)),
            ));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::LockName;
    use std::time::Duration;

    fn state() -> Result<LockState, leasehold::NameError> {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400);
        Ok(LockState {
            lock: LockName::new("job")?,
            slots: 2,
            holders: vec![Holder {
                slot: 1,
                owner: "h\"ost\n:1".to_owned(),
                fence: 7,
                acquired_at: t,
                expires_at: t + Duration::from_secs(60),
            }],
        })
    }

    #[test]
    fn json_is_escaped_and_complete() -> Result<(), Box<dyn std::error::Error>> {
        let s = state()?;
        let report = LockReport::from(&s);
        let text = serde_json::to_string(&report)?;
        let back: serde_json::Value = serde_json::from_str(&text)?;
        assert_eq!(back["holders"][0]["owner"], "h\"ost\n:1");
        assert_eq!(back["used"], 1);
        assert_eq!(back["available"], 1);
        assert_eq!(back["holders"][0]["expires_at"], "1970-01-02T00:01:00.000Z");
        assert_eq!(back["holders"][0]["time_left_ms"], 0);
        Ok(())
    }

    #[test]
    fn text_escapes_control_characters() -> Result<(), Box<dyn std::error::Error>> {
        let text = text_report(&[state()?]);
        assert!(
            text.starts_with("job: held (1 of 2 slots used, 1 available)"),
            "{text}"
        );
        assert!(
            text.contains("owner h\\\"ost\\n:1") || text.contains("owner h\"ost\\n:1"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 2);
        Ok(())
    }
}
