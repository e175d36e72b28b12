//! Numbers as C's `printf` writes them with `%.Ng` (glibc: the exact value
//! rounded to the nearest, ties to even). Tarantool 2.6 writes a serialized
//! double this way (`fpconv_g_fmt`: JSON, YAML, the console's Lua output, a
//! tuple's text), while Lua's own `tostring` and `string.format` are LuaJIT's and
//! round ties away from zero.

/// `%.{digits}g` of `v` (`digits` at least 1): `inf`, `-inf` and `nan` as glibc
/// writes them (a NaN with its sign bit as `-nan`).
#[must_use]
pub fn format_g(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let digits = digits.max(1);
    shortest_g(v, digits).unwrap_or_else(|| exact_g(v, digits))
}

/// [`format_g`] from the shortest digits that read back as `v`, when there are
/// no more of them than `digits`, `digits` is at most 15 and `v` is a normal
/// double: the exact value rounded to `digits` digits is then those digits (it
/// lies within half a unit in the last place of a double of them, a 2^-53 share
/// of it, less than half a unit in a 15th digit; a subnormal has fewer bits), so
/// no exact expansion is needed.
fn shortest_g(v: f64, digits: usize) -> Option<String> {
    if digits > 15 || !v.is_normal() {
        return None;
    }
    let shortest = format!("{v:e}");
    let (mantissa, exponent) = shortest.split_once('e')?;
    let exponent: i64 = exponent.parse().ok()?;
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let figures: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if figures.len() > digits {
        return None;
    }
    let precision = i64::try_from(digits).ok()?;
    if exponent < -4 || exponent >= precision {
        let (first, rest) = figures.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return Some(format!("{sign}{first}{point}{rest}e{exponent_sign}{:02}", exponent.abs()));
    }
    Some(if exponent < 0 {
        let zeros = "0".repeat(usize::try_from(-exponent - 1).ok()?);
        format!("{sign}0.{zeros}{figures}")
    } else {
        let whole = usize::try_from(exponent + 1).ok()?;
        if figures.len() <= whole {
            format!("{sign}{figures}{}", "0".repeat(whole - figures.len()))
        } else {
            format!("{sign}{}.{}", &figures[..whole], &figures[whole..])
        }
    })
}

/// [`format_g`] by the exact value's expansion.
fn exact_g(v: f64, digits: usize) -> String {
    // Rust's formatting rounds the exact value, ties to even, as glibc's printf.
    let scientific = format!("{:.*e}", digits - 1, v);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let precision = i64::try_from(digits).unwrap_or(i64::MAX);
    if exponent < -4 || exponent >= precision {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_fraction_zeros(mantissa), exponent.abs())
    } else {
        let decimals = usize::try_from(precision - 1 - exponent).unwrap_or(0);
        strip_fraction_zeros(&format!("{v:.decimals$}")).to_owned()
    }
}

/// `1.500` -> `1.5`, `2.000` -> `2`; text without a point is unchanged.
fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn writes_as_glibc_printf_does() {
        // Expected texts from C's printf("%.Ng").
        assert_eq!(format_g(1234567890123.25, 14), "1234567890123.2");
        assert_eq!(format_g(1234567890123.75, 14), "1234567890123.8");
        assert_eq!(format_g(0.125, 2), "0.12");
        assert_eq!(format_g(1.0 / 3.0, 14), "0.33333333333333");
        assert_eq!(format_g(1e20, 15), "1e+20");
        assert_eq!(format_g(123.456, 15), "123.456");
        assert_eq!(format_g(1e-5, 14), "1e-05");
        assert_eq!(format_g(0.0001, 14), "0.0001");
        assert_eq!(format_g(99999.5, 5), "1e+05");
        assert_eq!(format_g(-2.5e-7, 1), "-2e-07");
        assert_eq!(format_g(1.7976931348623157e308, 14), "1.7976931348623e+308");
        assert_eq!(format_g(-0.0, 14), "-0");
        assert_eq!(format_g(f64::NEG_INFINITY, 14), "-inf");
        assert_eq!(format_g(100.0, 14), "100");
        assert_eq!(format_g(-0.00012, 14), "-0.00012");
        assert_eq!(format_g(2.5, 1), "2");
        assert_eq!(format_g(5e-324, 14), "4.9406564584125e-324");
    }

    #[test]
    fn the_shortest_digits_give_what_the_exact_value_gives() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..200_000 {
            // Random bit patterns, and short decimals (where the shortest path is taken).
            let v = if i % 2 == 0 {
                f64::from_bits(next())
            } else {
                #[allow(clippy::cast_precision_loss, reason = "test values")]
                let m = (next() % 1_000_000) as f64;
                m / 10f64.powi(i32::try_from(next() % 12).unwrap_or(0)) * if next() % 2 == 0 { 1.0 } else { 1e10 }
            };
            if !v.is_finite() || v == 0.0 {
                continue;
            }
            assert_eq!(format_g(v, 14), super::exact_g(v, 14), "{v:e}");
            for digits in [1, 2, 5, 14, 15, 17] {
                if let Some(short) = super::shortest_g(v, digits) {
                    assert_eq!(short, super::exact_g(v, digits), "{v:e} {digits}");
                }
            }
        }
    }
}
