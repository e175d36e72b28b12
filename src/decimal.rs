//! Decimal numbers as Tarantool 2.6 keeps them (MP_EXT type 1).
//!
//! Up to 38 significant digits; the adjusted exponent (the exponent of the
//! leading digit) is at most 37, and numbers below 10^-1 lose digits as
//! subnormals, down to 10^-38: 2.6's arithmetic context, observed on the real
//! thing (`decimal.new('1e38')` fails, `decimal.new('1e-999')` is 0 with 38
//! zeros after the point). Results round half away from zero. An operation
//! that overflows, divides by zero or has no finite result fails (`None`),
//! where 2.6 raises "decimal operation failed"; rounding and underflow to zero
//! do not fail.
//!
//! The arithmetic is the decNumber library's (through the `dec` crate), the
//! library Tarantool itself uses, so results match digit for digit.
//!
//! The msgpack payload is a scale (the negated exponent, a msgpack integer)
//! followed by packed BCD digits with a sign nibble (0xc plus, 0xd minus).

use std::cmp::Ordering;

use dec::{Context, Rounding};

use crate::protocol::msgpack::{write, Integer, Reader};

/// decNumber with 13 units of 3 digits: room for 39 digits, as Tarantool's `decimal_t`.
type Dec = dec::Decimal<13>;

/// The MP_EXT type of a decimal.
pub const MP_DECIMAL: i8 = 1;

/// Significant digits a decimal holds.
pub const MAX_DIGITS: u32 = 38;

/// The largest adjusted exponent: 10^38 overflows.
const MAX_EXPONENT: i32 = MAX_DIGITS as i32 - 1;

/// The smallest adjusted exponent of a normal number; subnormals go down to 10^-38.
const MIN_EXPONENT: i32 = -1;

/// Bytes of packed BCD at most: 39 digits and the sign nibble.
const MAX_PACKED_BYTES: usize = 20;

/// A finite decimal number. `repr(transparent)` over decNumber's C layout, so
/// that Lua's `decimal_t` cdata is this struct (see `lua::decimal`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct Decimal(Dec);

impl PartialEq for Decimal {
    /// Equal values (1.0 equals 1.00).
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

/// How [`Decimal::round_to`] rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundMode {
    /// Half away from zero (`decimal.round`).
    HalfUp,
    /// Toward zero.
    Down,
}

fn context() -> Context<Dec> {
    let mut c = Context::<Dec>::default();
    // The values are in range for 13 units: these cannot fail.
    let _ = c.set_precision(MAX_DIGITS as usize);
    let _ = c.set_max_exponent(MAX_EXPONENT as isize);
    let _ = c.set_min_exponent(MIN_EXPONENT as isize);
    c.set_rounding(Rounding::HalfUp);
    c
}

/// `d` when the operation that made it in `c` succeeded: rounding, subnormal
/// results and underflow to zero are fine; anything else, or a result that is
/// not finite, is a failure.
fn checked(c: &Context<Dec>, d: Dec) -> Option<Decimal> {
    let s = c.status();
    let failed = s.conversion_syntax()
        || s.division_by_zero()
        || s.division_impossible()
        || s.division_undefined()
        || s.insufficient_storage()
        || s.invalid_context()
        || s.invalid_operation()
        || s.overflow();
    (!failed && d.is_finite()).then_some(Decimal(d))
}

impl Decimal {
    /// Zero.
    #[must_use]
    pub fn zero() -> Self {
        Self(Dec::zero())
    }

