//! Forward and reverse rules of the family. Every transform is linear, so the forward rule applies
//! the op to the tangent; the reverse rules are the transposes under the real pairing
//! `Re Σ uᵢvᵢ` (JAX's convention for complex numbers, as in the rest of nabla). They are written
//! with the family's own ops, so derivatives of every order exist.
//!
//! With `F` the unscaled forward DFT matrix (symmetric, `Fᵀ = F`), `s` the scale of the op's norm and
//! `N` the product of the transformed lengths:
//!
//! | op | reverse (cotangent `G` of the output) |
//! |---|---|
//! | `fft`, `ifft` (any norm) | the same op applied to `G` (the scaled DFT matrices are symmetric) |
//! | `rfft` | `Re fftₙ(pad(G))`: `G` zero-padded to the full length along the real axis, then the forward complex transform with the same norm |
//! | `irfft` | `conj(w ⊙ rfft(g))` with the dual norm (same scale), `w = 1` at the zero frequency and at the Nyquist frequency of an even length, `2` elsewhere |
//!
//! The `irfft` rule is JAX's: `irfft` reads each non-negative frequency once but uses it twice (with
//! its conjugate), except the zero and Nyquist frequencies, whose imaginary parts it ignores; the
//! cotangent it gives them is real.

use crate::ops::{FFT, Fft, IRFFT, Irfft, RFFT, Rfft};
use nabla_core::{Backend, Error, ExtensionOp, Result};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::sync::Arc;

type Grads<B> = Result<Vec<Option<Tensor<B>>>>;

/// The Fourier-transform extension family: every op of this crate is recorded with its rules bound,
/// so `backward`, `grad`, `jvp`, `hessian`, `vmap` and every other transform differentiate it with no
/// setup, eager and traced.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fourier;

impl ExtensionFamily for Fourier {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        rules()
    }
}

/// Runs one of the family's ops on `x`, recorded with the family's rules.
pub(crate) fn apply<B: Backend>(op: impl ExtensionOp, x: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<Fourier>(Arc::new(op), &[x])
}

/// The parameters of the op a rule was called for.
fn params<T: Clone + 'static, B: Backend>(args: &RuleArgs<'_, B>, name: &'static str) -> Result<T> {
    args.op
        .as_any()
        .downcast_ref::<T>()
        .cloned()
        .ok_or_else(|| Error::invalid(name, "rule called with another op"))
}

/// `t` in `like`'s dtype (a no-op when it already is).
fn as_dtype_of<B: Backend>(t: &Tensor<B>, like: &Tensor<B>) -> Result<Tensor<B>> {
    if t.dtype() == like.dtype() {
        Ok(t.clone())
    } else {
        t.cast(like.dtype())
    }
}

/// The absolute position of a negative axis in a tensor of rank `rank`.
fn position(axis: isize, rank: usize) -> usize {
    (rank as isize + axis) as usize
}

fn fft_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let op: Fft = params(args, FFT)?;
    t[0].as_ref()
        .map(|d| apply(op, &as_dtype_of(d, &args.inputs[0])?))
        .transpose()
}

fn fft_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let op: Fft = params(args, FFT)?;
    Ok(vec![Some(apply(op, &as_dtype_of(g, args.output)?)?)])
}

fn rfft_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let op: Rfft = params(args, RFFT)?;
    t[0].as_ref()
        .map(|d| apply(op, &as_dtype_of(d, &args.inputs[0])?))
        .transpose()
}

fn rfft_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let op: Rfft = params(args, RFFT)?;
    let x = &args.inputs[0];
    let g = as_dtype_of(g, args.output)?;
    let axis = op
        .axes
        .last()
        .copied()
        .ok_or_else(|| Error::invalid(RFFT, "no axes"))?;
    let at = position(axis, g.rank());
    let mut pads = vec![(0, 0); g.rank()];
    pads[at] = (0, x.shape()[at] - g.shape()[at]);
    let full = apply(
        Fft {
            axes: op.axes,
            inverse: false,
            norm: op.norm,
        },
        &g.pad(&pads, 0.0)?,
    )?;
    Ok(vec![Some(full.real()?)])
}

fn irfft_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let op: Irfft = params(args, IRFFT)?;
    t[0].as_ref()
        .map(|d| apply(op, &as_dtype_of(d, &args.inputs[0])?))
        .transpose()
}

fn irfft_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let op: Irfft = params(args, IRFFT)?;
    let axis = op
        .axes
        .last()
        .copied()
        .ok_or_else(|| Error::invalid(IRFFT, "no axes"))?;
    let spectrum = apply(
        Rfft {
            axes: op.axes.clone(),
            norm: op.norm.dual(),
        },
        &as_dtype_of(g, args.output)?,
    )?;
    // The weights along the real axis, shaped to broadcast against the spectrum.
    let m = op.len / 2 + 1;
    let weights: Vec<f64> = (0..m)
        .map(|k| {
            if k == 0 || (op.len.is_multiple_of(2) && k == m - 1) {
                1.0
            } else {
                2.0
            }
        })
        .collect();
    let mut shape = vec![m];
    shape.extend(std::iter::repeat_n(1, (-axis - 1) as usize));
    let w = Tensor::from_vec(weights, shape, g.backend())?.cast(spectrum.dtype())?;
    Ok(vec![Some(spectrum.mul(&w)?.conj()?)])
}

/// The forward and reverse rules of the family's ops (`fft.fft`, `fft.rfft`, `fft.irfft`). They are
/// bound to each op when it is recorded ([`Fourier`]); this set is also a starting point for
/// [`nabla_tensor::AdContextBuilder::with_extension_rules`] overrides.
pub fn rules<B: Backend>() -> ExtensionRules<B> {
    ExtensionRules::new()
        .forward(FFT, fft_forward::<B>)
        .reverse(FFT, fft_reverse::<B>)
        .forward(RFFT, rfft_forward::<B>)
        .reverse(RFFT, rfft_reverse::<B>)
        .forward(IRFFT, irfft_forward::<B>)
        .reverse(IRFFT, irfft_reverse::<B>)
}
