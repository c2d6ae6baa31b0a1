//! Gradient checking: reverse-mode derivatives compared with central finite differences in `f64`.
//!
//! [`check_gradients`] converts the inputs to `f64`, contracts the output (of any shape) with a fixed
//! pseudo-random cotangent `c` so that every output element takes part, and compares, element by element
//! of every input, the analytic gradient of `φ(x) = Σ f(x) · c` (one [`vjp_n`] call) with the central
//! difference `(φ(x + ε eᵢ) − φ(x − ε eᵢ)) / 2ε`. [`check_second_order`] does the same for
//! `ψ(x) = Σᵢ ∇ᵢφ(x) · vᵢ` with a random direction `v`, so it tests the gradient of a gradient (built by
//! a nested reverse pass) against finite differences of the analytic gradient.
//!
//! Complex inputs (checked in complex128) are perturbed along their real and imaginary parts separately.
//! Under the convention of the crate docs (reverse mode is the transpose under `Re Σ u·v`), the
//! analytic derivative of `φ(x) = Re Σ f(x) · c` along the real part of element `j` is `Re gⱼ` and along
//! the imaginary part `−Im gⱼ`, where `g` is the vector-Jacobian product with the cotangent `c` (complex
//! for a complex output).
//!
//! The result is a [`GradCheckReport`]: the largest absolute and relative errors per input, the worst
//! element, and [`GradCheckReport::assert_close`] to turn it into a test verdict whose error names the
//! offending element.

use super::functional::vjp_n;
use crate::Tensor;
use nabla_core::{Backend, DType, Error, Generator, Result};
use num_complex::Complex64;
use std::fmt;

const OP: &str = "check_gradients";

/// Settings of [`check_gradients`] and [`check_second_order`].
#[derive(Clone, Debug, PartialEq)]
pub struct GradCheckOptions {
    /// Step of the central differences, added to and subtracted from each input element (default
    /// `1e-6`, which balances truncation and rounding error in `f64` for inputs of order one).
    pub eps: f64,
    /// Seed of the pseudo-random cotangent (and, for second order, direction); the same seed gives the
    /// same check every run.
    pub seed: u64,
    /// Floor of the denominator of relative errors, `|a − n| / max(|a|, |n|, rel_floor)`, so that
    /// gradients near zero are judged by their absolute error (default `1e-3`).
    pub rel_floor: f64,
    /// At most this many elements of each input are perturbed, evenly spaced over its flat index
    /// (`None`, the default: all of them). Large inputs cost two evaluations of `f` per element.
    pub max_elements_per_input: Option<usize>,
}

impl Default for GradCheckOptions {
    fn default() -> Self {
        GradCheckOptions {
            eps: 1e-6,
            seed: 0x5eed_9bad,
            rel_floor: 1e-3,
            max_elements_per_input: None,
        }
    }
}

/// One checked element: the analytic and numeric derivative of the contracted output with respect to
/// element `index` (flat, row-major) of input `input` (its imaginary part when `imaginary`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElementCheck {
    /// Which input (position in the slice given to the check).
    pub input: usize,
    /// Flat row-major index of the element within that input.
    pub index: usize,
    /// `true` when the derivative is along the imaginary part of a complex element, `false` along the
    /// real part (or the element of a real input).
    pub imaginary: bool,
    /// The derivative from the reverse pass.
    pub analytic: f64,
    /// The central-difference estimate.
    pub numeric: f64,
    /// `|analytic − numeric|` (infinite when exactly one is NaN or they are infinities that differ).
    pub abs_error: f64,
    /// `abs_error / max(|analytic|, |numeric|, rel_floor)`.
    pub rel_error: f64,
}

impl ElementCheck {
    fn new(at: (usize, usize, bool), analytic: f64, numeric: f64, floor: f64) -> Self {
        let (input, index, imaginary) = at;
        let abs_error = if analytic == numeric {
            0.0
        } else {
            let d = (analytic - numeric).abs();
            if d.is_nan() { f64::INFINITY } else { d }
        };
        let scale = analytic.abs().max(numeric.abs()).max(floor);
        let rel_error = if abs_error == 0.0 {
            0.0
        } else {
            abs_error / scale
        };
        ElementCheck {
            input,
            index,
            imaginary,
            analytic,
            numeric,
            abs_error,
            rel_error,
        }
    }

