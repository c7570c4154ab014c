//! Text forms of durations: `500ms`, `10s`, `5m`, `1h`, `2d`, `1m30s` and ISO-8601 `PT10S`.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// The longest duration leasehold accepts: 36500 days (100 years), for every lease, wait,
/// minimum lease, extension, retry pause, job period, initial delay and grace period, and every
/// duration text ([`parse_duration`]).
///
/// Why 100 years: it is longer than any lease or wait a program means ("forever" in practice),
/// and short enough to be safe everywhere a duration goes — added to a monotonic
/// [`Instant`](std::time::Instant) on every platform (whose range is centuries from boot), to a
/// [`SystemTime`](std::time::SystemTime), in milliseconds since 1970 in the stores' 64-bit
/// columns, Redis `PX`/`PEXPIRE` arguments and Lua numbers (doubles, exact to 2^53 ms ≈ 285,000
/// years), and in DynamoDB number attributes.
pub const MAX_DURATION: Duration = Duration::from_secs(36_500 * SECS_PER_DAY);

const SECS_PER_DAY: u64 = 86_400;

/// Why a duration text was refused: the text, and what was wrong with it.
///
/// Its message names the text, what was wrong and the forms that are allowed, e.g. `invalid
/// duration "5x": unknown unit (use ms, s, m, h or d); use forms like 500ms, 10s, 5m, 1h30m, 2d
/// or ISO-8601 PT10S`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    input: String,
    reason: Reason,
}

/// What was wrong with a duration text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// Nothing but whitespace.
    Empty,
    /// A leading `-`.
    Negative,
    /// A number without a unit.
    MissingUnit,
    /// A unit (or other text) where a number belongs.
    ExpectedNumber,
    /// A number with more than one `.`.
    BadNumber,
    /// A unit other than `ms`, `s`, `m`, `h` and `d`.
    UnknownUnit,
    /// A text starting with `P` that is not an ISO-8601 duration.
    NotIso,
    /// Longer than [`MAX_DURATION`].
    TooLong,
}

impl DurationError {
    /// The refused text, as it was given.
    ///
    /// ```
    /// let e = leasehold_rules::parse_duration(" 5x").unwrap_err();
    /// assert_eq!(e.input(), " 5x");
    /// ```
    pub fn input(&self) -> &str {
        &self.input
    }

    /// True when the text was well formed but longer than [`MAX_DURATION`].
    ///
    /// ```
    /// assert!(leasehold_rules::parse_duration("36501d").unwrap_err().is_too_long());
    /// assert!(!leasehold_rules::parse_duration("5x").unwrap_err().is_too_long());
    /// ```
    pub fn is_too_long(&self) -> bool {
        self.reason == Reason::TooLong
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid duration {:?}: ", self.input)?;
        let reason = match self.reason {
            Reason::TooLong => {
                return write!(
                    f,
                    "longer than the maximum of {}d (100 years; leasehold::limits::MAX_DURATION)",
                    MAX_DURATION.as_secs() / SECS_PER_DAY
                );
            }
            Reason::Empty => "empty",
            Reason::Negative => "negative durations are not allowed",
            Reason::MissingUnit => "missing unit (ms, s, m, h or d)",
            Reason::ExpectedNumber => "expected a number",
            Reason::BadNumber => "bad number",
            Reason::UnknownUnit => "unknown unit (use ms, s, m, h or d)",
            Reason::NotIso => "not a valid ISO-8601 duration",
        };
        write!(
            f,
            "{reason}; use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S"
        )
    }
}

impl Error for DurationError {}

/// Parses a duration written as `500ms`, `10s`, `5m`, `1h`, `2d`, combinations such as `1m30s`,
/// or ISO-8601 (`PT10S`, `PT1M30.5S`, `P1DT2H`). A bare `0` is zero; surrounding whitespace is
/// ignored. Fractions are exact decimals, rounded to the nearest nanosecond.
///
/// The result is at most [`MAX_DURATION`] (36500 days): a longer one, or one whose parts add up
/// beyond it, is an error. No input makes it panic.
///
/// # Errors
///
/// [`DurationError`] naming the input and what was wrong with it (an empty or negative text, a
/// missing or unknown unit, a bad number, or a duration beyond [`MAX_DURATION`]).
///
/// ```
/// use std::time::Duration;
/// use leasehold_rules::parse_duration;
///
/// assert_eq!(parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(parse_duration("1m30s")?, Duration::from_secs(90));
/// assert_eq!(parse_duration("PT10S")?, Duration::from_secs(10));
/// assert!(parse_duration("-5s").is_err());
/// assert!(parse_duration("36500d").is_ok());
/// assert!(parse_duration("10000000000000000000s").is_err()); // beyond MAX_DURATION
/// # Ok::<(), leasehold_rules::DurationError>(())
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    grammar(text).map_err(|reason| DurationError {
        input: text.to_owned(),
        reason,
    })
}

