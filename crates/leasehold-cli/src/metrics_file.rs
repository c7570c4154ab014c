//! `run --metrics-file PATH`: the outcome of a run in node_exporter's textfile-collector format
//! (the Prometheus text format), written atomically after the run, for cron monitoring.
//!
//! Every run (ran, skipped or failed) rewrites the file for its lock; the last success time is
//! read back from the file and kept when this run did not succeed.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use leasehold::LockName;
// The `leasehold_job_*` gauges of the file, with their help texts in leasehold's registry
// (`leasehold::metrics::FAMILIES`, source `RunFile`), in the order written.
use leasehold::metrics::{
    RUN_EXIT_CODE as EXIT_CODE, RUN_FENCE as FENCE, RUN_LAST_DURATION_SECONDS as DURATION,
    RUN_LAST_RUN_TIMESTAMP_SECONDS as LAST_RUN, RUN_LAST_SUCCESS_TIMESTAMP_SECONDS as LAST_SUCCESS,
    RUN_RAN as RAN, RUN_SKIPPED as SKIPPED, RUN_START_TIMESTAMP_SECONDS as START, Source,
    families_of,
};

use crate::exit::Failure;
use crate::say;

/// The file, checked before the run.
#[derive(Debug)]
pub(crate) struct MetricsFile {
    path: PathBuf,
    /// Where the new content is written before it is renamed over `path`: same directory, a
    /// name that node_exporter ignores (it reads `*.prom` only).
    temp: PathBuf,
}

/// What one `leasehold run` did, for the file.
#[derive(Debug)]
pub(crate) struct RunRecord {
    /// When `leasehold run` started (this machine's clock).
    pub(crate) started: SystemTime,
    started_clock: Instant,
    /// leasehold's exit code.
    pub(crate) exit_code: u8,
    /// The lock was held elsewhere, or the period had already run: the command was not run.
    pub(crate) skipped: bool,
    /// The fence of the lease this node acquired, if it did.
    pub(crate) fence: Option<u64>,
    /// The command was started.
    pub(crate) ran: bool,
}

impl RunRecord {
    /// A record of a run starting now, before anything happened.
    pub(crate) fn starting() -> Self {
        Self {
            started: SystemTime::now(),
            started_clock: Instant::now(),
            exit_code: 0,
            skipped: false,
            fence: None,
            ran: false,
        }
    }

    /// The command ran and exited 0.
    fn succeeded(&self) -> bool {
        self.ran && self.exit_code == 0
    }
}

impl MetricsFile {
    /// Checks `path` before anything runs: it names a file (not a directory) in a directory that
    /// exists. A usage error (exit 125) otherwise.
    pub(crate) fn at(path: &Path) -> Result<Self, Failure> {
        let shown = path.display();
        let Some(name) = path.file_name() else {
            return Err(Failure::usage(format!(
                "--metrics-file {shown}: not a file name (expected e.g. \
                 /var/lib/node_exporter/textfile/JOB.prom)"
            )));
        };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "--metrics-file {shown}: the directory {} does not exist (create it first; \
                 node_exporter's --collector.textfile.directory is the usual place)",
                dir.display()
            )));
        }
        if path.is_dir() {
            return Err(Failure::usage(format!(
                "--metrics-file {shown}: is a directory; give a file name such as JOB.prom"
            )));
        }
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}.tmp", std::process::id()));
        Ok(Self {
            path: path.to_owned(),
            temp: dir.join(temp_name),
        })
    }

    /// Writes `record` for `lock`, keeping the last success time found in the file when this run
    /// did not succeed. A failure is reported on stderr and does not change the exit code: the
    /// command's outcome is what matters.
    pub(crate) fn write(&self, lock: &LockName, record: &RunRecord) {
        let ended = SystemTime::now();
        let last_success = if record.succeeded() {
            Some(seconds(ended))
        } else {
            fs::read_to_string(&self.path)
                .ok()
                .and_then(|text| read_value(&text, LAST_SUCCESS, lock))
        };
        let text = render(lock, record, ended, last_success);
        if let Err(e) = self.replace(&text) {
            let _ = fs::remove_file(&self.temp);
            say::err(&format!(
                "cannot write --metrics-file {}: {e}",
                self.path.display()
            ));
        }
    }

    /// Writes `text` to the temporary file, then renames it over the file: a reader sees the old
    /// content or the new, never part of it.
    fn replace(&self, text: &str) -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&self.temp, &self.path)
    }
}