    /// `true` when `|analytic − numeric| <= atol + rtol · |numeric|` (NumPy's `allclose` criterion with
    /// the finite difference as the reference).
    pub fn is_close(&self, atol: f64, rtol: f64) -> bool {
        self.abs_error <= atol + rtol * self.numeric.abs()
    }

    /// How far outside the tolerance the element is: `abs_error / (atol + rtol · |numeric|)`, above 1
    /// for a failure.
    fn excess(&self, atol: f64, rtol: f64) -> f64 {
        let allowed = atol + rtol * self.numeric.abs();
        if self.abs_error == 0.0 {
            0.0
        } else if allowed > 0.0 {
            self.abs_error / allowed
        } else {
            f64::INFINITY
        }
    }
}

/// The checked elements of one input.
#[derive(Clone, Debug, PartialEq)]
pub struct InputCheck {
    /// Shape of the input.
    pub shape: Vec<usize>,
    /// Every perturbed element, in increasing flat index.
    pub elements: Vec<ElementCheck>,
    /// Largest absolute error over the elements (0 when none were checked).
    pub max_abs_error: f64,
    /// Largest relative error over the elements (0 when none were checked).
    pub max_rel_error: f64,
}

/// What [`check_gradients`] found: per-input errors, the worst element, and a verdict for given
/// tolerances.
#[derive(Clone, Debug, PartialEq)]
pub struct GradCheckReport {
    /// One entry per input, in order.
    pub inputs: Vec<InputCheck>,
    /// Shape of the function's output (before contraction with the cotangent).
    pub output_shape: Vec<usize>,
    /// `"first order"` or `"second order"`, for messages.
    pub order: &'static str,
    /// The finite-difference step used.
    pub eps: f64,
}

impl GradCheckReport {
    /// Number of elements compared, over all inputs (complex elements count twice: real and imaginary
    /// part).
    pub fn checked(&self) -> usize {
        self.inputs.iter().map(|i| i.elements.len()).sum()
    }

    /// Largest absolute error over all inputs.
    pub fn max_abs_error(&self) -> f64 {
        self.inputs
            .iter()
            .map(|i| i.max_abs_error)
            .fold(0.0, f64::max)
    }

    /// Largest relative error (with the `rel_floor` of the options) over all inputs.
    pub fn max_rel_error(&self) -> f64 {
        self.inputs
            .iter()
            .map(|i| i.max_rel_error)
            .fold(0.0, f64::max)
    }

    fn elements(&self) -> impl Iterator<Item = &ElementCheck> {
        self.inputs.iter().flat_map(|i| i.elements.iter())
    }

    /// The element with the largest relative error (the first such), or `None` when nothing was checked.
    pub fn worst(&self) -> Option<&ElementCheck> {
        self.elements()
            .fold(None, |best: Option<&ElementCheck>, e| match best {
                Some(b) if b.rel_error >= e.rel_error => Some(b),
                _ => Some(e),
            })
    }

    /// `true` when every element satisfies `|analytic − numeric| <= atol + rtol · |numeric|`.
    pub fn passed(&self, atol: f64, rtol: f64) -> bool {
        self.elements().all(|e| e.is_close(atol, rtol))
    }

    /// `Ok` when [`passed`](Self::passed), otherwise an [`Error::Autodiff`] naming the element furthest
    /// outside the tolerance (input, flat and multi-dimensional index, both values) and the number of
    /// failing elements.
    pub fn assert_close(&self, atol: f64, rtol: f64) -> Result<()> {
        let mut failing = 0usize;
        let mut worst: Option<(&ElementCheck, f64)> = None;
        for e in self.elements() {
            if e.is_close(atol, rtol) {
                continue;
            }
            failing += 1;
            let x = e.excess(atol, rtol);
            if worst.is_none_or(|(_, w)| x > w) {
                worst = Some((e, x));
            }
        }
        let Some((e, _)) = worst else {
            return Ok(());
        };
        let shape = &self.inputs[e.input].shape;
        Err(Error::autodiff(
            OP,
            format!(
                "{} gradient mismatch in {failing} of {} elements; worst: input {} element {}{} \
                 (index {:?} of shape {:?}): analytic {:e}, numeric {:e}, abs error {:e}, rel error {:e} \
                 (allowed {:e} + {:e} * |numeric|; eps {:e}, output shape {:?})",
                self.order,
                self.checked(),
                e.input,
                e.index,
                part(e),
                unravel(e.index, shape),
                shape,
                e.analytic,
                e.numeric,
                e.abs_error,
                e.rel_error,
                atol,
                rtol,
                self.eps,
                self.output_shape,
            ),
        ))
    }
}

