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
    }
}
