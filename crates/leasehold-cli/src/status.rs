//! `leasehold status`: who holds which lock, as text or JSON; `status --all`: every lock that
//! has holders.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::SystemTime;

use leasehold::store::{ListCursor, MAX_LIST_LOCKS};
use leasehold::{Holder, LeaseStore, LockName, PeriodRecord};
use serde::Serialize;

use crate::args::StatusArgs;
use crate::exit::Failure;
use crate::say;
use crate::store::StoreUrl;
use crate::time_text::{human, printable, rfc3339, until};

/// The most store calls (pages) one `status --all` makes before it stops and prints where to
/// continue: each page reads at most [`MAX_LIST_SCAN`](leasehold::store::MAX_LIST_SCAN) records,
/// so one run reads at most 20 times that.
pub(crate) const MAX_STATUS_PAGES: usize = 20;

/// The JSON document `status --json` prints.
#[derive(Debug, Serialize)]
struct Report {
    /// The store, with secrets redacted.
    store: String,
    /// When this machine took the snapshot (its clock), RFC 3339 UTC.
    checked_at: String,
    locks: Vec<LockReport>,
    /// With `--all`: whether the listing reached the end, and where to continue if not.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    listing: Option<ListingReport>,
}

#[derive(Debug, Serialize)]
struct ListingReport {
    /// True when every lock with holders is in `locks`.
    complete: bool,
    /// The cursor for `--after` when not complete.
    next: Option<String>,
}

#[derive(Debug, Serialize)]
struct LockReport {
    lock: String,
    /// The slots looked at (`--slots`); `null` when every slot was (the group size is not
    /// known to the store).
    slots: Option<u32>,
    used: u32,
    /// Free slots among `slots`; `null` with `slots`.
    available: Option<u32>,
    holders: Vec<HolderReport>,
    /// The lock's period ledger record (its latest `--once-per` claim, and its latest run);
    /// `null` for a lock never claimed with a period.
    ledger: Option<LedgerReport>,
}

#[derive(Debug, Serialize)]
struct LedgerReport {
    /// The period id, under the length the claim was made with.
    period: i64,
    /// The window claimed, by the store's clock.
    from: String,
    until: String,
    length_ms: u64,
    /// `"ran"` once the claim's command started; `"claimed"` until then (a claim that never
    /// started is taken over by the next claim of its period once its lease ends).
    state: &'static str,
    /// When the claim was granted, by the store's clock, and to whom.
    at: String,
    by: String,
    /// When the lock's latest run was granted (`at` once this claim ran; an earlier claim's
    /// grant while this one has not); `null` when no run is known.
    last_run: Option<String>,
}

impl From<&PeriodRecord> for LedgerReport {
    fn from(r: &PeriodRecord) -> Self {
        Self {
            period: r.period,
            from: rfc3339(r.from),
            until: rfc3339(r.until),
            length_ms: u64::try_from(r.length().as_millis()).unwrap_or(u64::MAX),
            state: if r.started { "ran" } else { "claimed" },
            at: rfc3339(r.at),
            by: r.by.clone(),
            last_run: r.last_run().map(rfc3339),
        }
    }
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

/// One lock as shown: its holders, and the slots looked at when `--slots` was given.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    lock: LockName,
    slots: Option<u32>,
    holders: Vec<Holder>,
    /// The period ledger record, for locks named on the command line.
    ledger: Option<PeriodRecord>,
}

impl Shown {
    fn used(&self) -> u32 {
        u32::try_from(self.holders.len()).unwrap_or(u32::MAX)
    }
}