/// The file's content: every family of the registry's `RunFile` source that has a value, with
/// its HELP and TYPE lines.
fn render(lock: &LockName, r: &RunRecord, ended: SystemTime, last_success: Option<f64>) -> String {
    let duration = r.started_clock.elapsed().as_secs_f64();
    // Exact up to 2^53, as every Prometheus sample is a float.
    #[allow(clippy::cast_precision_loss)]
    let fence = r.fence.map(|f| f as f64);
    let value = |name: &str| match name {
        START => Some(seconds(r.started)),
        LAST_RUN => Some(seconds(ended)),
        LAST_SUCCESS => last_success,
        DURATION => Some(duration),
        EXIT_CODE => Some(f64::from(r.exit_code)),
        RAN => Some(bool_value(r.ran)),
        SKIPPED => Some(bool_value(r.skipped)),
        FENCE => fence,
        _ => None,
    };
    let label = escape_label(lock.as_str());
    let mut text = String::new();
    for family in families_of(Source::RunFile) {
        let Some(value) = value(family.name) else {
            continue;
        };
        let name = family.name;
        let _ = writeln!(text, "# HELP {name} {}", family.help);
        let _ = writeln!(text, "# TYPE {name} {}", family.kind.as_str());
        let _ = writeln!(text, "{name}{{lock=\"{label}\"}} {}", number(value));
    }
    text
}

/// The value of `name{lock="LOCK"}` in a file this module wrote.
fn read_value(text: &str, name: &str, lock: &LockName) -> Option<f64> {
    let series = format!("{name}{{lock=\"{}\"}}", escape_label(lock.as_str()));
    text.lines()
        .filter_map(|line| line.split_once(' '))
        .find(|(s, _)| *s == series)
        .and_then(|(_, value)| value.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

/// Unix time in seconds (negative before 1970).
fn seconds(t: SystemTime) -> f64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// A sample value: whole numbers without a fraction, others to the millisecond.
fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// A label value with `\`, `"` and newlines escaped, as the text format requires.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_success_is_read_back_for_its_lock_only() {
        let a = LockName::new("a").unwrap();
        let b = LockName::new("b").unwrap();
        let mut record = RunRecord::starting();
        record.ran = true;
        let text = render(&a, &record, SystemTime::now(), Some(1_700_000_000.25));
        assert_eq!(read_value(&text, LAST_SUCCESS, &a), Some(1_700_000_000.25));
        assert_eq!(read_value(&text, LAST_SUCCESS, &b), None);
        assert_eq!(read_value(&text, RAN, &a), Some(1.0));
        assert_eq!(read_value("garbage\n", LAST_SUCCESS, &a), None);
    }

    #[test]
    fn absent_values_leave_out_the_whole_metric() {
        let a = LockName::new("a").unwrap();
        let text = render(&a, &RunRecord::starting(), SystemTime::now(), None);
        assert!(!text.contains(LAST_SUCCESS), "{text}");
        assert!(!text.contains(FENCE), "{text}");
        assert!(
            text.contains("# TYPE leasehold_job_skipped gauge\n"),
            "{text}"
        );
    }

    #[test]
    fn every_family_of_the_registry_is_written_for_a_run_that_acquired() {
        let a = LockName::new("a").unwrap();
        let mut record = RunRecord::starting();
        record.ran = true;
        record.fence = Some(7);
        let text = render(&a, &record, SystemTime::now(), Some(1.0));
        for family in families_of(Source::RunFile) {
            let name = family.name;
            assert!(
                text.contains(&format!(
                    "# HELP {name} {}\n# TYPE {name} gauge\n",
                    family.help
                )),
                "{name}: {text}"
            );
            assert!(read_value(&text, name, &a).is_some(), "{name}: {text}");
        }
    }

    #[test]
    fn numbers_and_labels_are_written_as_the_format_wants() {
        assert_eq!(number(1_796_077_126_914_000.0), "1796077126914000");
        assert_eq!(number(0.5), "0.500");
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_missing_directory_is_a_usage_error() {
        let e = MetricsFile::at(Path::new("/nonexistent-leasehold-dir/job.prom")).unwrap_err();
        assert_eq!(e.code(), crate::exit::USAGE);
        assert!(e.message().contains("does not exist"), "{}", e.message());
        let e = MetricsFile::at(Path::new("/")).unwrap_err();
        assert_eq!(e.code(), crate::exit::USAGE);
    }
}
