//! Renderings of a [`Report`](crate::report::Report): markdown tables and an SVG chart (the
//! JSON is the report serialised).

pub(crate) mod markdown;
pub(crate) mod summary;
pub(crate) mod svg;

#[cfg(test)]
mod tests;

/// A number for a table: thousands separated from 100 up, else three significant digits.
pub(crate) fn number(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    if v.abs() >= 100.0 {
        let digits = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            out.insert(0, '-');
        }
        out
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else if v == 0.0 {
        "0".to_owned()
    } else {
        // Three significant digits, however small.
        let decimals = (2.0 - v.abs().log10().floor()).clamp(3.0, 9.0) as usize;
        format!("{v:.decimals$}")
    }
}