fn grammar(text: &str) -> Result<Duration, Reason> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Reason::Empty);
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err(Reason::Negative);
    }
    let nanos = match text.strip_prefix(['P', 'p']) {
        Some(iso) => parse_iso(iso.as_bytes())?,
        None => parse_simple(text.as_bytes())?,
    };
    // At most MAX_NANOS, which fits in a u64 (checked below).
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| Reason::TooLong)
}

/// [`MAX_DURATION`] in nanoseconds.
const MAX_NANOS: u128 = MAX_DURATION.as_nanos();
const _: () = assert!(MAX_NANOS <= u64::MAX as u128);

const NANOS_PER_MS: u128 = 1_000_000;
const NANOS_PER_S: u128 = 1_000_000_000;
const NANOS_PER_M: u128 = 60 * NANOS_PER_S;
const NANOS_PER_H: u128 = 3600 * NANOS_PER_S;
const NANOS_PER_D: u128 = SECS_PER_DAY as u128 * NANOS_PER_S;
const NANOS_PER_W: u128 = 7 * NANOS_PER_D;

/// Fraction digits kept (more cannot change the nanoseconds of any unit up to a week).
const MAX_FRACTION_DIGITS: u32 = 20;

/// A decimal number as written: `whole.fraction`, the fraction being `numerator / 10^digits`.
#[derive(Clone, Copy)]
struct Decimal {
    /// Saturates just above `MAX_NANOS`: any larger value is too long in every unit.
    whole: u128,
    numerator: u128,
    denominator: u128,
}

impl Decimal {
    /// Reads `text` as digits with at most one separator (`.`, or `,` too when `comma`), and at
    /// least one digit. `None` otherwise.
    fn read(text: &[u8], comma: bool) -> Option<Self> {
        let mut d = Self {
            whole: 0,
            numerator: 0,
            denominator: 1,
        };
        let (mut digits, mut fraction_digits, mut in_fraction) = (0u32, 0u32, false);
        for &c in text {
            if c.is_ascii_digit() {
                let digit = u128::from(c - b'0');
                digits += 1;
                if !in_fraction {
                    d.whole = (d.whole * 10 + digit).min(MAX_NANOS + 1);
                } else if fraction_digits < MAX_FRACTION_DIGITS {
                    d.numerator = d.numerator * 10 + digit;
                    d.denominator *= 10;
                    fraction_digits += 1;
                }
            } else if (c == b'.' || (comma && c == b',')) && !in_fraction {
                in_fraction = true;
            } else {
                return None;
            }
        }
        (digits > 0).then_some(d)
    }
}

/// `total + value × unit`, rounded to the nearest nanosecond; `TooLong` beyond [`MAX_DURATION`].
fn add_part(total: u128, value: Decimal, unit: u128) -> Result<u128, Reason> {
    // whole ≤ MAX_NANOS + 1 < 2^62 and unit < 2^50; numerator < 10^20 < 2^67: no overflow.
    let fraction = (value.numerator * unit * 2 + value.denominator) / (value.denominator * 2);
    let sum = total + value.whole * unit + fraction;
    if sum > MAX_NANOS {
        Err(Reason::TooLong)
    } else {
        Ok(sum)
    }
}

/// `500ms`, `1m30s`, …: numbers (`[0-9.]+`), each followed by its unit.
fn parse_simple(mut rest: &[u8]) -> Result<u128, Reason> {
    let mut total = 0;
    while !rest.is_empty() {
        let number_len = rest
            .iter()
            .position(|&c| !(c.is_ascii_digit() || c == b'.'))
            .ok_or(Reason::MissingUnit)?;
        if number_len == 0 {
            return Err(Reason::ExpectedNumber);
        }
        let value = Decimal::read(&rest[..number_len], false).ok_or(Reason::BadNumber)?;
        let after = &rest[number_len..];
        let unit_len = after
            .iter()
            .position(u8::is_ascii_digit)
            .unwrap_or(after.len());
        let unit = match &after[..unit_len] {
            b"ms" => NANOS_PER_MS,
            b"s" => NANOS_PER_S,
            b"m" => NANOS_PER_M,
            b"h" => NANOS_PER_H,
            b"d" => NANOS_PER_D,
            _ => return Err(Reason::UnknownUnit),
        };
        total = add_part(total, value, unit)?;
        rest = &after[unit_len..];
    }
    Ok(total)
}

