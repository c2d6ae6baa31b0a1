//! The native loop of an Adam/AdamW update ([`nabla_core::HostLoop::Adam`]): each element's update
//! in registers, one pass over the parameter, the gradient and the moments, with the operations, the
//! order and the roundings of the fused kernel's steps ([`AdamCoefficients`]), so results agree bit
//! for bit with the steps run one by one.

use crate::elementwise::Real;
use nabla_core::fast_path::{AdamCoefficients, AdamUpdate};
use nabla_core::{Element, Scalar};
use rayon::prelude::*;

/// `maximum` as the kernel's step computes it: NaN wins.
#[inline]
fn maximum<T: Real>(x: T, y: T) -> T {
    #[allow(clippy::eq_op)] // `x != x` is the NaN test of the generic float.
    let x_is_nan = x != x;
    if x >= y || x_is_nan { x } else { y }
}

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

thread_local! {
    /// Runs of the native loop on this thread (see [`crate::host_loop_runs`]).
    static NATIVE_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Adam updates run natively on this thread so far.
pub(crate) fn native_runs() -> usize {
    NATIVE_RUNS.with(|runs| runs.get())
}

/// Elements per task: large enough to amortise scheduling, small enough to stay in cache.
const CHUNK: usize = 1 << 14;

/// Tensors smaller than this are updated on the calling thread.
const PARALLEL_THRESHOLD: usize = 1 << 15;

/// One task's slices: the parameter, gradient, moments and (AMSGrad) running maximum.
type Task<'a, T> = (
    &'a mut [T],
    &'a [T],
    &'a mut [T],
    &'a mut [T],
    Option<&'a mut [T]>,
);

/// Runs `step` in place on `results = [m, v, (max,) p]` with `reads = [grad]`; `false` when the
/// slices are not of that form.
pub(crate) fn run<T: Real>(step: &AdamUpdate, results: &mut [&mut [T]], reads: &[&[T]]) -> bool {
    let (m, v, max, p) = match results {
        [m, v, p] if !step.amsgrad => (m, v, None, p),
        [m, v, max, p] if step.amsgrad => (m, v, Some(&mut **max), p),
        _ => return false,
    };
    let [grad] = reads else { return false };
    let n = p.len();
    if [m.len(), v.len(), grad.len()].iter().any(|&len| len != n)
        || max.as_ref().is_some_and(|x| x.len() != n)
    {
        return false;
    }
    NATIVE_RUNS.with(|runs| runs.set(runs.get() + 1));
    let c = step.coefficients;
    let k = Coefficients::<T>::new(&c);
    let (l2, decay) = (c.l2_decay.is_some(), c.param_decay.is_some());
    let run_task = |(p, g, m, v, max): Task<'_, T>| {
        // The options pick a loop compiled without their branches.
        match (l2, decay) {
            (false, false) => update::<T, false, false>(&k, p, g, m, v, max),
            (true, false) => update::<T, true, false>(&k, p, g, m, v, max),
            (false, true) => update::<T, false, true>(&k, p, g, m, v, max),
            (true, true) => update::<T, true, true>(&k, p, g, m, v, max),
        }
    };
    let mut maxes: Vec<Option<&mut [T]>> = match max {
        Some(x) => x.chunks_mut(CHUNK).map(Some).collect(),
        None => (0..n.div_ceil(CHUNK)).map(|_| None).collect(),
    };
    let tasks: Vec<Task<'_, T>> = p
        .chunks_mut(CHUNK)
        .zip(grad.chunks(CHUNK))
        .zip(m.chunks_mut(CHUNK))
        .zip(v.chunks_mut(CHUNK))
        .zip(maxes.drain(..))
        .map(|((((p, g), m), v), max)| (p, g, m, v, max))
        .collect();
    if !crate::splits(n, PARALLEL_THRESHOLD) {
        tasks.into_iter().for_each(run_task);
    } else {
        tasks.into_par_iter().for_each(run_task);
    }
    true
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

crate::simd_kernel! {
    /// The element loop, compiled for each SIMD level the CPU may have (no operation is contracted
    /// into a fused multiply-add: each rounds as its step does).
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
                let s = maximum(max[i], vi);
                max[i] = s;
                s
            } else {
                vi
            };
            let base = if DECAY { pi * k.param_decay } else { pi };
            p[i] = base - mi / (second.sqrt() / k.bias_correction2_sqrt + k.eps) * k.step_size;
        }
    }
}