impl fmt::Display for GradCheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} gradient check of {} elements (eps {:e}, output shape {:?})",
            self.order,
            self.checked(),
            self.eps,
            self.output_shape
        )?;
        for (i, input) in self.inputs.iter().enumerate() {
            writeln!(
                f,
                "  input {i} {:?}: {} elements, max abs error {:e}, max rel error {:e}",
                input.shape,
                input.elements.len(),
                input.max_abs_error,
                input.max_rel_error
            )?;
        }
        if let Some(w) = self.worst() {
            write!(
                f,
                "  worst: input {} element {}{} {:?}: analytic {:e}, numeric {:e}",
                w.input,
                w.index,
                part(w),
                unravel(w.index, &self.inputs[w.input].shape),
                w.analytic,
                w.numeric
            )?;
        }
        Ok(())
    }
}

/// How a message names the coordinate of a checked element.
fn part(e: &ElementCheck) -> &'static str {
    if e.imaginary { " (imaginary part)" } else { "" }
}

/// The multi-index of flat row-major position `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = i % shape[d];
            i /= shape[d];
        }
    }
    idx
}

/// `n` deterministic pseudo-random values in `±[0.5, 1.5)` (bounded away from zero so that no element
/// is weighted out of the check), from stream `stream` of `seed`.
fn weights(n: usize, seed: u64, stream: u64) -> Vec<f64> {
    let key = Generator::new(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_key(n);
    (0..n as u64)
        .map(|i| {
            let v = 2.0 * key.uniform_f64(i) - 1.0;
            v + 0.5f64.copysign(v)
        })
        .collect()
}

/// `n` pseudo-random weights as in [`weights`], complex (with an imaginary part from another stream)
/// when `complex`.
fn complex_weights(n: usize, seed: u64, stream: u64, complex: bool) -> Vec<Complex64> {
    let re = weights(n, seed, stream);
    let im = if complex {
        weights(n, seed, stream ^ 0x1_0000)
    } else {
        vec![0.0; n]
    };
    re.into_iter()
        .zip(im)
        .map(|(r, i)| Complex64::new(r, i))
        .collect()
}

/// The cotangent that contracts the output `y`: 1 for a one-element real output, otherwise
/// pseudo-random weights (complex for a complex output).
fn cotangent_weights<B: Backend>(y: &Tensor<B>, seed: u64) -> Vec<Complex64> {
    if y.numel() == 1 && !y.dtype().is_complex() {
        vec![Complex64::new(1.0, 0.0)]
    } else {
        complex_weights(y.numel(), seed, 1, y.dtype().is_complex())
    }
}

/// A tensor of `shape` holding `values` on the backend of `like`: complex128 when `dtype` is complex,
/// otherwise the real parts in `dtype`.
fn tensor_like<B: Backend>(
    like: &Tensor<B>,
    values: &[Complex64],
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor<B>> {
    if dtype.is_complex() {
        return Tensor::from_slice(values, shape.to_vec(), like.backend())?.cast(dtype);
    }
    let re: Vec<f64> = values.iter().map(|v| v.re).collect();
    Tensor::from_slice(&re, shape.to_vec(), like.backend())?.cast(dtype)
}

/// The values of `t` as complex numbers (zero imaginary parts for a real `t`).
fn complex_values<B: Backend>(t: &Tensor<B>) -> Result<Vec<Complex64>> {
    t.detach().cast(DType::C128)?.to_vec::<Complex64>()
}

/// The inputs as untracked `f64` (real) or complex128 (complex) tensors (views kept as they are when
/// already of that dtype).
fn to_f64_inputs<B: Backend>(inputs: &[Tensor<B>]) -> Result<Vec<Tensor<B>>> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, x)| {
            if x.dtype().is_complex() {
                return x.detach().cast(DType::C128);
            }
            if !x.dtype().is_float() {
                return Err(Error::autodiff(
                    OP,
                    format!(
                        "input {i} has dtype {} (shape {:?}); only float inputs can be checked (and \
                         complex ones) — capture index tensors in the closure instead",
                        x.dtype(),
                        x.shape()
                    ),
                ));
            }
            x.detach().cast(DType::F64)
        })
        .collect()
}

