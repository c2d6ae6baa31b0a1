//! Comparing a result with NumPy's: exact for integers and bools, a relative tolerance for floats
//! (bit-exact where the case says so), NaN equal to NaN, and optionally the sign of zero.

use nabla_core::{DType, HostData};

/// How strictly floats are compared.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
    pub exact: bool,
    pub signed_zero: bool,
}

impl Tolerance {
    /// The default tolerance for results of `dtype`: about 1e-12 relative for 64-bit floats, 1e-6 for
    /// 32-bit floats; half-precision results come only from casts and must be exact.
    pub fn for_dtype(dtype: DType, exact: bool, signed_zero: bool) -> Tolerance {
        let (rtol, atol) = match dtype {
            DType::F32 | DType::C64 => (1e-6, 1e-7),
            DType::F64 | DType::C128 => (1e-12, 1e-13),
            _ => (0.0, 0.0),
        };
        Tolerance {
            rtol,
            atol,
            exact: exact || dtype.is_half(),
            signed_zero,
        }
    }
}

/// Values of any dtype in a form that can be compared and printed.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Real(Vec<f64>),
    Complex(Vec<(f64, f64)>),
    Int(Vec<i64>),
    Bool(Vec<bool>),
}

impl Values {
    pub fn of(h: &HostData) -> Values {
        match h {
            HostData::F16(v) => Values::Real(v.iter().map(|x| x.to_f64()).collect()),
            HostData::BF16(v) => Values::Real(v.iter().map(|x| x.to_f64()).collect()),
            HostData::F32(v) => Values::Real(v.iter().map(|&x| x as f64).collect()),
            HostData::F64(v) => Values::Real(v.clone()),
            HostData::C64(v) => {
                Values::Complex(v.iter().map(|c| (c.re as f64, c.im as f64)).collect())
            }
            HostData::C128(v) => Values::Complex(v.iter().map(|c| (c.re, c.im)).collect()),
            HostData::I32(v) => Values::Int(v.iter().map(|&x| x as i64).collect()),
            HostData::I64(v) => Values::Int(v.clone()),
            HostData::U8(v) => Values::Int(v.iter().map(|&x| x as i64).collect()),
            HostData::Bool(v) => Values::Bool(v.clone()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Real(v) => v.len(),
            Values::Complex(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    /// Element `i` formatted for a report (`-0.0` keeps its sign).
    pub fn show(&self, i: usize) -> String {
        match self {
            Values::Real(v) => show_float(v[i]),
            Values::Complex(v) => format!(
                "{}{}{}j",
                show_float(v[i].0),
                if v[i].1.is_sign_negative() { "" } else { "+" },
                show_float(v[i].1)
            ),
            Values::Int(v) => v[i].to_string(),
            Values::Bool(v) => v[i].to_string(),
        }
    }

    /// The first `limit` elements, formatted.
    pub fn preview(&self, limit: usize) -> String {
        let n = self.len();
        let shown: Vec<String> = (0..n.min(limit)).map(|i| self.show(i)).collect();
        let more = if n > limit {
            format!(", ... ({n} in all)")
        } else {
            String::new()
        };
        format!("[{}{more}]", shown.join(", "))
    }
}

fn show_float(x: f64) -> String {
    if x == 0.0 && x.is_sign_negative() {
        "-0.0".into()
    } else {
        format!("{x:?}")
    }
}

/// `true` if `actual` matches the NumPy value `expected`.
pub fn float_close(actual: f64, expected: f64, tol: Tolerance) -> bool {
    if expected.is_nan() || actual.is_nan() {
        return expected.is_nan() && actual.is_nan();
    }
    if tol.signed_zero
        && actual == 0.0
        && expected == 0.0
        && actual.is_sign_negative() != expected.is_sign_negative()
    {
        return false;
    }
    if tol.exact || expected.is_infinite() || actual.is_infinite() {
        return actual == expected;
    }
    (actual - expected).abs() <= tol.atol + tol.rtol * expected.abs()
}

/// Complex values: special parts compare part by part, ordinary ones within a tolerance scaled by the
/// modulus (so a tiny part next to a large one is not held to a relative bound of its own).
pub fn complex_close(actual: (f64, f64), expected: (f64, f64), tol: Tolerance) -> bool {
    let special = |c: (f64, f64)| !c.0.is_finite() || !c.1.is_finite();
    if tol.exact || special(actual) || special(expected) {
        return float_close(actual.0, expected.0, tol) && float_close(actual.1, expected.1, tol);
    }
    let scale = tol.atol + tol.rtol * expected.0.hypot(expected.1);
    let zeros_ok = !tol.signed_zero
        || (float_close(
            actual.0,
            expected.0,
            Tolerance {
                signed_zero: true,
                exact: false,
                ..tol
            },
        ) && float_close(
            actual.1,
            expected.1,
            Tolerance {
                signed_zero: true,
                exact: false,
                ..tol
            },
        ));
    (actual.0 - expected.0).abs() <= scale && (actual.1 - expected.1).abs() <= scale && zeros_ok
}

/// Indices of the elements that differ (both sides must have one length and kind).
pub fn mismatches(
    actual: &Values,
    expected: &Values,
    tol: Tolerance,
) -> Result<Vec<usize>, String> {
    let idx = |ok: &dyn Fn(usize) -> bool, n: usize| (0..n).filter(|&i| !ok(i)).collect();
    if actual.len() != expected.len() {
        return Err(format!(
            "{} values, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    Ok(match (actual, expected) {
        (Values::Real(a), Values::Real(e)) => idx(&|i| float_close(a[i], e[i], tol), a.len()),
        (Values::Complex(a), Values::Complex(e)) => {
            idx(&|i| complex_close(a[i], e[i], tol), a.len())
        }
        (Values::Int(a), Values::Int(e)) => idx(&|i| a[i] == e[i], a.len()),
        (Values::Bool(a), Values::Bool(e)) => idx(&|i| a[i] == e[i], a.len()),
        _ => return Err("value kinds differ".into()),
    })
}

/// Row-major multi-index of flat position `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[d] = i % n;
            i /= n;
        }
    }
    idx
}
