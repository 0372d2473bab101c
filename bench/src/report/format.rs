//! Numbers as BENCHMARKS.md writes them.

/// `value` with `decimals` decimals and a comma between thousands: `12,345.6`.
pub fn thousands(value: f64, decimals: usize) -> String {
    let fixed = format!("{value:.decimals$}");
    let (sign, digits) = match fixed.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", fixed.as_str()),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (digits, None),
    };
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    match fraction {
        Some(fraction) => format!("{sign}{grouped}.{fraction}"),
        None => format!("{sign}{grouped}"),
    }
}

/// A duration in nanoseconds with three significant digits and its unit, as criterion prints
/// it: `276 ns`, `29.7 µs`, `1.71 ms`.
pub fn short_time(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", three_digits(value))
}

/// `value` (0 to 1,000) with three significant digits.
pub(crate) fn three_digits(value: f64) -> String {
    if value >= 99.95 {
        format!("{value:.0}")
    } else if value >= 9.995 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(17_872.4, 0), "17,872");
        assert_eq!(thousands(114_264.0, 0), "114,264");
        assert_eq!(thousands(999.0, 0), "999");
        assert_eq!(thousands(1_000.0, 0), "1,000");
        assert_eq!(thousands(1_234_567.891, 2), "1,234,567.89");
        assert_eq!(thousands(-2_934.0, 0), "-2,934");
        assert_eq!(thousands(0.25, 2), "0.25");
    }

    #[test]
    fn times_have_three_significant_digits() {
        assert_eq!(short_time(276.3), "276 ns");
        assert_eq!(short_time(29_712.0), "29.7 µs");
        assert_eq!(short_time(542_000.0), "542 µs");
        assert_eq!(short_time(1_712_000.0), "1.71 ms");
        assert_eq!(short_time(723.0), "723 ns");
        assert_eq!(short_time(9.5), "9.50 ns");
    }
}