/// `Re Σ y · c` in `f64` on the host.
fn contract<B: Backend>(y: &Tensor<B>, c: &[Complex64]) -> Result<f64> {
    let v = complex_values(y)?;
    if v.len() != c.len() {
        return Err(Error::autodiff(
            OP,
            format!(
                "the function's output changed size from {} to {} elements between evaluations",
                c.len(),
                v.len()
            ),
        ));
    }
    Ok(v.iter().zip(c).map(|(a, b)| (a * b).re).sum())
}

/// The flat indices of a `numel`-element input to perturb.
fn selected(numel: usize, limit: Option<usize>) -> Vec<usize> {
    match limit {
        Some(m) if m < numel => {
            let mut picked: Vec<usize> = (0..m).map(|k| k * numel / m).collect();
            picked.dedup();
            picked
        }
        _ => (0..numel).collect(),
    }
}

/// Compares the reverse-mode gradient of `f` at `inputs` with central finite differences in `f64`.
///
/// The inputs are converted to `f64` (untracked; views keep their strides, so strided kernels are
/// exercised on the analytic side; complex inputs become complex128) and `f` is called on them. Its
/// output, of any shape and float or complex dtype, is contracted with a fixed pseudo-random cotangent
/// `c` (`1` for a one-element real output, complex for a complex output), so the check covers the
/// whole Jacobian through `φ(x) = Re Σ f(x) · c`. The analytic gradients come from one
/// [`vjp_n`]; the numeric ones perturb each input element by `±eps` (in a contiguous copy) and evaluate
/// `f` twice. Errors from `f` are returned as they are; a mismatch is not an error but a report to judge
/// with [`GradCheckReport::assert_close`] or [`GradCheckReport::passed`].
///
/// `f` must be deterministic and must compute with ops that record (not inside `no_grad`).
///
/// ```
/// use nabla_tensor::{GradCheckOptions, Tensor, check_gradients};
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25, 1.5, -0.75], [2, 3], &cpu)?;
/// let b = Tensor::from_vec(vec![1.0f32, 2.0, -0.5], [3], &cpu)?;
/// // A non-scalar function of two inputs, with broadcasting.
/// let f = |v: &[Tensor<CpuBackend>]| v[0].mul(&v[1])?.sin();
/// let report = check_gradients(f, &[a, b], &GradCheckOptions::default())?;
/// assert_eq!(report.checked(), 9);
/// report.assert_close(1e-7, 1e-6)?;
/// assert!(report.max_abs_error() < 1e-7);
///
/// // A wrong derivative is caught, and the message names the element.
/// let x = Tensor::from_vec(vec![0.5f64, 1.0], [2], &cpu)?;
/// let wrong = |v: &[Tensor<CpuBackend>]| {
///     // The value of x^2 with the derivative of x (the detached part carries no gradient).
///     let x = &v[0];
///     x.add(&x.square()?.sub(x)?.detach())
/// };
/// let err = check_gradients(wrong, &[x], &GradCheckOptions::default())?
///     .assert_close(1e-6, 1e-5)
///     .unwrap_err();
/// assert!(err.to_string().contains("worst: input 0 element 1"), "{err}");
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn check_gradients<B, F>(
    f: F,
    inputs: &[Tensor<B>],
    opts: &GradCheckOptions,
) -> Result<GradCheckReport>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    check(&f, inputs, opts, "first order")
}

