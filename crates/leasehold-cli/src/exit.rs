//! Exit codes, and the failures of leasehold itself that map to them.
//!
//! The scheme follows `timeout(1)` and `env(1)`: leasehold's own codes sit at the top of the
//! range (124–127) and signals at 128+N, so that the command's ordinary codes pass through.

use std::process::{ExitCode, ExitStatus};

use leasehold::{
    Error, ErrorKind,
    store::{OpenError, StoreError},
};

/// The store could not be reached or failed transiently (`EX_TEMPFAIL`): try again later.
pub(crate) const STORE_UNAVAILABLE: u8 = 75;
/// The command finished on its own, but the lease had run out before leasehold saw it finish
/// (leasehold was stopped or starved, or only the final release found the lease gone), so
/// exclusivity was not guaranteed.
pub(crate) const LOST_BEFORE_END: u8 = 123;
/// The lease was lost while the command ran, and leasehold stopped the command.
pub(crate) const LEASE_LOST: u8 = 124;
/// leasehold's own failure: bad usage or configuration, or a permanent store error.
pub(crate) const USAGE: u8 = 125;
/// The command was found but could not be executed.
pub(crate) const CANNOT_EXECUTE: u8 = 126;
/// The command was not found.
pub(crate) const NOT_FOUND: u8 = 127;
/// Exit code base for "ended by signal N": 128 + N.
pub(crate) const SIGNAL_BASE: u8 = 128;

/// The exit-code table, shown by `--help` (and mirrored in docs/leasehold-cli.md).
pub(crate) const TABLE: &str = "\
Exit codes (`leasehold run`):
  0-255   the command's own exit code, passed through unchanged
  S       lock held elsewhere, command not run: S = --skipped-exit-code (default 0)
  75      store unreachable or failing transiently (EX_TEMPFAIL); command not run
  123     the command finished, but the lease ran out before leasehold saw it
          finish (leasehold was stopped or starved, or the release found it gone):
          exclusivity not guaranteed
  124     lease lost while the command ran; leasehold stopped the command
  125     leasehold's own error: bad flags, lock name, durations or store URL,
          or a permanent store error (authentication, permissions, unsupported)
  126     the command was found but could not be executed
  127     the command was not found
  128+N   the command was ended by signal N (143 after a forwarded SIGTERM), or
          leasehold got signal N while waiting for the lock (command not run)

`status`, `release` and `clear-ledger` exit 0 on success, 75 or 125 as above.

Codes can collide: a command that itself exits 75 or 123-127 cannot be told apart from
leasehold's codes. If that matters, have the command avoid those codes, and pick a distinct
--skipped-exit-code (0 is the cron-friendly default: a skip is not an error).";

/// A failure of leasehold itself (not of the command), with its exit code and message.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// A usage or configuration error (exit 125).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: USAGE,
            message: message.into(),
        }
    }

    /// A store error: transient ones are "unavailable" (75), permanent ones configuration (125).
    pub(crate) fn store(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message = message.into();
        match kind {
            ErrorKind::Transient => Self {
                code: STORE_UNAVAILABLE,
                message: format!("store unavailable: {message}"),
            },
            ErrorKind::Permanent => Self {
                code: USAGE,
                message: format!("store error: {message}"),
            },
        }
    }

    /// The command could not be started: 127 if it was not found, 126 otherwise.
    pub(crate) fn spawn(not_found: bool, message: impl Into<String>) -> Self {
        Self {
            code: if not_found { NOT_FOUND } else { CANNOT_EXECUTE },
            message: message.into(),
        }
    }

    /// Interrupted by signal `signal` before the command started (128 + N).
    pub(crate) fn interrupted(signal: i32, message: impl Into<String>) -> Self {
        Self {
            code: signal_code(signal),
            message: message.into(),
        }
    }

    /// The exit code.
    pub(crate) fn code(&self) -> u8 {
        self.code
    }

    /// The message, without the `leasehold:` prefix.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match &e {
            Error::Store { source, .. } => Self::store(source.kind(), e.to_string()),
            _ => Self::usage(e.to_string()),
        }
    }
}

impl From<OpenError> for Failure {
    fn from(e: OpenError) -> Self {
        match &e {
            OpenError::Connect { source, .. } => Self::store(source.kind(), e.to_string()),
            _ => Self::usage(e.to_string()),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Self::store(e.kind(), e.to_string())
    }
}

/// The exit code that reports how the command ended: its own code, or 128 + the signal number.
pub(crate) fn of_status(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(USAGE),
        (None, Some(signal)) => signal_code(signal),
        (None, None) => USAGE,
    }
}

/// How the command ended, for messages: `exit code N` or `killed by signal N`.
pub(crate) fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

/// 128 + N for signal N (saturating; signal numbers are small).
pub(crate) fn signal_code(signal: i32) -> u8 {
    u8::try_from(signal)
        .map(|n| SIGNAL_BASE.saturating_add(n))
        .unwrap_or(u8::MAX)
}

/// `ExitCode` from a numeric code.
pub(crate) fn code(n: u8) -> ExitCode {
    ExitCode::from(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn statuses_map_to_codes() {
        assert_eq!(of_status(ExitStatus::from_raw(7 << 8)), 7);
        assert_eq!(of_status(ExitStatus::from_raw(0)), 0);
        assert_eq!(of_status(ExitStatus::from_raw(15)), 143);
        assert_eq!(of_status(ExitStatus::from_raw(9)), 137);
    }

    #[test]
    fn store_errors_split_by_kind() {
        let t = Failure::from(StoreError::transient("refused"));
        assert_eq!(t.code(), STORE_UNAVAILABLE);
        let p = Failure::from(StoreError::permanent("denied"));
        assert_eq!(p.code(), USAGE);
    }

    #[test]
    fn our_codes_do_not_collide() {
        let ours = [
            STORE_UNAVAILABLE,
            LOST_BEFORE_END,
            LEASE_LOST,
            USAGE,
            CANNOT_EXECUTE,
            NOT_FOUND,
        ];
        for (i, a) in ours.iter().enumerate() {
            assert!(ours[i + 1..].iter().all(|b| a != b));
            assert!(*a < SIGNAL_BASE);
        }
    }
}
