//! One Adam/AdamW update as a fused kernel with several results, carrying a native loop
//! ([`nabla_core::HostLoop`]) that host backends run instead of interpreting the steps: each
//! element's update in registers, one pass over the parameter, gradient and moments. The loop's
//! operations, their order and their roundings are the steps' ([`AdamCoefficients`]), so results
//! agree bit for bit.

use nabla_core::Element;
use nabla_core::{BinaryOp, DType, FusedBuilder, FusedKernel, HostLoop, Result, Scalar, UnaryOp};
use rayon::prelude::*;
use std::sync::Arc;

/// The hyper-parameters of one Adam/AdamW update (PyTorch's `torch.optim.Adam` and `AdamW`
/// formulas, single-tensor implementation) at step `step`.
///
/// [`AdamStep::kernel`] builds the update as a [`FusedKernel`] over the inputs
/// `(param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq])` with the results
/// `(exp_avg, exp_avg_sq[, max_exp_avg_sq], param)`, the bracketed ones with `amsgrad` only.
///
/// ```
/// use nabla_core::DType;
/// use nabla_nn::optim::AdamStep;
/// let step = AdamStep { step: 1, ..AdamStep::default() };
/// let kernel = step.kernel(DType::F32)?;
/// assert_eq!((kernel.num_inputs(), kernel.outputs().len()), (4, 3));
/// // The moments and the parameter are updated in place by host backends' native loop.
/// assert_eq!(kernel.host_loop().unwrap().updates(), [2, 3, 0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// Decay of the running average of the gradient.
    pub beta1: f64,
    /// Decay of the running average of its square.
    pub beta2: f64,
    /// Added to the denominator for stability.
    pub eps: f64,
    /// Weight decay: an L2 term added to the gradient, or decoupled (AdamW).
    pub weight_decay: f64,
    /// AdamW's decay: the parameter is scaled by `1 - lr * weight_decay` instead.
    pub decoupled_weight_decay: bool,
    /// Keep the running maximum of the second moments and divide by it.
    pub amsgrad: bool,
    /// The step number, 1 for the first update (for the bias corrections).
    pub step: u64,
}

impl Default for AdamStep {
    /// PyTorch's defaults at the first step.
    fn default() -> Self {
        AdamStep {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled_weight_decay: false,
            amsgrad: false,
            step: 1,
        }
    }
}

/// The constants of one update, each used as the kernel's steps use it (converted from `f64` to the
/// element type): a native kernel computes, in this order and with one rounding per operation,
///
/// ```text
/// g'  = l2_decay.map_or(g, |wd| g + p * wd)
/// m'  = m + (g' - m) * one_minus_beta1
/// v'  = v * beta2 + (g' * g') * one_minus_beta2
/// s   = amsgrad ? maximum(max, v') : v'          (max' = s)
/// p'  = param_decay.map_or(p, |c| p * c) - m' / (sqrt(s) / bias_correction2_sqrt + eps) * step_size
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamCoefficients {
    /// The L2 weight decay added to the gradient (Adam with `weight_decay`).
    pub l2_decay: Option<f64>,
    /// `1 - beta1`.
    pub one_minus_beta1: f64,
    /// `beta2`.
    pub beta2: f64,
    /// `1 - beta2`.
    pub one_minus_beta2: f64,
    /// AdamW's parameter factor `1 - lr * weight_decay`.
    pub param_decay: Option<f64>,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
    /// `eps`.
    pub eps: f64,
    /// `lr / (1 - beta1^step)`.
    pub step_size: f64,
}

impl AdamStep {
    /// Number of state buffers: 2 (the moments), 3 with `amsgrad`.
    pub fn num_moments(&self) -> usize {
        if self.amsgrad { 3 } else { 2 }
    }

    /// The constants of this update.
    pub fn coefficients(&self) -> AdamCoefficients {
        let step = self.step as f64;
        let decay = self.weight_decay != 0.0;
        AdamCoefficients {
            l2_decay: (decay && !self.decoupled_weight_decay).then_some(self.weight_decay),
            one_minus_beta1: 1.0 - self.beta1,
            beta2: self.beta2,
            one_minus_beta2: 1.0 - self.beta2,
            param_decay: (decay && self.decoupled_weight_decay)
                .then_some(1.0 - self.lr * self.weight_decay),
            bias_correction2_sqrt: (1.0 - self.beta2.powf(step)).sqrt(),
            eps: self.eps,
            step_size: self.lr / (1.0 - self.beta1.powf(step)),
        }
    }