fn check<B, F>(
    f: &F,
    inputs: &[Tensor<B>],
    opts: &GradCheckOptions,
    order: &'static str,
) -> Result<GradCheckReport>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    if !(opts.eps > 0.0 && opts.eps.is_finite()) {
        return Err(Error::invalid(
            OP,
            format!("eps must be positive and finite, got {}", opts.eps),
        ));
    }
    let xs = to_f64_inputs(inputs)?;
    let y = f(&xs)?;
    if !(y.dtype().is_float() || y.dtype().is_complex()) {
        return Err(Error::autodiff(
            OP,
            format!(
                "the function returned a {} tensor (shape {:?}); only float outputs (and complex \
                 ones) have gradients",
                y.dtype(),
                y.shape()
            ),
        ));
    }
    let output_shape = y.shape().to_vec();
    let c = cotangent_weights(&y, opts.seed);
    let cot = tensor_like(&y, &c, &output_shape, y.dtype())?;
    drop(y);
    let (_, grads) = vjp_n(f, &xs, &cot)?;

    let mut reports = Vec::with_capacity(xs.len());
    for (i, (x, g)) in xs.iter().zip(&grads).enumerate() {
        let analytic = complex_values(g)?;
        let mut values = complex_values(x)?;
        let parts: &[bool] = if x.dtype().is_complex() {
            &[false, true]
        } else {
            &[false]
        };
        let mut args = xs.clone();
        let mut elements = Vec::new();
        for j in selected(values.len(), opts.max_elements_per_input) {
            for &imaginary in parts {
                let v = values[j];
                let coordinate = |z: Complex64| if imaginary { z.im } else { z.re };
                let step = |d: f64| {
                    if imaginary {
                        Complex64::new(v.re, v.im + d)
                    } else {
                        Complex64::new(v.re + d, v.im)
                    }
                };
                let (hi, lo) = (step(opts.eps), step(-opts.eps));
                values[j] = hi;
                args[i] = tensor_like(x, &values, x.shape(), x.dtype())?;
                let up = contract(&f(&args)?, &c)?;
                values[j] = lo;
                args[i] = tensor_like(x, &values, x.shape(), x.dtype())?;
                let down = contract(&f(&args)?, &c)?;
                values[j] = v;
                // The step actually taken, after rounding of v ± eps.
                let numeric = (up - down) / (coordinate(hi) - coordinate(lo));
                // d/d(Re z) Re(g·δz) = Re g; d/d(Im z) = Re(i g) = −Im g.
                let a = if imaginary {
                    -analytic[j].im
                } else {
                    analytic[j].re
                };
                elements.push(ElementCheck::new(
                    (i, j, imaginary),
                    a,
                    numeric,
                    opts.rel_floor,
                ));
            }
        }
        let max_abs_error = elements.iter().map(|e| e.abs_error).fold(0.0, f64::max);
        let max_rel_error = elements.iter().map(|e| e.rel_error).fold(0.0, f64::max);
        reports.push(InputCheck {
            shape: x.shape().to_vec(),
            elements,
            max_abs_error,
            max_rel_error,
        });
    }
    Ok(GradCheckReport {
        inputs: reports,
        output_shape,
        order,
        eps: opts.eps,
    })
}

/// Checks second derivatives: the gradient of `ψ(x) = Re Σᵢ ∇ᵢφ(x) · vᵢ`, where `φ(x) = Re Σ f(x) · c`
/// as in [`check_gradients`] and `v` is a fixed pseudo-random direction (complex for complex inputs),
/// against central differences of `ψ`.
///
/// The analytic side differentiates through a reverse pass (nested [`vjp_n`], so the rules' own
/// derivatives are exercised); the numeric side evaluates the first-order analytic gradient at
/// perturbed inputs. Agreement therefore means the Hessian-vector product `H v` is right, given that the
/// first-order gradient is (check that with [`check_gradients`]).
///
/// ```
/// use nabla_tensor::{GradCheckOptions, Tensor, check_second_order};
/// use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![0.3f64, -0.7, 1.1], [3], &CpuBackend::new())?;
/// let f = |v: &[Tensor<CpuBackend>]| v[0].tanh()?.mul(&v[0].exp()?);
/// check_second_order(f, &[x], &GradCheckOptions::default())?.assert_close(1e-7, 1e-6)?;
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn check_second_order<B, F>(
    f: F,
    inputs: &[Tensor<B>],
    opts: &GradCheckOptions,
) -> Result<GradCheckReport>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    let xs = to_f64_inputs(inputs)?;
    let y = f(&xs)?;
    let c = cotangent_weights(&y, opts.seed);
    let cot = tensor_like(&y, &c, y.shape(), y.dtype())?;
    drop(y);
    let directions = xs
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let v = complex_weights(x.numel(), opts.seed, 2 + i as u64, x.dtype().is_complex());
            tensor_like(x, &v, x.shape(), x.dtype())
        })
        .collect::<Result<Vec<_>>>()?;
    let psi = |v: &[Tensor<B>]| -> Result<Tensor<B>> {
        let (_, grads) = vjp_n(&f, v, &cot)?;
        let mut total: Option<Tensor<B>> = None;
        for (g, d) in grads.iter().zip(&directions) {
            // Re Σ g·d (the pairing of the convention), real for real inputs.
            let term = g.cast(d.dtype())?.mul(d)?.real()?.sum_all()?;
            total = Some(match total {
                None => term,
                Some(t) => t.add(&term)?,
            });
        }
        match total {
            Some(t) => Ok(t),
            None => Tensor::zeros([], DType::F64, cot.backend()),
        }
    };
    check(&psi, &xs, opts, "second order")
}
