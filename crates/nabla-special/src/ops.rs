//! The family's op types: an elementwise special function of an `f32` or `f64` tensor ([`Special`]),
//! and `betaln` of two ([`Betaln`]), computed in `f64` on the host (split across the thread pool for
//! large inputs).

use crate::scalar;
use nabla_core::{
    DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use rayon::prelude::*;

/// Which special function an op computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialFn {
    /// `ln |Γ(x)|`.
    Lgamma,
    /// `ψ(x)`, the derivative of `ln Γ`.
    Digamma,
    /// `ψ⁽ⁿ⁾(x)` for `n ≥ 1`.
    Polygamma(u32),
    /// The inverse error function.
    Erfinv,
    /// The modified Bessel function `I₀`.
    I0,
    /// `e^{−|x|} I₀(x)`.
    I0e,
    /// The modified Bessel function `I₁`.
    I1,
    /// `e^{−|x|} I₁(x)`.
    I1e,
    /// The complementary error function `1 − erf(x)`, accurate where it is tiny.
    Erfc,
    /// The standard normal CDF `Φ(x) = ½ erfc(−x/√2)`.
    Ndtr,
    /// The inverse of [`SpecialFn::Ndtr`] on `(0, 1)`.
    Ndtri,
    /// `ln Φ(x)`, accurate in both tails.
    LogNdtr,
}

impl SpecialFn {
    /// One value of every function (`Polygamma` once: its order is a parameter, not a new op).
    pub const ALL: [SpecialFn; 12] = [
        SpecialFn::Lgamma,
        SpecialFn::Digamma,
        SpecialFn::Polygamma(1),
        SpecialFn::Erfinv,
        SpecialFn::I0,
        SpecialFn::I0e,
        SpecialFn::I1,
        SpecialFn::I1e,
        SpecialFn::Erfc,
        SpecialFn::Ndtr,
        SpecialFn::Ndtri,
        SpecialFn::LogNdtr,
    ];

    /// The op's name, namespaced by the family (`"special.lgamma"`).
    pub fn name(self) -> &'static str {
        match self {
            SpecialFn::Lgamma => "special.lgamma",
            SpecialFn::Digamma => "special.digamma",
            SpecialFn::Polygamma(_) => "special.polygamma",
            SpecialFn::Erfinv => "special.erfinv",
            SpecialFn::I0 => "special.i0",
            SpecialFn::I0e => "special.i0e",
            SpecialFn::I1 => "special.i1",
            SpecialFn::I1e => "special.i1e",
            SpecialFn::Erfc => "special.erfc",
            SpecialFn::Ndtr => "special.ndtr",
            SpecialFn::Ndtri => "special.ndtri",
            SpecialFn::LogNdtr => "special.log_ndtr",
        }
    }

    /// The function at one point.
    pub fn eval(self, x: f64) -> f64 {
        match self {
            SpecialFn::Lgamma => scalar::lgamma(x),
            SpecialFn::Digamma => scalar::digamma(x),
            SpecialFn::Polygamma(n) => scalar::polygamma(n, x),
            SpecialFn::Erfinv => scalar::erfinv(x),
            SpecialFn::I0 => scalar::bessel_i(0, x, false),
            SpecialFn::I0e => scalar::bessel_i(0, x, true),
            SpecialFn::I1 => scalar::bessel_i(1, x, false),
            SpecialFn::I1e => scalar::bessel_i(1, x, true),
            SpecialFn::Erfc => libm::erfc(x),
            SpecialFn::Ndtr => scalar::ndtr(x),
            SpecialFn::Ndtri => scalar::ndtri(x),
            SpecialFn::LogNdtr => scalar::log_ndtr(x),
        }
    }
}

/// An elementwise special function ([`SpecialFn`]) of an `f32` or `f64` tensor, of its shape and dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Special(pub SpecialFn);

/// Elements per parallel task.
const CHUNK: usize = 1 << 12;

/// `f` of each element of `x` and the element of `y` at its position (`y` as long as `x`).
fn map2<T: Copy + Send + Sync>(
    x: &[T],
    y: &[T],
    alloc: &dyn HostAllocator,
    f: impl Fn(T, T) -> T + Sync,
) -> Vec<T> {
    let mut out: Vec<T> = alloc.vec(x.len());
    out.extend_from_slice(x);
    let apply = |c: &mut [T], d: &[T]| c.iter_mut().zip(d).for_each(|(v, &w)| *v = f(*v, w));
    if x.len() <= CHUNK {
        apply(&mut out, y);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(y.par_chunks(CHUNK))
            .for_each(|(c, d)| apply(c, d));
    }
    out
}

/// `f` of each element of `x`.
fn map<T: Copy + Send + Sync>(
    x: &[T],
    alloc: &dyn HostAllocator,
    f: impl Fn(T) -> T + Sync,
) -> Vec<T> {
    map2(x, x, alloc, |v, _| f(v))
}

impl ExtensionOp for Special {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let op = self.0.name();
        match inputs {
            [(dtype @ (DType::F32 | DType::F64), shape)] => Ok(OutputSpec {
                dtype: *dtype,
                shape: shape.to_vec(),
            }),
            [(dtype, _)] => Err(Error::UnsupportedDType {
                op: self.0.name(),
                dtype: *dtype,
                hint: Some(format!("{op} takes f32 or f64 input")),
            }),
            _ => Err(Error::invalid(
                self.0.name(),
                format!("takes one input, got {}", inputs.len()),
            )),
        }
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let f = self.0;
        match views[0].data {
            HostData::F64(x) => Ok(HostData::F64(map(x, alloc, |v| f.eval(v)))),
            HostData::F32(x) => Ok(HostData::F32(map(x, alloc, |v| {
                f.eval(f64::from(v)) as f32
            }))),
            other => Err(Error::dtype(self.0.name(), other.dtype())),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

/// The name of [`Betaln`].
pub(crate) const BETALN: &str = "special.betaln";

/// `ln |B(a, b)|` of two `f32` or `f64` tensors of one shape and dtype (`crate::betaln` broadcasts
/// and converts its arguments first), computed in `f64` on the host without the cancellation of
/// `lgamma(a) + lgamma(b) − lgamma(a + b)` for large arguments (see the `scalar` module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Betaln;

impl ExtensionOp for Betaln {
    fn name(&self) -> &str {
        BETALN
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        match inputs {
            [(da @ (DType::F32 | DType::F64), sa), (db, sb)] if da == db && sa == sb => {
                Ok(OutputSpec {
                    dtype: *da,
                    shape: sa.to_vec(),
                })
            }
            [(da, sa), (db, sb)] if sa == sb => Err(Error::invalid(
                BETALN,
                format!("takes two f32 or two f64 tensors, got {da} and {db}"),
            )),
            [(_, sa), (_, sb)] => Err(Error::shapes(BETALN, sa, sb)
                .with_hint("the arguments must have one shape (special::betaln broadcasts them)")),
            _ => Err(Error::invalid(
                BETALN,
                format!("takes two inputs, got {}", inputs.len()),
            )),
        }
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        match (views[0].data, views[1].data) {
            (HostData::F64(a), HostData::F64(b)) => {
                Ok(HostData::F64(map2(a, b, alloc, scalar::betaln)))
            }
            (HostData::F32(a), HostData::F32(b)) => Ok(HostData::F32(map2(a, b, alloc, |x, y| {
                scalar::betaln(f64::from(x), f64::from(y)) as f32
            }))),
            (other, _) => Err(Error::dtype(BETALN, other.dtype())),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}