    /// The update as a fused kernel over values of `dtype` (see the type's documentation for its
    /// inputs and results), with its native host loop attached.
    pub fn kernel(&self, dtype: DType) -> Result<FusedKernel> {
        let c = self.coefficients();
        let mut k = FusedBuilder::new(dtype);
        let (p, g, m, v) = (k.input(), k.input(), k.input(), k.input());
        let g = match c.l2_decay {
            Some(wd) => {
                let decay = k.scale(p, wd);
                k.add(g, decay)
            }
            None => g,
        };
        // exp_avg + (1 - beta1) * (g - exp_avg): PyTorch's lerp.
        let d = k.sub(g, m);
        let d = k.scale(d, c.one_minus_beta1);
        let m_new = k.add(m, d);
        // exp_avg_sq * beta2 + (1 - beta2) * g * g.
        let v_decayed = k.scale(v, c.beta2);
        let g2 = k.mul(g, g);
        let g2 = k.scale(g2, c.one_minus_beta2);
        let v_new = k.add(v_decayed, g2);
        let (second, max_new) = if self.amsgrad {
            let max = k.input();
            let max_new = k.binary(BinaryOp::Maximum, max, v_new);
            (max_new, Some(max_new))
        } else {
            (v_new, None)
        };
        let p_base = match c.param_decay {
            Some(factor) => k.scale(p, factor),
            None => p,
        };
        let root = k.unary(UnaryOp::Sqrt, second);
        let bc2 = k.constant(c.bias_correction2_sqrt);
        let denom = k.div(root, bc2);
        let denom = k.offset(denom, c.eps);
        let ratio = k.div(m_new, denom);
        let delta = k.scale(ratio, c.step_size);
        let p_new = k.sub(p_base, delta);
        let mut results = vec![m_new, v_new];
        results.extend(max_new);
        results.push(p_new);
        let updates = if self.amsgrad {
            vec![2, 3, 4, 0]
        } else {
            vec![2, 3, 0]
        };
        k.finish_many(&results)?.with_host_loop(Arc::new(AdamLoop {
            step: *self,
            updates,
        }))
    }
}

/// The native loop of an [`AdamStep`] kernel.
#[derive(Debug)]
struct AdamLoop {
    step: AdamStep,
    /// The inputs the results update: the moments, then the parameter.
    updates: Vec<usize>,
}

impl HostLoop for AdamLoop {
    fn updates(&self) -> &[usize] {
        &self.updates
    }

    fn run_f32(&self, results: &mut [&mut [f32]], reads: &[&[f32]]) -> bool {
        run(&self.step, results, reads)
    }

    fn run_f64(&self, results: &mut [&mut [f64]], reads: &[&[f64]]) -> bool {
        run(&self.step, results, reads)
    }
}

/// The element types the loop runs on: `f32` and `f64`.
trait Float: Element + num_traits::Float {}

impl<T: Element + num_traits::Float> Float for T {}