    /// Parses decimal text (`1.5`, `-2e-3`, `.5`); `None` for anything else
    /// (spaces, `inf`, `nan`, hexadecimal) or a value out of range.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let mut c = context();
        let d = c.parse(text).ok()?;
        checked(&c, d)
    }

    /// A double as 2.6 converts one: through its 15 significant digits
    /// (`%.15g`), so 0.1 is 0.1; `None` for infinities and NaN.
    #[must_use]
    pub fn from_f64(v: f64) -> Option<Self> {
        if !v.is_finite() {
            return None;
        }
        Self::parse(&crate::printf::format_g(v, 15))
    }

    /// An integer, exactly.
    #[must_use]
    pub fn from_i64(v: i64) -> Self {
        Self(context().from_i64(v))
    }

    /// An unsigned integer, exactly.
    #[must_use]
    pub fn from_u64(v: u64) -> Self {
        Self(context().from_u64(v))
    }

    /// Reads a decimal's msgpack payload (scale, then packed BCD), with 2.6's checks.
    #[must_use]
    pub fn unpack(payload: &[u8]) -> Option<Self> {
        let mut r = Reader::new(payload);
        let scale = match r.read_integer().ok()? {
            Integer::Unsigned(u) => i32::try_from(u).ok()?,
            Integer::Negative(i) => i32::try_from(i).ok()?,
        };
        let bcd = &payload[r.position()..];
        if bcd.is_empty() || bcd.len() > MAX_PACKED_BYTES {
            return None;
        }
        let d = Dec::from_packed_bcd(bcd, scale).ok()?;
        let digits = i32::try_from(d.digits()).ok()?;
        let adjusted = d.exponent().checked_add(digits - 1)?;
        let subnormal_floor = MIN_EXPONENT - MAX_DIGITS as i32 + 1;
        let in_range = digits <= MAX_DIGITS as i32
            && adjusted <= MAX_EXPONENT
            && (adjusted >= MIN_EXPONENT || (adjusted >= subnormal_floor && digits <= adjusted - subnormal_floor + 1));
        in_range.then_some(Self(d))
    }

    /// Appends the msgpack payload: the scale, then packed BCD.
    pub fn pack(&self, out: &mut Vec<u8>) {
        let mut d = self.0;
        // Finite by construction: packing cannot fail.
        let (bcd, scale) = d.to_packed_bcd().unwrap_or_else(|| (vec![0x0c], 0));
        write::int(out, i64::from(scale));
        out.extend_from_slice(&bcd);
    }

    /// Appends the whole MP_EXT value.
    pub fn write_ext(&self, out: &mut Vec<u8>) {
        let mut payload = Vec::with_capacity(24);
        self.pack(&mut payload);
        write::ext(out, MP_DECIMAL, &payload);
    }

    /// Compares by value (1.0 equals 1.00).
    #[must_use]
    pub fn compare(&self, other: &Self) -> Ordering {
        context().partial_cmp(&self.0, &other.0).unwrap_or(Ordering::Equal)
    }

    /// Compares with a double as 2.6 does: the double through its 15 digits; NaN
    /// is below every decimal, a double beyond the decimal range beyond it.
    #[must_use]
    pub fn compare_f64(&self, other: f64) -> Ordering {
        match Self::from_f64(other) {
            Some(d) => self.compare(&d),
            None if other.is_nan() => Ordering::Greater,
            None if other > 0.0 => Ordering::Less,
            None => Ordering::Greater,
        }
    }

    /// Digits in all: `precision(1.50)` is 3, `precision(0.001)` 3.
    #[must_use]
    pub fn precision(&self) -> i32 {
        let digits = i32::try_from(self.0.digits()).unwrap_or(i32::MAX);
        let exponent = self.0.exponent();
        if exponent <= 0 {
            digits.max(-exponent)
        } else {
            digits + exponent
        }
    }

    /// Digits after the point.
    #[must_use]
    pub fn scale(&self) -> i32 {
        (-self.0.exponent()).max(0)
    }

    /// Rounds to `scale` digits after the point (unchanged when it has no more,
    /// or `scale` is out of 0..=38).
    #[must_use]
    pub fn round_to(&self, scale: i32, mode: RoundMode) -> Self {
        if !(0..=MAX_DIGITS as i32).contains(&scale) || scale >= self.scale() {
            return *self;
        }
        let digits = (self.precision() - self.scale() + scale).max(1);
        let mut c = Context::<Dec>::default();
        let _ = c.set_precision(usize::try_from(digits).unwrap_or(1));
        let _ = c.set_max_exponent(digits as isize);
        let _ = c.set_min_exponent(if scale == 0 { 0 } else { -1 });
        c.set_rounding(match mode {
            RoundMode::HalfUp => Rounding::HalfUp,
            RoundMode::Down => Rounding::Down,
        });
        let mut d = self.0;
        c.plus(&mut d);
        Self(d)
    }

    /// Without trailing zeros after the point (1.500 is 1.5; 100 stays 100).
    #[must_use]
    pub fn trim(&self) -> Self {
        let mut d = self.0;
        d.trim();
        Self(d)
    }

    /// With exactly `scale` digits after the point: rounded when fewer, padded
    /// with zeros when more; unchanged when that would not fit 38 digits.
    #[must_use]
    pub fn rescale(&self, scale: i32) -> Self {
        if scale < 0 {
            return *self;
        }
        if scale <= self.scale() {
            return self.round_to(scale, RoundMode::HalfUp);
        }
        let added = scale + self.0.exponent();
        let digits = i32::try_from(self.0.digits()).unwrap_or(i32::MAX);
        if scale > MAX_DIGITS as i32 || digits.saturating_add(added) > MAX_DIGITS as i32 {
            return *self;
        }
        let mut c = context();
        let mut d = self.0;
        let target = c.from_i32(-scale);
        c.rescale(&mut d, &target);
        checked(&c, d).unwrap_or(*self)
    }

    /// The value as an integer, when it is one within i128.
    #[must_use]
    pub fn integer_value(&self) -> Option<i128> {
        let digits = self.0.coefficient_digits();
        let exponent = self.0.exponent();
        let (whole, fraction) = if exponent >= 0 {
            (&digits[..], &[][..])
        } else {
            let cut = digits.len().saturating_sub(usize::try_from(-exponent).ok()?);
            digits.split_at(cut)
        };
        if fraction.iter().any(|&d| d != 0) {
            return None;
        }
        let mut v: i128 = 0;
        for &d in whole {
            v = v.checked_mul(10)?.checked_add(i128::from(d))?;
        }
        for _ in 0..exponent.max(0) {
            v = v.checked_mul(10)?;
        }
        Some(if self.0.is_negative() { -v } else { v })
    }

    /// The nearest double.
    #[must_use]
    pub fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// Whether the value is negative (and not zero).
    #[must_use]
    pub fn is_negative(&self) -> bool {
        self.0.is_negative() && !self.0.is_zero()
    }
}

