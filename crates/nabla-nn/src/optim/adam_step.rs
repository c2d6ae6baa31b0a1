//! One Adam/AdamW update as a fused kernel with several results, carrying the description of a
//! native loop ([`nabla_core::HostLoop::Adam`]) that host backends run instead of interpreting the
//! steps: each element's update in registers, one pass over the parameter, gradient and moments.
//! The loop's operations, their order and their roundings are the steps' ([`AdamCoefficients`]),
//! so results agree bit for bit. The loop itself is the backend's (the CPU's `fast_path::adam`).

pub use nabla_core::fast_path::AdamCoefficients;
use nabla_core::fast_path::AdamUpdate;
use nabla_core::{DType, FusedKernel, Result};

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
    /// inputs and results), with its native host loop attached ([`AdamUpdate::kernel`]).
    pub fn kernel(&self, dtype: DType) -> Result<FusedKernel> {
        AdamUpdate {
            coefficients: self.coefficients(),
            amsgrad: self.amsgrad,
        }
        .kernel(dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_core::{Backend, HostData, Layout};
    use nabla_cpu::{CpuBackend, CpuStorage};

    /// Runs of the native loop on this thread so far.
    fn native_runs() -> usize {
        nabla_cpu::host_loop_runs()
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
