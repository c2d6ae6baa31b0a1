//! The native loop for [`KnownKernel::Adam`] kernels: each element's update in registers, one pass
//! over the parameter, gradient and moments, instead of the blocked evaluation of the kernel's
//! steps. The operations, their order and their roundings are the steps' ([`AdamCoefficients`]), so
//! the results are the same bit for bit.
//!
//! [`KnownKernel::Adam`]: nabla_core::KnownKernel::Adam

use super::binary::maximum_real;
use super::traits::Real;
use crate::PARALLEL_THRESHOLD;
use crate::strided::CHUNK;
use nabla_core::{AdamCoefficients, AdamStep, Element, Scalar};
use rayon::prelude::*;

/// The coefficients converted to the element type, as the kernel's constant steps convert them.
#[derive(Clone, Copy)]
struct Coefficients<T> {
    l2_decay: T,
    one_minus_beta1: T,
    beta2: T,
    one_minus_beta2: T,
    param_decay: T,
    bias_correction2_sqrt: T,
    eps: T,
    step_size: T,
}

impl<T: Element> Coefficients<T> {
    fn new(c: &AdamCoefficients) -> Self {
        let t = |x: f64| T::from_scalar(Scalar::F64(x));
        Coefficients {
            l2_decay: t(c.l2_decay.unwrap_or(0.0)),
            one_minus_beta1: t(c.one_minus_beta1),
            beta2: t(c.beta2),
            one_minus_beta2: t(c.one_minus_beta2),
            param_decay: t(c.param_decay.unwrap_or(1.0)),
            bias_correction2_sqrt: t(c.bias_correction2_sqrt),
            eps: t(c.eps),
            step_size: t(c.step_size),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Calls of [`adam_in_place`] on this thread, so tests can tell the native loop ran.
    pub(super) static NATIVE_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One task's slices: the parameter, gradient, moments and (AMSGrad) running maximum.
type Task<'a, T> = (
    &'a mut [T],
    &'a [T],
    &'a mut [T],
    &'a mut [T],
    Option<&'a mut [T]>,
);

/// Runs `step` in place: `param`, `exp_avg`, `exp_avg_sq` and `max_exp_avg_sq` (with AMSGrad) hold
/// the current values and receive the new ones; `grad` is read.
pub(super) fn adam_in_place<T: Real>(
    step: &AdamStep,
    param: &mut [T],
    grad: &[T],
    exp_avg: &mut [T],
    exp_avg_sq: &mut [T],
    max_exp_avg_sq: Option<&mut [T]>,
) {
    #[cfg(test)]
    NATIVE_RUNS.with(|runs| runs.set(runs.get() + 1));
    let c = step.coefficients();
    let k = Coefficients::<T>::new(&c);
    let (l2, decay) = (c.l2_decay.is_some(), c.param_decay.is_some());
    let run = |(p, g, m, v, max): Task<'_, T>| {
        // The options pick a loop compiled without their branches.
        match (l2, decay) {
            (false, false) => update::<T, false, false>(&k, p, g, m, v, max),
            (true, false) => update::<T, true, false>(&k, p, g, m, v, max),
            (false, true) => update::<T, false, true>(&k, p, g, m, v, max),
            (true, true) => update::<T, true, true>(&k, p, g, m, v, max),
        }
    };
    let n = param.len();
    let mut maxes: Vec<Option<&mut [T]>> = match max_exp_avg_sq {
        Some(x) => x.chunks_mut(CHUNK).map(Some).collect(),
        None => (0..n.div_ceil(CHUNK)).map(|_| None).collect(),
    };
    let tasks: Vec<Task<'_, T>> = param
        .chunks_mut(CHUNK)
        .zip(grad.chunks(CHUNK))
        .zip(exp_avg.chunks_mut(CHUNK))
        .zip(exp_avg_sq.chunks_mut(CHUNK))
        .zip(maxes.drain(..))
        .map(|((((p, g), m), v), max)| (p, g, m, v, max))
        .collect();
    if n < PARALLEL_THRESHOLD {
        tasks.into_iter().for_each(run);
    } else {
        tasks.into_par_iter().for_each(run);
    }
}

/// The update of one task's elements; `L2` adds the decay to the gradient, `DECAY` scales the
/// parameter (AdamW).
fn update<T: Real, const L2: bool, const DECAY: bool>(
    k: &Coefficients<T>,
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
    max: Option<&mut [T]>,
) {
    match max {
        None => update_loop::<T, L2, DECAY, false>(k, p, g, m, v, &mut []),
        Some(max) => update_loop::<T, L2, DECAY, true>(k, p, g, m, v, max),
    }
}

/// The element loop, compiled for AVX2+FMA when the CPU has it (no operation is contracted into a
/// fused multiply-add: each rounds as its step does).
#[multiversion::multiversion(targets("x86_64+avx2+fma"))]
fn update_loop<T: Real, const L2: bool, const DECAY: bool, const AMS: bool>(
    k: &Coefficients<T>,
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
    max: &mut [T],
) {
    let n = p.len();
    let (g, m, v) = (&g[..n], &mut m[..n], &mut v[..n]);
    for i in 0..n {
        let pi = p[i];
        let gi = if L2 { g[i] + pi * k.l2_decay } else { g[i] };
        let mi = m[i] + (gi - m[i]) * k.one_minus_beta1;
        let vi = v[i] * k.beta2 + (gi * gi) * k.one_minus_beta2;
        m[i] = mi;
        v[i] = vi;
        let second = if AMS {
            let s = maximum_real(max[i], vi);
            max[i] = s;
            s
        } else {
            vi
        };
        let base = if DECAY { pi * k.param_decay } else { pi };
        p[i] = base - mi / (second.sqrt() / k.bias_correction2_sqrt + k.eps) * k.step_size;
    }
}