/// Binary operations of Lua's decimal metatable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` (the remainder, with the sign of the dividend)
    Rem,
    /// `^`
    Pow,
}

/// Functions of one decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// Natural logarithm.
    Ln,
    /// Base-10 logarithm.
    Log10,
    /// e^x.
    Exp,
    /// Square root.
    Sqrt,
    /// Absolute value.
    Abs,
    /// Negation.
    Minus,
}

impl Decimal {
    /// `self op other`; `None` when the result is out of range or undefined.
    #[must_use]
    pub fn binary(&self, op: BinaryOp, other: &Self) -> Option<Self> {
        let mut c = context();
        let mut d = self.0;
        match op {
            BinaryOp::Add => c.add(&mut d, &other.0),
            BinaryOp::Sub => c.sub(&mut d, &other.0),
            BinaryOp::Mul => c.mul(&mut d, &other.0),
            BinaryOp::Div => c.div(&mut d, &other.0),
            BinaryOp::Rem => c.rem(&mut d, &other.0),
            BinaryOp::Pow => c.pow(&mut d, &other.0),
        }
        checked(&c, d)
    }

    /// `op(self)`; `None` when the result is out of range or undefined.
    #[must_use]
    pub fn unary(&self, op: UnaryOp) -> Option<Self> {
        let mut c = context();
        let mut d = self.0;
        match op {
            UnaryOp::Ln => {
                // decNumber's ln needs room below 10^-1 for results near zero; the
                // result is then rounded back to 37 digits after the point, as 2.6 does.
                let _ = c.set_min_exponent(-(MAX_DIGITS as isize));
                c.ln(&mut d);
                return checked(&c, d).map(|r| r.round_to(MAX_DIGITS as i32 - 1, RoundMode::HalfUp));
            }
            UnaryOp::Log10 => c.log10(&mut d),
            UnaryOp::Exp => c.exp(&mut d),
            UnaryOp::Sqrt => c.sqrt(&mut d),
            UnaryOp::Abs => c.abs(&mut d),
            UnaryOp::Minus => c.minus(&mut d),
        }
        checked(&c, d)
    }
}

