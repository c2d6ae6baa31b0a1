//! Shared pieces of the rule tests: seeded inputs on chosen domains, non-contiguous views of them, and
//! gradient checks that panic with the report when a rule disagrees with finite differences.

use nabla_core::{Conv2dParams, DType, Generator};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GradCheckOptions, Result, Tensor, check_gradients, check_second_order, grad_n};

/// The tensor type under test.
pub type T = Tensor<CpuBackend>;

/// Absolute tolerance of first- and second-order checks: central differences with a step of 1e-6 in
/// f64 are accurate to about 1e-9 for the values of order one used here.
pub const ATOL: f64 = 1e-6;
/// Relative tolerance (against the finite difference).
pub const RTOL: f64 = 1e-5;

pub fn cpu() -> CpuBackend {
    CpuBackend::new()
}

/// An f64 tensor with these values.
pub fn t(v: &[f64], shape: &[usize]) -> T {
    Tensor::from_slice(v, shape.to_vec(), &cpu()).unwrap()
}

/// An i64 index tensor.
pub fn idx(v: &[i64], shape: &[usize]) -> T {
    Tensor::from_slice(v, shape.to_vec(), &cpu()).unwrap()
}

/// An f64 tensor from a JAX fixture entry `{"shape": [...], "data": [...]}`.
pub fn fixture_array(v: &serde_json::Value) -> T {
    let dims = |key: &str| -> Vec<serde_json::Value> { v[key].as_array().expect(key).clone() };
    let shape: Vec<usize> = dims("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data: Vec<f64> = dims("data")
        .iter()
        .map(|d| d.as_f64().expect("number"))
        .collect();
    t(&data, &shape)
}

/// The values of `x` as f64.
pub fn vals(x: &T) -> Vec<f64> {
    x.cast(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// Where the random values of an input lie.
#[derive(Clone, Copy, Debug)]
pub enum Dom {
    /// Uniform on `[lo, hi)`.
    In(f64, f64),
    /// Magnitude uniform on `[lo, hi)` with a random sign (keeps away from 0, e.g. for `abs`, `recip`).
    Away(f64, f64),
    /// `k + u` with an integer `k` in `-3..3` and `u` in `[0.1, 0.4)`: away from the jumps of the
    /// rounding functions (integers and half-integers).
    OffInteger,
}

/// The default domain: values of order one around zero.
pub const STD: Dom = Dom::In(-1.5, 1.5);

/// A contiguous f64 tensor of seeded random values on `dom`.
pub fn rand(shape: &[usize], seed: u64, dom: Dom) -> T {
    let n: usize = shape.iter().product();
    let key = Generator::new(seed).next_key(2 * n);
    let v: Vec<f64> = (0..n as u64)
        .map(|i| {
            let u = key.uniform_f64(i);
            let w = key.uniform_f64(n as u64 + i);
            match dom {
                Dom::In(lo, hi) => lo + (hi - lo) * u,
                Dom::Away(lo, hi) => {
                    let m = lo + (hi - lo) * u;
                    if w < 0.5 { -m } else { m }
                }
                Dom::OffInteger => (6.0 * u).floor() - 3.0 + 0.1 + 0.3 * w,
            }
        })
        .collect();
    t(&v, shape)
}

/// `rand` on the standard domain.
pub fn randn(shape: &[usize], seed: u64) -> T {
    rand(shape, seed, STD)
}

/// A transposed (non-contiguous) view of shape `[a, b]`.
pub fn transposed(a: usize, b: usize, seed: u64, dom: Dom) -> T {
    let x = rand(&[b, a], seed, dom).t().unwrap();
    assert!(!x.is_contiguous());
    x
}

/// A view of `shape` whose first axis runs backwards with step -2 through a larger tensor.
pub fn stepped_back(shape: &[usize], seed: u64, dom: Dom) -> T {
    let mut big = shape.to_vec();
    big[0] = 2 * shape[0];
    let x = rand(&big, seed, dom).slice(0, None, None, -2).unwrap();
    assert_eq!(x.shape(), shape);
    x
}

/// A broadcast view (stride-0 axes) of seeded values of shape `from`, as shape `to`.
pub fn broadcast_view(from: &[usize], to: &[usize], seed: u64, dom: Dom) -> T {
    rand(from, seed, dom).broadcast_to(to.to_vec()).unwrap()
}

/// First-order check with the default options and tolerances; panics with the report on failure.
#[track_caller]
pub fn check(label: &str, f: impl Fn(&[T]) -> Result<T>, inputs: &[T]) {
    check_opts(label, f, inputs, &GradCheckOptions::default(), ATOL, RTOL);
}

/// First-order check with given options and tolerances.
#[track_caller]
pub fn check_opts(
    label: &str,
    f: impl Fn(&[T]) -> Result<T>,
    inputs: &[T],
    opts: &GradCheckOptions,
    atol: f64,
    rtol: f64,
) {
    let report = check_gradients(f, inputs, opts).unwrap_or_else(|e| panic!("{label}: {e}"));
    let total: usize = inputs.iter().map(T::numel).sum();
    assert_eq!(report.checked(), total, "{label}: every element checked");
    if let Err(e) = report.assert_close(atol, rtol) {
        panic!("{label}: {e}\n{report}");
    }
}

/// Second-order check (gradient of a gradient against finite differences of the gradient).
#[track_caller]
pub fn check2(label: &str, f: impl Fn(&[T]) -> Result<T>, inputs: &[T]) {
    let opts = GradCheckOptions::default();
    let report = check_second_order(f, inputs, &opts).unwrap_or_else(|e| panic!("{label}: {e}"));
    if let Err(e) = report.assert_close(ATOL, RTOL) {
        panic!("{label}: {e}\n{report}");
    }
}

/// The gradients of a scalar function, as f64 vectors.
pub fn grads(f: impl Fn(&[T]) -> Result<T>, inputs: &[T]) -> Vec<Vec<f64>> {
    grad_n(f)(inputs).unwrap().iter().map(vals).collect()
}

/// Elementwise closeness of two vectors.
#[track_caller]
pub fn assert_near(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{got:?} vs {want:?}");
    }
}

/// Every differentiable unary op with a domain free of poles and kinks.
pub fn unary_cases() -> Vec<(nabla_core::UnaryOp, Dom)> {
    nabla_core::UnaryOp::ALL
        .into_iter()
        .filter_map(|op| Some((op, unary_domain(op)?)))
        .collect()
}

/// The input domain on which each unary op of the catalogue is checked, `None` for the ops without a
/// real derivative (bool results). The match is exhaustive: a new op must be given its case here.
pub fn unary_domain(op: nabla_core::UnaryOp) -> Option<Dom> {
    use nabla_core::UnaryOp as U;
    Some(match op {
        U::Neg | U::Square | U::Exp | U::Expm1 | U::Sinh | U::Cosh | U::Tanh | U::Erf => STD,
        U::Abs => Dom::Away(0.2, 2.0),
        U::Recip => Dom::Away(0.5, 2.0),
        U::Sqrt | U::Rsqrt | U::Log => Dom::In(0.3, 3.0),
        U::Log1p => Dom::In(-0.5, 2.0),
        U::Sin | U::Cos | U::Atan => Dom::In(-3.0, 3.0),
        U::Tan => Dom::In(-1.2, 1.2),
        U::Asin | U::Acos | U::Atanh => Dom::In(-0.8, 0.8),
        U::Asinh => Dom::In(-3.0, 3.0),
        U::Acosh => Dom::In(1.2, 3.0),
        U::Sigmoid => Dom::In(-4.0, 4.0),
        // Piecewise constant: zero derivative away from the jumps.
        U::Sign => Dom::Away(0.2, 2.0),
        U::Floor | U::Ceil | U::Round | U::Trunc => Dom::OffInteger,
        // On real inputs: the identity, the identity and zero.
        U::Conj | U::Real | U::Imag => STD,
        U::Not | U::IsNan | U::IsFinite | U::SignBit | U::BitNot => return None,
    })
}

/// Convolution parameters, positionally.
pub fn p(
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    groups: usize,
) -> Conv2dParams {
    Conv2dParams {
        stride,
        padding,
        dilation,
        groups,
        precision: Default::default(),
    }
}

/// `(params, x shape, w shape)`: plain, stride, padding, dilation, groups, all together, a stride that
/// leaves input rows unused, depthwise and a 1x1 kernel.
pub fn conv_cases() -> Vec<(Conv2dParams, [usize; 4], [usize; 4])> {
    vec![
        (p((1, 1), (0, 0), (1, 1), 1), [2, 2, 4, 5], [3, 2, 2, 3]),
        (p((2, 1), (0, 0), (1, 1), 1), [1, 2, 5, 4], [2, 2, 3, 2]),
        (p((1, 1), (1, 2), (1, 1), 1), [1, 1, 3, 3], [2, 1, 3, 3]),
        (p((1, 1), (0, 0), (2, 1), 1), [1, 2, 5, 4], [2, 2, 2, 2]),
        (p((1, 1), (0, 0), (1, 1), 2), [2, 4, 3, 3], [4, 2, 2, 2]),
        (p((2, 2), (1, 1), (2, 1), 2), [1, 4, 6, 5], [2, 2, 2, 3]),
        (p((3, 2), (0, 1), (1, 1), 1), [1, 1, 7, 5], [1, 1, 2, 2]),
        (p((1, 1), (1, 1), (1, 1), 3), [1, 3, 4, 4], [3, 1, 3, 3]),
        (p((1, 2), (0, 0), (1, 1), 1), [2, 3, 3, 4], [2, 3, 1, 1]),
    ]
}

/// The spatial size of the output of `c` for input `x` and weight `w` shapes.
pub fn out_hw(c: &Conv2dParams, x: &[usize; 4], w: &[usize; 4]) -> (usize, usize) {
    c.output_size((x[2], x[3]), (w[2], w[3]))
        .expect("test cases fit their kernels")
}

/// Every differentiable binary op with domains for both operands.
pub fn binary_cases() -> Vec<(nabla_core::BinaryOp, Dom, Dom)> {
    use nabla_core::BinaryOp as O;
    // Exhaustive over the catalogue: a new op must be given its domains (or `None`) here.
    let domains = |op: O| -> Option<(Dom, Dom)> {
        Some(match op {
            O::Add | O::Sub | O::Mul | O::Maximum | O::Minimum => (STD, STD),
            O::Div => (STD, Dom::Away(0.5, 2.0)),
            // Kinks of a mod b lie where a / b is an integer; random values miss them by far more
            // than eps.
            O::Rem => (Dom::In(-3.0, 3.0), Dom::Away(0.7, 2.0)),
            O::Pow => (Dom::In(0.5, 2.0), Dom::In(-2.0, 2.0)),
            O::Atan2 => (Dom::Away(0.3, 2.0), Dom::Away(0.3, 2.0)),
            O::And
            | O::Or
            | O::Xor
            | O::BitAnd
            | O::BitOr
            | O::BitXor
            | O::ShiftLeft
            | O::ShiftRight
            | O::NextAfter => return None,
        })
    };
    O::ALL
        .into_iter()
        .filter_map(|op| domains(op).map(|(a, b)| (op, a, b)))
        .collect()
}

/// Operand shapes of matmul from rank 1 to 4, with batch broadcasting both ways.
pub const MATMUL_SHAPES: [(&[usize], &[usize]); 15] = [
    (&[3], &[3]),
    (&[3], &[3, 4]),
    (&[2, 3], &[3]),
    (&[2, 3], &[3, 4]),
    (&[1, 3], &[3, 1]),
    (&[2, 2, 3], &[3, 4]),
    (&[2, 3], &[2, 3, 4]),
    (&[2, 2, 3], &[2, 3, 4]),
    (&[2, 1, 2, 3], &[3, 3, 2]),
    (&[3], &[2, 3, 4]),
    (&[2, 1, 2, 3], &[3]),
    (&[1, 2, 3], &[2, 1, 3, 2]),
    (&[2, 1, 1, 3], &[1, 2, 3, 2]),
    (&[2, 2, 2, 3], &[2, 2, 3, 1]),
    (&[2, 0, 3], &[3, 4]),
];
