//! Whether leasehold's output is coloured: `--color auto|always|never`, `$NO_COLOR` and
//! `$CLICOLOR_FORCE`, decided the same way for clap's help and errors and for the log.
//!
//! `auto` (the default) colours a stream only if it is a terminal, and never when `$NO_COLOR` is
//! set to a non-empty value (<https://no-color.org>), even with `$CLICOLOR_FORCE`: the rules of
//! clap's own `anstream`, which this module asks. Only an explicit `--color always` beats
//! `$NO_COLOR`.

use std::ffi::OsString;

use clap::ValueEnum;

/// The `--color` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ColorWhen {
    /// Colour a terminal, unless $NO_COLOR is set (non-empty)
    #[default]
    Auto,
    /// Always colour, also when $NO_COLOR is set
    Always,
    /// Never colour
    Never,
}

impl ColorWhen {
    /// The `--color` value found in `args` (a whole command line, program name first) before
    /// clap has parsed it, so that clap's own help and errors follow it too. The last
    /// `--color WHEN` or `--color=WHEN` before a bare `--` counts; anything unreadable is `auto`
    /// (clap then reports it).
    pub(crate) fn scan(args: impl IntoIterator<Item = OsString>) -> Self {
        let mut when = Self::Auto;
        let mut args = args.into_iter().skip(1);
        while let Some(arg) = args.next() {
            let Some(arg) = arg.to_str() else { continue };
            let value = match arg {
                "--" => break,
                "--color" => args.next().and_then(|v| v.into_string().ok()),
                _ => arg.strip_prefix("--color=").map(str::to_owned),
            };
            if let Some(value) = value {
                when = Self::from_str(&value, false).unwrap_or(Self::Auto);
            }
        }
        when
    }

    /// True if text written to `stream` should carry colour.
    pub(crate) fn colors<S: anstream::stream::RawStream>(self, stream: &S) -> bool {
        match self {
            Self::Always => true,
            Self::Never => false,
            Self::Auto => anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(args: &[&str]) -> ColorWhen {
        ColorWhen::scan(args.iter().map(OsString::from))
    }

    #[test]
    fn the_flag_is_found_before_parsing() {
        assert_eq!(scan(&["leasehold", "status", "a"]), ColorWhen::Auto);
        assert_eq!(
            scan(&["leasehold", "--color", "always", "status"]),
            ColorWhen::Always
        );
        assert_eq!(
            scan(&["leasehold", "status", "--color=never"]),
            ColorWhen::Never
        );
        assert_eq!(
            scan(&["leasehold", "--color=never", "--color", "always"]),
            ColorWhen::Always
        );
        assert_eq!(scan(&["leasehold", "--color", "bogus"]), ColorWhen::Auto);
        // The command's own arguments are not leasehold's.
        assert_eq!(
            scan(&[
                "leasehold",
                "run",
                "--lock",
                "a",
                "--",
                "ls",
                "--color=always"
            ]),
            ColorWhen::Auto
        );
    }

    #[test]
    fn explicit_choices_ignore_the_stream() {
        assert!(ColorWhen::Always.colors(&Vec::new()));
        assert!(!ColorWhen::Never.colors(&std::io::stderr()));
    }
}