impl std::fmt::Display for Decimal {
    /// Plain notation, never an exponent, as 2.6 prints decimals (`1e10` is
    /// `10000000000`, `1e-7` is `0.0000001`), trailing zeros kept.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.to_standard_notation_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap_or_else(|| panic!("{s} parses"))
    }

    fn ext(v: &Decimal) -> Vec<u8> {
        let mut out = Vec::new();
        v.write_ext(&mut out);
        out
    }

    #[test]
    fn encodes_as_tarantool_does() {
        // Bytes from Tarantool 2.6's msgpack.encode.
        assert_eq!(ext(&d("-12.345")), [0xd6, 0x01, 0x03, 0x12, 0x34, 0x5d]);
        assert_eq!(ext(&d("0")), [0xd5, 0x01, 0x00, 0x0c]);
        assert_eq!(ext(&d("1e-5")), [0xd5, 0x01, 0x05, 0x1c]);
        assert_eq!(ext(&d("1e10")), [0xd5, 0x01, 0xf6, 0x1c]);
        assert_eq!(ext(&d("1.0e2")), [0xc7, 0x03, 0x01, 0xff, 0x01, 0x0c]);
        assert_eq!(ext(&d("-1e-38")), [0xd5, 0x01, 0x26, 0x1d]);
        for s in ["-12.345", "1e10", "0.000", "12345678901234567890123456789012345678", "-0"] {
            let v = d(s);
            let mut payload = Vec::new();
            v.pack(&mut payload);
            let back = Decimal::unpack(&payload).unwrap();
            assert_eq!(back.to_string(), v.to_string(), "{s}");
        }
    }

    #[test]
    fn prints_in_plain_notation() {
        for (text, shown) in [
            ("1e10", "10000000000"),
            ("1e-7", "0.0000001"),
            ("1.250", "1.250"),
            ("-0", "-0"),
            ("1.0e2", "100"),
            ("1e-999", "0.00000000000000000000000000000000000000"),
            (".5", "0.5"),
        ] {
            assert_eq!(d(text).to_string(), shown, "{text}");
        }
    }

    #[test]
    fn range_and_syntax_are_2_6s() {
        for bad in ["1e38", "123456789012345678901234567890123456789", " 1", "1 ", "0x10", "inf", "nan", ""] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(d("1e37").precision(), 38);
        assert!(d("1e30").binary(BinaryOp::Mul, &d("1e10")).is_none(), "overflow fails");
        assert!(d("1").binary(BinaryOp::Div, &d("0")).is_none());
        assert!(d("0").unary(UnaryOp::Ln).is_none() && d("-1").unary(UnaryOp::Sqrt).is_none());
    }

    #[test]
    fn doubles_convert_through_15_digits() {
        assert_eq!(Decimal::from_f64(0.1).map(|v| v.to_string()), Some("0.1".into()));
        assert_eq!(Decimal::from_f64(1.0 / 3.0).map(|v| v.to_string()), Some("0.333333333333333".into()));
        assert_eq!(Decimal::from_f64(2f64.powi(53)).map(|v| v.to_string()), Some("9007199254740990".into()));
        assert_eq!(Decimal::from_f64(-1.5e-5).map(|v| v.to_string()), Some("-0.000015".into()));
        assert!(Decimal::from_f64(f64::INFINITY).is_none() && Decimal::from_f64(1e300).is_none());
        assert_eq!(d("0.1").compare_f64(0.1), Ordering::Equal);
        assert_eq!(d("1").compare_f64(f64::NAN), Ordering::Greater);
        assert_eq!(d("1").compare_f64(1e300), Ordering::Less);
    }

    #[test]
    fn arithmetic_and_rounding_match_2_6() {
        let v = d("1.250");
        assert_eq!(v.binary(BinaryOp::Div, &d("3")).unwrap().to_string(), "0.41666666666666666666666666666666666667");
        assert_eq!(v.binary(BinaryOp::Pow, &d("2")).unwrap().to_string(), "1.562500");
        assert_eq!(d("-7").binary(BinaryOp::Rem, &d("3")).unwrap().to_string(), "-1");
        assert_eq!(d("2").unary(UnaryOp::Sqrt).unwrap().to_string(), "1.4142135623730950488016887242096980786");
        assert_eq!(
            d("1.0000000001").unary(UnaryOp::Ln).unwrap().to_string(),
            "0.0000000000999999999950000000003333333"
        );
        assert_eq!((v.precision(), v.scale()), (4, 3));
        assert_eq!(d("2.5").round_to(0, RoundMode::HalfUp).to_string(), "3");
        assert_eq!(d("-2.5").round_to(0, RoundMode::HalfUp).to_string(), "-3");
        assert_eq!(v.round_to(1, RoundMode::HalfUp).to_string(), "1.3");
        assert_eq!(d("123.456").round_to(-1, RoundMode::HalfUp).to_string(), "123.456");
        assert_eq!(d("1e10").rescale(2).to_string(), "10000000000.00");
        assert_eq!(d("1.5").rescale(40).to_string(), "1.5");
        assert_eq!((d("100").trim().to_string(), v.trim().to_string()), ("100".into(), "1.25".into()));
    }

    #[test]
    fn any_payload_decodes_or_is_refused_and_what_decodes_packs_back() {
        // A fixed xorshift stream: payloads of every length up to past the limit.
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut decoded = 0;
        for round in 0..200_000u64 {
            let len = usize::try_from(round % 24).unwrap();
            #[allow(clippy::cast_possible_truncation, reason = "one byte of each draw")]
            let mut payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 2 == 0 && len > 1 {
                // A small scale and a valid sign nibble half the time: more of them decode.
                payload[0] &= 0x1f;
                payload[len - 1] = (payload[len - 1] & 0xf0) | 0x0c;
            }
            if let Some(v) = Decimal::unpack(&payload) {
                decoded += 1;
                let mut again = Vec::new();
                v.pack(&mut again);
                assert_eq!(Decimal::unpack(&again).map(|d| d.to_string()), Some(v.to_string()), "{payload:02x?}");
            }
        }
        assert!(decoded > 1000, "only {decoded} decoded");
    }

    #[test]
    fn integer_values() {
        assert_eq!(d("1.000").integer_value(), Some(1));
        assert_eq!(d("-1e10").integer_value(), Some(-10_000_000_000));
        assert_eq!(d("1.5").integer_value(), None);
        assert_eq!(d("1e37").integer_value(), Some(10i128.pow(37)));
    }
}