/// `maximum` as the kernel's step computes it: NaN wins.
#[inline]
fn maximum<T: Float>(x: T, y: T) -> T {
    if x >= y || x.is_nan() { x } else { y }
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

#[cfg(test)]
thread_local! {
    /// Runs of the native loop on this thread, so tests can tell it ran.
    static NATIVE_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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
fn run<T: Float>(step: &AdamStep, results: &mut [&mut [T]], reads: &[&[T]]) -> bool {
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
    #[cfg(test)]
    NATIVE_RUNS.with(|runs| runs.set(runs.get() + 1));
    let c = step.coefficients();
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
    if n < PARALLEL_THRESHOLD {
        tasks.into_iter().for_each(run_task);
    } else {
        tasks.into_par_iter().for_each(run_task);
    }
    true
}

/// The update of one task's elements; `L2` adds the decay to the gradient, `DECAY` scales the
/// parameter (AdamW).
fn update<T: Float, const L2: bool, const DECAY: bool>(
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

nabla_core::simd_kernel! {
    /// The element loop, compiled for each SIMD level the CPU may have (no operation is contracted
    /// into a fused multiply-add: each rounds as its step does).
    fn update_loop<T: Float, const L2: bool, const DECAY: bool, const AMS: bool>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_core::{Backend, HostData, Layout};
    use nabla_cpu::{CpuBackend, CpuStorage};

    /// Runs of the native loop on this thread so far.
    fn native_runs() -> usize {
        NATIVE_RUNS.with(|runs| runs.get())
    }

    /// Deterministic values in `[-2, 2)`, with infinities, NaNs and signed zeros first when
    /// `special`.
    fn values(n: usize, seed: u64, special: bool) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f64> = (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
            })
            .collect();
        let specials = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -0.0];
        if special && n > specials.len() {
            v[..specials.len()].copy_from_slice(&specials);
        }
        v
    }

    fn storage(dt: DType, v: Vec<f64>) -> CpuStorage {
        match dt {
            DType::F32 => CpuStorage::from_vec(v.iter().map(|&x| x as f32).collect::<Vec<_>>()),
            _ => CpuStorage::from_vec(v),
        }
    }

    /// Bitwise equal, NaN matching NaN.
    fn same(a: &HostData, b: &HostData) -> bool {
        let (a, b) = (a.to_f64_vec(), b.to_f64_vec());
        a.len() == b.len()
            && a.iter()
                .zip(&b)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn the_native_loop_matches_the_kernel_steps_bit_for_bit() {
        let cpu = CpuBackend::new();
        let base = AdamStep::default();
        let variants = [
            base,
            AdamStep {
                step: 7,
                weight_decay: 0.01,
                ..base
            },
            AdamStep {
                step: 3,
                weight_decay: 0.1,
                decoupled_weight_decay: true,
                ..base
            },
            AdamStep {
                step: 2,
                amsgrad: true,
                ..base
            },
            AdamStep {
                step: 5,
                amsgrad: true,
                weight_decay: 0.1,
                decoupled_weight_decay: true,
                ..base
            },
            AdamStep {
                lr: 0.5,
                beta1: 0.5,
                beta2: 0.75,
                eps: 1e-3,
                weight_decay: 0.2,
                step: 4,
                amsgrad: true,
                ..base
            },
        ];
        for dt in [DType::F32, DType::F64] {
            for step in variants {
                let kernel = step.kernel(dt).unwrap();
                let inputs = 2 + step.num_moments();
                for n in [1, 1000, 100_001] {
                    let layout = Layout::contiguous([n]);
                    // Second moments may be negative here, so some updates are NaN: they must match.
                    let ins: Vec<CpuStorage> = (0..inputs)
                        .map(|k| storage(dt, values(n, k as u64, k == 1 || k == 4)))
                        .collect();
                    let refs: Vec<(&CpuStorage, &Layout)> =
                        ins.iter().map(|s| (s, &layout)).collect();
                    let want = kernel.evaluate_outputs_by_ops(&cpu, &refs, &[n]).unwrap();
                    let mut donate: Vec<Option<usize>> =
                        (0..step.num_moments()).map(|j| Some(2 + j)).collect();
                    donate.push(Some(0));
                    for donate in [&[][..], &donate[..]] {
                        let before = native_runs();
                        let owned = ins
                            .iter()
                            .map(|s| (CpuStorage::new(s.host().to_owned()), &layout))
                            .collect();
                        let got = cpu.fused_many(&kernel, owned, &[n], donate).unwrap();
                        assert_eq!(native_runs(), before + 1, "{dt} {step:?} n={n}");
                        for (g, w) in got.iter().zip(&want) {
                            let (g, w) =
                                (cpu.read(g, &layout).unwrap(), cpu.read(w, &layout).unwrap());
                            assert!(same(&g, &w), "{dt} {step:?} n={n}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn coefficients_follow_the_options() {
        let plain = AdamStep::default().coefficients();
        assert_eq!((plain.l2_decay, plain.param_decay), (None, None));
        assert!((plain.step_size - 1e-3 / 0.1).abs() < 1e-15);
        let l2 = AdamStep {
            weight_decay: 0.1,
            ..AdamStep::default()
        };
        assert_eq!(l2.coefficients().l2_decay, Some(0.1));
        let adamw = AdamStep {
            decoupled_weight_decay: true,
            ..l2
        };
        let c = adamw.coefficients();
        assert_eq!((c.l2_decay, c.param_decay), (None, Some(1.0 - 1e-3 * 0.1)));
        let ams = AdamStep {
            amsgrad: true,
            ..adamw
        }
        .kernel(DType::F64)
        .unwrap();
        assert_eq!((ams.num_inputs(), ams.outputs().len()), (5, 4));
    }
}