impl From<&Shown> for LockReport {
    fn from(s: &Shown) -> Self {
        Self {
            lock: s.lock.to_string(),
            slots: s.slots,
            used: s.used(),
            available: s.slots.map(|n| n.saturating_sub(s.used())),
            holders: s.holders.iter().map(HolderReport::from).collect(),
            ledger: s.ledger.as_ref().map(LedgerReport::from),
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

/// What `--all` found: the locks, and the cursor to continue from if it stopped early.
#[derive(Debug, Default)]
struct Listing {
    locks: Vec<Shown>,
    next: Option<ListCursor>,
}

/// Runs `leasehold status`.
pub(crate) async fn status(args: StatusArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    if args.after.is_some() && !args.all {
        // clap's `requires` cannot see an absent `--all` (a flag always has a value).
        return Err(Failure::usage(
            "--after continues a listing: give it with --all (`leasehold status --all --after CURSOR`)",
        ));
    }
    let store = url.open_shared(std::time::Duration::ZERO).await?;
    let (shown, listing) = if args.all {
        let mut listing = list(store.as_ref(), args.after).await?;
        // Each listed lock's ledger too: one read per lock, at most MAX_LIST_LOCKS of them.
        for shown in &mut listing.locks {
            shown.ledger = store.period_record(&shown.lock).await?;
        }
        (listing.locks, Some(listing.next))
    } else {
        let mut shown = Vec::with_capacity(args.locks.len());
        for lock in args.locks {
            let holders = match args.slots {
                Some(n) => store.state(&lock, n).await?.holders,
                None => store.holders(&lock).await?,
            };
            let ledger = store.period_record(&lock).await?;
            shown.push(Shown {
                lock,
                slots: args.slots,
                holders,
                ledger,
            });
        }
        (shown, None)
    };
    let written = if args.json {
        let report = Report {
            store: url.redacted(),
            checked_at: rfc3339(SystemTime::now()),
            locks: shown.iter().map(LockReport::from).collect(),
            listing: listing.as_ref().map(|next| ListingReport {
                complete: next.is_none(),
                next: next.as_ref().map(ToString::to_string),
            }),
        };
        let text = say::json(&report, true)
            .map_err(|e| Failure::usage(format!("cannot encode the status as JSON: {e}")))?;
        say::out_json(&text)
    } else {
        let mut text = text_report(&shown);
        if let Some(next) = &listing {
            text = listing_text(text, next.as_ref());
        }
        say::out(&text)
    };
    if !written {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok(ExitCode::SUCCESS)
}

/// Follows the store's listing from `after` until it ends, [`MAX_LIST_LOCKS`] locks were found
/// or [`MAX_STATUS_PAGES`] pages were read; locks sorted by name, pages merged by name (a store
/// may list a lock in more than one page).
async fn list(store: &dyn LeaseStore, after: Option<ListCursor>) -> Result<Listing, Failure> {
    let mut found: BTreeMap<LockName, Vec<Holder>> = BTreeMap::new();
    let mut next = after;
    for _ in 0..MAX_STATUS_PAGES {
        let page = store.list_locks(next.as_ref()).await?;
        for listed in page.locks {
            let holders = found.entry(listed.lock).or_default();
            for h in listed.holders {
                if !holders.iter().any(|x| x.slot == h.slot) {
                    holders.push(h);
                }
            }
        }
        next = page.next;
        if next.is_none() || found.len() >= MAX_LIST_LOCKS {
            break;
        }
    }
    Ok(Listing {
        locks: found
            .into_iter()
            .map(|(lock, mut holders)| {
                holders.sort_by_key(|h| h.slot);
                Shown {
                    lock,
                    slots: None,
                    holders,
                    ledger: None,
                }
            })
            .collect(),
        next,
    })
}

/// The human-readable report: one line per lock, one indented line per holder.
fn text_report(shown: &[Shown]) -> String {
    let mut lines = Vec::new();
    for s in shown {
        let summary = if s.holders.is_empty() { "free" } else { "held" };
        let used = s.used();
        lines.push(match s.slots {
            Some(slots) => format!(
                "{}: {summary} ({used} of {slots} slots used, {} available)",
                s.lock,
                slots.saturating_sub(used)
            ),
            None if used == 0 => format!("{}: free", s.lock),
            None => format!(
                "{}: held ({used} holder{})",
                s.lock,
                if used == 1 { "" } else { "s" }
            ),
        });
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
        if let Some(r) = &s.ledger {
            lines.push(ledger_line(r));
        }
    }
    lines.join("\n")
}

/// The period ledger's line under a lock: the latest claim's window, and whether it ran.
fn ledger_line(r: &PeriodRecord) -> String {
    format!("  period ledger: {}", ledger_text(r))
}

/// A ledger record as text: the latest claim's window, whether it ran, when and to whom it was
/// granted, and the latest run when that was another claim. What `status` shows under a lock,
/// and what `clear-ledger` says it cleared.
pub(crate) fn ledger_text(r: &PeriodRecord) -> String {
    let state = if r.started {
        "ran"
    } else {
        "claimed, not run (the next claim of this period takes it over once its lease ends)"
    };
    let mut line = format!(
        "period {} ({} to {}, periods of {}) {state}: granted at {} to {}",
        r.period,
        rfc3339(r.from),
        rfc3339(r.until),
        human(r.length()),
        rfc3339(r.at),
        printable(&r.by),
    );
    if let Some(ran) = r.last_run().filter(|_| !r.started) {
        line.push_str(&format!("; the last run was granted at {}", rfc3339(ran)));
    }
    line
}

/// `status --all`'s text: the report (or a line saying nothing is held), then where to continue
/// when the listing stopped early.
fn listing_text(report: String, next: Option<&ListCursor>) -> String {
    let mut text = match (report.is_empty(), next) {
        (false, _) => report,
        (true, None) => "no lock has a holder".to_owned(),
        (true, Some(_)) => "no lock with holders in the part of the store read so far".to_owned(),
    };
    if let Some(next) = next {
        text.push_str(&format!(
            "\n(more locks may have holders: continue with `leasehold status --all --after {}`)",
            shell_word(next.as_str())
        ));
    }
    text
}

/// `text` as one shell word: as it is when it holds only characters no shell treats specially,
/// else in single quotes (a cursor is printable ASCII, and may hold any of it).
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "%+,-./:=@_".contains(c);
    if text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn shown(slots: Option<u32>) -> Result<Shown, leasehold::error::NameError> {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400);
        Ok(Shown {
            lock: LockName::new("job")?,
            slots,
            holders: vec![Holder {
                slot: 1,
                owner: "h\"ost\n:1".to_owned(),
                fence: 7,
                acquired_at: t,
                expires_at: t + Duration::from_secs(60),
            }],
            ledger: None,
        })
    }

    #[test]
    fn json_is_escaped_and_complete() -> Result<(), Box<dyn std::error::Error>> {
        let s = shown(Some(2))?;
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
    fn without_slots_the_counts_of_free_slots_are_unknown() -> Result<(), Box<dyn std::error::Error>>
    {
        let back = serde_json::to_value(LockReport::from(&shown(None)?))?;
        assert_eq!(back["slots"], serde_json::Value::Null);
        assert_eq!(back["available"], serde_json::Value::Null);
        assert_eq!(back["used"], 1);
        let text = text_report(&[shown(None)?]);
        assert!(
            text.starts_with("job: held (1 holder)\n  slot 1 "),
            "{text}"
        );
        let free = Shown {
            holders: Vec::new(),
            ..shown(None)?
        };
        assert_eq!(text_report(&[free]), "job: free");
        Ok(())
    }

    #[test]
    fn the_ledger_tells_ran_from_claimed() -> Result<(), Box<dyn std::error::Error>> {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(3_600);
        let record = PeriodRecord {
            period: 1,
            from: t,
            until: t + Duration::from_secs(3_600),
            at: t + Duration::from_secs(5),
            by: "web-1".to_owned(),
            started: false,
            ran_at: None,
        };
        let claimed = Shown {
            ledger: Some(record.clone()),
            holders: Vec::new(),
            ..shown(None)?
        };
        let text = text_report(std::slice::from_ref(&claimed));
        assert!(text.contains("period 1 (1970-01-01T01:00:00.000Z to 1970-01-01T02:00:00.000Z, periods of 1h00m) claimed, not run"), "{text}");
        let back = serde_json::to_value(LockReport::from(&claimed))?;
        assert_eq!(back["ledger"]["state"], "claimed");
        assert_eq!(back["ledger"]["length_ms"], 3_600_000);
        assert!(back["ledger"]["last_run"].is_null());
        // A claim that has not run, after a run granted at 01:00:01 (of another period length).
        let after_a_run = Shown {
            ledger: Some(PeriodRecord {
                ran_at: Some(t + Duration::from_secs(1)),
                ..record.clone()
            }),
            holders: Vec::new(),
            ..shown(None)?
        };
        let text = text_report(std::slice::from_ref(&after_a_run));
        assert!(
            text.contains("; the last run was granted at 1970-01-01T01:00:01.000Z"),
            "{text}"
        );
        let back = serde_json::to_value(LockReport::from(&after_a_run))?;
        assert_eq!(back["ledger"]["last_run"], "1970-01-01T01:00:01.000Z");
        let ran = Shown {
            ledger: Some(PeriodRecord {
                started: true,
                ran_at: Some(t + Duration::from_secs(5)),
                ..record
            }),
            ..claimed
        };
        assert!(
            text_report(std::slice::from_ref(&ran))
                .contains(") ran: granted at 1970-01-01T01:00:05.000Z to web-1")
        );
        assert_eq!(
            serde_json::to_value(LockReport::from(&ran))?["ledger"]["state"],
            "ran"
        );
        Ok(())
    }

    #[test]
    fn text_escapes_control_characters() -> Result<(), Box<dyn std::error::Error>> {
        let text = text_report(&[shown(Some(2))?]);
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

    #[test]
    fn listings_say_where_to_continue_as_one_shell_word() -> Result<(), Box<dyn std::error::Error>>
    {
        assert_eq!(listing_text(String::new(), None), "no lock has a holder");
        let next = ListCursor::new("reports/daily")?;
        let text = listing_text("a: held (1 holder)".to_owned(), Some(&next));
        assert!(
            text.ends_with("continue with `leasehold status --all --after reports/daily`)"),
            "{text}"
        );
        assert_eq!(shell_word("12,a.b"), "12,a.b");
        assert_eq!(shell_word("it's#1"), r"'it'\''s#1'");
        assert_eq!(shell_word("~7a"), "'~7a'");
        Ok(())
    }
}