/// ISO-8601 after the `P` (case-insensitive): `[nD][nW][T[nH][nM][nS]]`, numbers may have a `.`
/// or `,` fraction.
fn parse_iso(text: &[u8]) -> Result<u128, Reason> {
    match text.iter().position(|c| c.eq_ignore_ascii_case(&b'T')) {
        None if text.is_empty() => Err(Reason::NotIso),
        None => iso_part(0, text, b"DW"),
        Some(t) => {
            let total = iso_part(0, &text[..t], b"DW")?;
            let time = &text[t + 1..];
            if time.is_empty() {
                return Err(Reason::NotIso);
            }
            iso_part(total, time, b"HMS")
        }
    }
}

/// Numbers each followed by one of `units` (`D`, `W`, `H`, `M`, `S`; either case), added to
/// `total`.
fn iso_part(mut total: u128, mut rest: &[u8], units: &[u8]) -> Result<u128, Reason> {
    while !rest.is_empty() {
        let unit_at = rest
            .iter()
            .position(u8::is_ascii_alphabetic)
            .ok_or(Reason::NotIso)?;
        let value = Decimal::read(&rest[..unit_at], true).ok_or(Reason::NotIso)?;
        let letter = rest[unit_at].to_ascii_uppercase();
        let unit = match letter {
            _ if !units.contains(&letter) => return Err(Reason::NotIso),
            b'D' => NANOS_PER_D,
            b'W' => NANOS_PER_W,
            b'H' => NANOS_PER_H,
            b'M' => NANOS_PER_M,
            _ => NANOS_PER_S,
        };
        total = add_part(total, value, unit)?;
        rest = &rest[unit_at + 1..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> DurationError {
        match parse_duration(text) {
            Err(e) => e,
            Ok(d) => panic!("{text:?} must be refused, parsed as {d:?}"),
        }
    }

    #[test]
    fn simple_and_iso_forms() {
        let cases = [
            ("10s", 10_000),
            ("5m", 300_000),
            ("1h", 3_600_000),
            ("2d", 172_800_000),
            ("1.5s", 1_500),
            ("1m30s", 90_000),
            ("1m30.5s", 90_500),
            ("500ms", 500),
            ("PT10S", 10_000),
            ("pt0.5s", 500),
            ("PT1M30S", 90_000),
            ("P1DT1H", 90_000_000),
            ("0", 0),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
    }

    /// Fractions are exact decimals rounded to the nanosecond (the parser once went through
    /// `f64`, which gave 123456789.123456791s here).
    #[test]
    fn fractions_are_exact_to_the_nanosecond() {
        let cases = [
            (
                "123456789.123456789s",
                Duration::new(123_456_789, 123_456_789),
            ),
            ("0.3s", Duration::from_millis(300)),
            ("0.1d", Duration::from_secs(8640)),
            ("99999999999ms", Duration::new(99_999_999, 999_000_000)),
            ("0.0000000005s", Duration::from_nanos(1)),
            ("0.0000000004s", Duration::ZERO),
            ("1.0000000004999999999999999s", Duration::from_secs(1)),
            ("PT0,25S", Duration::from_millis(250)),
            (".5s", Duration::from_millis(500)),
            ("1.s", Duration::from_secs(1)),
            ("P1.5W", Duration::from_secs(907_200)),
            ("\u{3000}5s\u{a0}", Duration::from_secs(5)),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), Ok(want), "{text:?}");
        }
        for bad in [".s", "1.2.3s", "P1.2.3D", "PT,S"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    /// One case per reason: the refused text and the whole message, which names the text, what
    /// was wrong and what is allowed.
    #[test]
    fn every_reason_has_its_message() {
        const FORMS: &str = "; use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S";
        let cases = [
            ("", "empty"),
            ("  ", "empty"),
            ("-1s", "negative durations are not allowed"),
            ("10", "missing unit (ms, s, m, h or d)"),
            ("s", "expected a number"),
            ("ms", "expected a number"),
            ("1s-", "unknown unit (use ms, s, m, h or d)"),
            ("1.2.3s", "bad number"),
            ("5x", "unknown unit (use ms, s, m, h or d)"),
            ("5 s", "unknown unit (use ms, s, m, h or d)"),
            ("PT5X", "not a valid ISO-8601 duration"),
            ("P", "not a valid ISO-8601 duration"),
            ("PT", "not a valid ISO-8601 duration"),
            ("P1D T", "not a valid ISO-8601 duration"),
        ];
        for (text, reason) in cases {
            let e = refused(text);
            assert!(!e.is_too_long(), "{text:?}");
            assert_eq!(e.input(), text);
            assert_eq!(
                e.to_string(),
                format!("invalid duration {text:?}: {reason}{FORMS}")
            );
        }
        assert_eq!(
            refused("36501d").to_string(),
            "invalid duration \"36501d\": longer than the maximum of 36500d (100 years; \
             leasehold::limits::MAX_DURATION)"
        );
    }

    /// Units: the five simple units and the ISO letters pass, their nearest neighbours do not.
    #[test]
    fn unit_edge() {
        for ok in [
            "1ms", "1s", "1m", "1h", "1d", "P1W", "P1D", "PT1H", "PT1M", "pt1s",
        ] {
            assert!(parse_duration(ok).is_ok(), "{ok}");
        }
        for bad in ["1w", "1us", "1μs", "1S", "1M", "1sec", "1mss"] {
            assert!(refused(bad).to_string().contains("unknown unit"), "{bad}");
        }
        for bad in ["P1M", "P1H", "PT1D", "PT1W", "P1Y"] {
            assert!(
                refused(bad).to_string().contains("not a valid ISO-8601"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_maximum_is_accepted_and_anything_longer_rejected() {
        assert_eq!(parse_duration("36500d"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("P36500D"), Ok(MAX_DURATION));
        assert_eq!(
            parse_duration("36499d23h59m59.999999999s"),
            Ok(MAX_DURATION - Duration::from_nanos(1))
        );
        for long in [
            "36501d",
            "36500d1ms",
            "36500d0.000000001s",
            "10000000000000000000s",
            "18446744073709551615s",
            "99999999999999999999999999999999999999999d",
            "P99999999999999999999W",
            "PT99999999999999999999H",
        ] {
            let e = refused(long);
            assert!(e.is_too_long(), "{long:?} must be refused as too long: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains("36500d") && msg.contains("MAX_DURATION"),
                "{msg}"
            );
        }
    }

    /// Two parts each in range whose sum overflows `Duration` used to panic inside the parser.
    #[test]
    fn parts_that_add_up_beyond_the_maximum_are_an_error_not_a_panic() {
        let max_secs = u64::MAX.to_string();
        for text in [
            format!("{max_secs}s{max_secs}s"),
            "10000000000000000000s10000000000000000000s".to_owned(),
            "PT10000000000000000000S10000000000000000000S".to_owned(),
            "36500d36500d".to_owned(),
            "20000d20000d".to_owned(),
            "P20000DT480000000H".to_owned(),
            "P5214W2DT24H1S".to_owned(),
            "PT18446744073709551615S18446744073709551615S".to_owned(),
        ] {
            let got = std::panic::catch_unwind(|| parse_duration(&text));
            match got {
                Ok(Err(_)) => {}
                Ok(Ok(d)) => panic!("{text:?} parsed as {d:?}, beyond the maximum"),
                Err(_) => panic!("{text:?} panicked"),
            }
        }
    }

    /// Property-style: tens of thousands of random texts over an alphabet of digits, units, separators
    /// and odd characters never panic, and whatever parses is within the maximum.
    #[test]
    fn no_input_panics_and_every_result_is_within_the_maximum() {
        const ALPHABET: &[&str] = &[
            "0",
            "1",
            "9",
            "5",
            "99999999999",
            "18446744073709551615",
            ".",
            ",",
            "ms",
            "s",
            "m",
            "h",
            "d",
            "w",
            "P",
            "T",
            "D",
            "H",
            "M",
            "S",
            "W",
            "-",
            "+",
            " ",
            "e",
            "E",
            "inf",
            "NaN",
            "é",
            "💥",
            "\u{0}",
            "μs",
        ];
        // xorshift64*: a fixed sequence, so a failure names a text that fails again.
        let mut state: u64 = 0x1ea5e;
        let mut next = |below: usize| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
            usize::try_from(r).unwrap_or(0) % below
        };
        let mut parsed = 0;
        for _ in 0..40_000 {
            let len = next(10);
            let text: String = (0..len).map(|_| ALPHABET[next(ALPHABET.len())]).collect();
            let result = std::panic::catch_unwind(|| parse_duration(&text));
            match result {
                Err(_) => panic!("parse_duration({text:?}) panicked"),
                Ok(Ok(d)) => {
                    parsed += 1;
                    assert!(d <= MAX_DURATION, "{text:?} parsed as {d:?}");
                }
                Ok(Err(e)) => assert!(e.to_string().contains(&format!("{text:?}")), "{e}"),
            }
        }
        assert!(
            parsed > 100,
            "the generator should also produce valid texts ({parsed})"
        );
    }
}
