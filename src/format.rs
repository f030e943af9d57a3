//! How numbers are written for people: one place, so the app, the CLI and the reports agree.
//!
//! Conventions (pinned by the doc-tests):
//! - about three significant digits ([`sig`]); a value that is not finite prints as "—", never
//!   "NaN" or "inf";
//! - counts take the suffixes people use for model sizes and token counts: k, M, B (10⁹), T
//!   ([`count`]); memory is never written with these (it carries GiB/GB from [`crate::units`]);
//! - a negative sign in text meant for reading is U+2212 "−" ([`signed`], [`sig`], [`grouped`]);
//!   machine formats (CSV, JSON) write plain numbers and never go through this module.

/// The typographic minus sign used for display.
pub const MINUS: char = '\u{2212}';

/// About three significant digits; "—" for a value that is not finite; negative values with "−".
///
/// ```
/// use vram_explorer::format::sig;
/// assert_eq!(sig(1234.4), "1234");
/// assert_eq!(sig(12.345), "12.3");
/// assert_eq!(sig(1.2345), "1.23");
/// assert_eq!(sig(0.012345), "0.0123");
/// assert_eq!(sig(-2.5), "−2.50");
/// assert_eq!(sig(-0.0004), "−0.000400");
/// assert_eq!(sig(-0.2), "−0.200");
/// assert_eq!(sig(-0.0), "0");
/// assert_eq!(sig(f64::INFINITY), "—");
/// assert_eq!(sig(f64::NAN), "—");
/// ```
pub fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "—".to_owned();
    }
    let a = x.abs();
    let digits = if a >= 100.0 || a == 0.0 {
        format!("{a:.0}")
    } else if a >= 10.0 {
        format!("{a:.1}")
    } else if a >= 1.0 {
        format!("{a:.2}")
    } else {
        let decimals = (-a.log10().floor()) as usize + 2;
        format!("{a:.decimals$}")
    };
    if x < 0.0 && digits.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("{MINUS}{digits}")
    } else {
        digits
    }
}

/// A value with an explicit sign: "+1.50", "−0.25", "+0".
///
/// ```
/// use vram_explorer::format::signed;
/// assert_eq!(signed(1.5), "+1.50");
/// assert_eq!(signed(-0.25), "−0.250");
/// assert_eq!(signed(0.0), "+0");
/// assert_eq!(signed(f64::NAN), "—");
/// ```
pub fn signed(x: f64) -> String {
    let s = sig(x);
    if x.is_finite() && !s.starts_with(MINUS) {
        format!("+{s}")
    } else {
        s
    }
}

/// A count with the suffix people use for model sizes: `8.03 B`, `1 M`, `12.5 k`, `512`.
/// Trailing zeros are dropped; the k suffix starts at 10⁴ so four-digit counts stay exact.
///
/// ```
/// use vram_explorer::format::count;
/// assert_eq!(count(8.03e9), "8.03 B");
/// assert_eq!(count(1.0e6), "1 M");
/// assert_eq!(count(12_500.0), "12.5 k");
/// assert_eq!(count(4096.0), "4096");
/// assert_eq!(count(1.75e12), "1.75 T");
/// assert_eq!(count(-2.0e6), "−2 M");
/// assert_eq!(count(f64::NAN), "—");
/// ```
pub fn count(x: f64) -> String {
    if !x.is_finite() {
        return "—".to_owned();
    }
    let a = x.abs();
    let (div, suffix) = if a >= 1e12 {
        (1e12, " T")
    } else if a >= 1e9 {
        (1e9, " B")
    } else if a >= 1e6 {
        (1e6, " M")
    } else if a >= 1e4 {
        (1e3, " k")
    } else {
        (1.0, "")
    };
    format!("{}{suffix}", trim_zeros(sig(x / div)))
}

/// `8.00` → `8`, `0.500` → `0.5`; text without a decimal point stays as it is.
///
/// ```
/// use vram_explorer::format::trim_zeros;
/// assert_eq!(trim_zeros("8.00".to_owned()), "8");
/// assert_eq!(trim_zeros("0.500".to_owned()), "0.5");
/// assert_eq!(trim_zeros("100".to_owned()), "100");
/// ```
pub fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// A whole number with thousands separators: `16,060,522,496`, `−1,234`; "—" when not finite.
///
/// ```
/// use vram_explorer::format::grouped;
/// assert_eq!(grouped(16_060_522_496.0), "16,060,522,496");
/// assert_eq!(grouped(-1234.0), "−1,234");
/// assert_eq!(grouped(999.0), "999");
/// assert_eq!(grouped(f64::NAN), "—");
/// ```
pub fn grouped(x: f64) -> String {
    if !x.is_finite() {
        return "—".to_owned();
    }
    let digits = format!("{:.0}", x.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if x <= -0.5 {
        format!("{MINUS}{out}")
    } else {
        out
    }
}

/// Two decimals, or "—" for a value that is not finite.
///
/// ```
/// use vram_explorer::format::fixed2;
/// assert_eq!(fixed2(74.505806), "74.51");
/// assert_eq!(fixed2(-1.0), "−1.00");
/// assert_eq!(fixed2(f64::INFINITY), "—");
/// ```
pub fn fixed2(x: f64) -> String {
    if !x.is_finite() {
        return "—".to_owned();
    }
    let s = format!("{:.2}", x.abs());
    if x < 0.0 && s != "0.00" {
        format!("{MINUS}{s}")
    } else {
        s
    }
}

/// A fraction as a percentage with about three significant digits: `12.3 %`; "—" when not finite.
///
/// ```
/// use vram_explorer::format::percent;
/// assert_eq!(percent(0.1234), "12.3 %");
/// assert_eq!(percent(1.0), "100 %");
/// assert_eq!(percent(-0.05), "−5.00 %");
/// assert_eq!(percent(f64::NAN), "—");
/// ```
pub fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "—".to_owned();
    }
    format!("{} %", sig(fraction * 100.0))
}

/// A duration in seconds with a readable unit (µs, ms, s, h, days); "— s" when not finite or negative.
///
/// ```
/// use vram_explorer::format::seconds;
/// assert_eq!(seconds(0.0687), "68.7 ms");
/// assert_eq!(seconds(7200.0), "2.00 h");
/// assert_eq!(seconds(3.0e-6), "3.00 µs");
/// assert_eq!(seconds(-1.0), "— s");
/// ```
pub fn seconds(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "— s".to_owned();
    }
    if s < 1e-3 {
        format!("{} µs", sig(s * 1e6))
    } else if s < 1.0 {
        format!("{} ms", sig(s * 1e3))
    } else if s < 3600.0 {
        format!("{} s", sig(s))
    } else if s < 86400.0 * 2.0 {
        format!("{} h", sig(s / 3600.0))
    } else {
        format!("{} days", sig(s / 86400.0))
    }
}

/// `n` and a noun, singular for exactly one: `1 GPU`, `8 GPUs`, `1 step`.
///
/// ```
/// use vram_explorer::format::plural;
/// assert_eq!(plural(1, "GPU", "GPUs"), "1 GPU");
/// assert_eq!(plural(8, "GPU", "GPUs"), "8 GPUs");
/// assert_eq!(plural(0, "step", "steps"), "0 steps");
/// ```
pub fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
