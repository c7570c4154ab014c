//! The verify report: a readable summary on stdout, and with `--json PATH` the full history, one
//! operation per line, ending with the summary.

use std::io::Write;
use std::path::Path;

use leasehold::LockName;
use serde::Serialize;

use super::check::Findings;
use super::history::Op;
use crate::args::VerifyArgs;
use crate::exit::Failure;
use crate::say;
use crate::store::StoreUrl;

/// Violations listed in the text report (all are in the JSON summary).
const LISTED: usize = 10;

/// What a run did and found.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    op: &'static str,
    store: String,
    lock: String,
    contenders: usize,
    duration_ms: u128,
    lease_ms: u128,
    pause_percent: u8,
    fence_check: bool,
    proxy_cuts_enabled: bool,
    #[serde(flatten)]
    findings: Findings,
    /// Holders of the lock left after the run (and after stranded leases had time to expire).
    leaked_locks: u32,
    passed: bool,
}

impl Summary {
    pub(crate) fn new(
        args: &VerifyArgs,
        url: &StoreUrl,
        lock: &LockName,
        findings: Findings,
        leaked_locks: u32,
    ) -> Self {
        // A run in which nothing was granted shows nothing: it cannot pass.
        let passed = findings.violations.is_empty() && leaked_locks == 0 && findings.runs > 0;
        Self {
            op: "summary",
            store: url.redacted(),
            lock: lock.to_string(),
            contenders: args.contenders,
            duration_ms: args.duration.as_millis(),
            lease_ms: args.lease.as_millis(),
            pause_percent: args.pause_percent,
            fence_check: !args.no_fence_check,
            proxy_cuts_enabled: args.proxy_cuts,
            findings,
            leaked_locks,
            passed,
        }
    }

    /// No violation, nothing leaked, and something ran.
    pub(crate) fn passed(&self) -> bool {
        self.passed
    }

    fn text(&self) -> String {
        let f = &self.findings;
        let mut t = format!(
            "leasehold verify: {} contenders on lock {} at {} for {} ms, lease {} ms, \
             {}% of holders frozen for 1.5-3 leases before writing, fence check {}{}\n",
            self.contenders,
            self.lock,
            self.store,
            self.duration_ms,
            self.lease_ms,
            self.pause_percent,
            if self.fence_check { "on" } else { "OFF" },
            if self.proxy_cuts_enabled {
                ", connections cut by a proxy"
            } else {
                ""
            },
        );
        let rows: [(&str, u64, &str); 10] = [
            ("runs", f.runs, "leases granted"),
            ("skips", f.skips, "attempts that found the lock held"),
            (
                "store errors",
                f.store_errors,
                "failed attempts (expected with proxy cuts)",
            ),
            ("pauses", f.pauses, "holders frozen past their lease"),
            ("proxy cuts", f.proxy_cuts, ""),
            ("writes accepted", f.writes_accepted, ""),
            (
                "stale writes rejected",
                f.stale_writes_rejected,
                "the fence check at work",
            ),
            (
                "stale writes accepted",
                f.stale_writes_accepted,
                "lost updates",
            ),
            ("violations", f.violations.len() as u64, ""),
            (
                "leaked locks",
                u64::from(self.leaked_locks),
                "holders left after the run",
            ),
        ];
        for (name, n, note) in rows {
            let note = if note.is_empty() {
                String::new()
            } else {
                format!("  ({note})")
            };
            t.push_str(&format!("  {name:<22}{n:>8}{note}\n"));
        }
        if self.passed {
            t.push_str("PASS: no violation, no leaked lock");
        } else {
            t.push_str(&format!(
                "FAIL: {} violation(s), {} leaked lock(s)",
                f.violations.len(),
                self.leaked_locks
            ));
            if f.runs == 0 {
                t.push_str(&format!(
                    "; no lease was granted in the whole run ({} store errors), so it shows nothing",
                    f.store_errors
                ));
            }
            for v in f.violations.iter().take(LISTED) {
                t.push_str(&format!("\n  - {v}"));
            }
            if f.violations.len() > LISTED {
                t.push_str(&format!(
                    "\n  … and {} more (--json PATH writes every one)",
                    f.violations.len() - LISTED
                ));
            }
            if !self.fence_check {
                t.push_str(
                    "\n  (--no-fence-check was given: the register accepted stale writes on purpose)",
                );
            }
        }
        t
    }
}

/// Where the history goes (`--json`), opened before the run so a bad path fails at once.
#[derive(Debug)]
pub(crate) enum HistoryOut {
    /// No `--json`.
    Nowhere,
    /// `--json -`: the history on stdout, the summary text on stderr.
    Stdout,
    /// `--json PATH`.
    File(std::fs::File, std::path::PathBuf),
}

impl HistoryOut {
    /// Opens (creates or truncates) the `--json` file, if any.
    pub(crate) fn open(json: Option<&Path>) -> Result<Self, Failure> {
        Ok(match json {
            None => Self::Nowhere,
            Some(p) if p == Path::new("-") => Self::Stdout,
            Some(p) => Self::File(
                std::fs::File::create(p).map_err(|e| {
                    Failure::usage(format!("--json: cannot create {}: {e}", p.display()))
                })?,
                p.to_owned(),
            ),
        })
    }
}

/// Prints the summary (to stderr when the history goes to stdout) and writes the history.
pub(crate) fn write(summary: &Summary, ops: &[Op], out: HistoryOut) -> Result<(), Failure> {
    if !matches!(out, HistoryOut::Nowhere) {
        let mut lines = Vec::new();
        for line in ops
            .iter()
            .map(|op| say::json(op, false))
            .chain([say::json(summary, false)])
        {
            lines
                .push(line.map_err(|e| Failure::usage(format!("cannot encode the history: {e}")))?);
        }
        let text = lines.join("\n") + "\n";
        match &out {
            HistoryOut::Stdout => {
                say::out_json(text.trim_end());
            }
            HistoryOut::File(file, path) => {
                let mut file = file;
                file.write_all(text.as_bytes()).map_err(|e| {
                    Failure::usage(format!(
                        "cannot write the history to {}: {e}",
                        path.display()
                    ))
                })?;
            }
            HistoryOut::Nowhere => {}
        }
    }
    if matches!(out, HistoryOut::Stdout) {
        for line in summary.text().lines() {
            say::err(line);
        }
    } else {
        say::out(&summary.text());
    }
    Ok(())
}
