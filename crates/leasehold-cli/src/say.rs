//! leasehold's own messages: one line each, prefixed `leasehold:` on stderr, results on stdout,
//! always passed through the [`Scrubber`] of the store URL in use.

use std::io::Write;
use std::sync::OnceLock;

use leasehold::LockName;

use crate::store::{Scrubber, redact_urls_in};

static SCRUBBER: OnceLock<Scrubber> = OnceLock::new();

/// Sets the scrubber for the rest of the process (the first call wins).
pub(crate) fn set_scrubber(scrubber: Scrubber) {
    let _ = SCRUBBER.set(scrubber);
}

/// `text` with the store's secrets removed, for text that is written elsewhere than through
/// [`out`] and [`err`] (such as a history file).
pub(crate) fn scrubbed(text: &str) -> String {
    scrub(text)
}

fn scrub(text: &str) -> String {
    SCRUBBER
        .get()
        .map_or_else(|| redact_urls_in(text), |s| s.scrub(text))
}

/// Raw text to stderr (no prefix), scrubbed: for clap's usage errors.
pub(crate) fn raw_err(text: &str) {
    let _ = write!(std::io::stderr().lock(), "{}", scrub(text));
}

/// A message to stderr: `leasehold: <text>`.
pub(crate) fn err(text: &str) {
    // A closed stderr must not turn into a panic: ignore write errors.
    let _ = writeln!(std::io::stderr().lock(), "leasehold: {}", scrub(text));
}

/// The one line that reports a lost lease, whichever way it was lost:
/// `leasehold: lease on lock NAME lost (CAUSE); CONSEQUENCE`. Callers print it once per loss.
pub(crate) fn lost(lock: &LockName, cause: &str, consequence: &str) {
    err(&format!(
        "lease on lock {lock} lost ({cause}); {consequence}"
    ));
}

/// A generated document to stdout as it is (help text, a completion script, a manual page): it
/// holds no store data, and its example URLs must stay intact. Returns false if stdout is closed.
pub(crate) fn document(text: &str) -> bool {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_ok()
}

/// A result to stdout. Returns false if stdout is closed (e.g. a pipe reader went away).
pub(crate) fn out(text: &str) -> bool {
    write_out(&scrub(text))
}

fn write_out(text: &str) -> bool {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")
        .and_then(|()| stdout.flush())
        .is_ok()
}

/// `value` as JSON (pretty: indented) with the store's secrets removed from its strings. The
/// strings are scrubbed before they are encoded, never the encoded text: a secret holding a
/// character that JSON escapes (`"`, `\`) would not match its escaped form, and a secret that
/// equals a key (a password `slot`) would mangle the document.
pub(crate) fn json(value: &impl serde::Serialize, pretty: bool) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(value)?;
    scrub_strings(&mut value);
    if pretty {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    }
}

/// Scrubs every string in `value` (the keys are the program's field names, not data).
fn scrub_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => *text = scrub(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(scrub_strings),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(scrub_strings),
        _ => {}
    }
}

/// A JSON document from [`json`] to stdout, as it is. Returns false if stdout is closed.
pub(crate) fn out_json(text: &str) -> bool {
    write_out(text)
}
