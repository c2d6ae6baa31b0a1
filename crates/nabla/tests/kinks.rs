//! The scalar tier (`nabla::scalar`) and the tensor tier agree on derivatives at kinks and ties: at
//! every kink of `abs`, `max`, `min`, `relu`, `clamp` and `sign`, and a point either side, the scalar
//! tier's forward mode (`DualN`) and reverse mode (`Tape`) give exactly the tensor tier's `grad_n`
//! (reverse) and `jvp_n` (forward) on the CPU backend in `f64`, which take JAX's conventions:
//! `|x|'(0) = 1`, `relu'(0) = 0`, `sign' = 0`, a tie of `max` or `min` gives each argument one half,
//! and `clamp` is `min(max(x, lo), hi)`, so one half at a bound.

use nabla::scalar::{DualN, Scalar, Tape};
use nabla::{CpuBackend, Result, Tensor, grad_n, jvp_n};

type T = Tensor<CpuBackend>;

/// The functions with kinks, each as scalar code and as tensor code.
#[derive(Clone, Copy, Debug)]
enum Kink {
    Abs,
    Sign,
    Relu,
    Max,
    Min,
    /// `clamp(x, -1, 2)` with constant bounds.
    ClampConst,
    /// `clamp(x, lo, hi)` with the bounds as arguments too.
    Clamp,
}

/// The bounds of [`Kink::ClampConst`].
const LO: f64 = -1.0;
const HI: f64 = 2.0;

impl Kink {
    fn scalar<S: Scalar>(self, v: &[S]) -> S {
        match self {
            Kink::Abs => v[0].abs(),
            Kink::Sign => v[0].sign(),
            Kink::Relu => v[0].relu(),
            Kink::Max => v[0].max(v[1]),
            Kink::Min => v[0].min(v[1]),
            Kink::ClampConst => v[0].clamp(S::from_f64(LO), S::from_f64(HI)),
            Kink::Clamp => v[0].clamp(v[1], v[2]),
        }
    }

    fn tensor(self, v: &[T]) -> Result<T> {
        match self {
            Kink::Abs => v[0].abs(),
            Kink::Sign => v[0].sign(),
            Kink::Relu => v[0].relu(),
            Kink::Max => v[0].maximum(&v[1]),
            Kink::Min => v[0].minimum(&v[1]),
            Kink::ClampConst => v[0].clamp(LO, HI),
            Kink::Clamp => v[0].clamp(&v[1], &v[2]),
        }
    }

    /// The points (one argument list each: the kinks and ties, signed zeros, a point either side)
    /// with the partial derivatives there, JAX's conventions.
    fn cases(self) -> Vec<(Vec<f64>, Vec<f64>)> {
        let cases: &[(&[f64], &[f64])] = match self {
            Kink::Abs => &[
                (&[-1.5], &[-1.0]),
                (&[-0.0], &[1.0]),
                (&[0.0], &[1.0]),
                (&[2.0], &[1.0]),
            ],
            Kink::Sign => &[
                (&[-1.5], &[0.0]),
                (&[-0.0], &[0.0]),
                (&[0.0], &[0.0]),
                (&[2.0], &[0.0]),
            ],
            Kink::Relu => &[
                (&[-1.5], &[0.0]),
                (&[-0.0], &[0.0]),
                (&[0.0], &[0.0]),
                (&[2.0], &[1.0]),
            ],
            Kink::Max => &[
                (&[1.0, 1.5], &[0.0, 1.0]),
                (&[1.5, 1.5], &[0.5, 0.5]),
                (&[2.0, 1.5], &[1.0, 0.0]),
                (&[-1.0, 0.0], &[0.0, 1.0]),
                (&[0.0, 0.0], &[0.5, 0.5]),
                (&[-0.0, 0.0], &[0.5, 0.5]),
                (&[1.0, 0.0], &[1.0, 0.0]),
            ],
            Kink::Min => &[
                (&[1.0, 1.5], &[1.0, 0.0]),
                (&[1.5, 1.5], &[0.5, 0.5]),
                (&[2.0, 1.5], &[0.0, 1.0]),
                (&[-1.0, 0.0], &[1.0, 0.0]),
                (&[0.0, 0.0], &[0.5, 0.5]),
                (&[-0.0, 0.0], &[0.5, 0.5]),
                (&[1.0, 0.0], &[0.0, 1.0]),
            ],
            Kink::ClampConst => &[
                (&[-1.5], &[0.0]),
                (&[-1.0], &[0.5]),
                (&[0.5], &[1.0]),
                (&[2.0], &[0.5]),
                (&[2.5], &[0.0]),
            ],
            Kink::Clamp => &[
                (&[-1.5, -1.0, 2.0], &[0.0, 1.0, 0.0]),
                (&[-1.0, -1.0, 2.0], &[0.5, 0.5, 0.0]),
                (&[0.5, -1.0, 2.0], &[1.0, 0.0, 0.0]),
                (&[2.0, -1.0, 2.0], &[0.5, 0.0, 0.5]),
                (&[2.5, -1.0, 2.0], &[0.0, 0.0, 1.0]),
                // Both ties at once: one half of one half to `x`.
                (&[1.0, 1.0, 1.0], &[0.25, 0.25, 0.5]),
                // Crossed bounds give `hi`, as `min(max(x, lo), hi)` does.
                (&[0.0, 2.0, -1.0], &[0.0, 0.0, 1.0]),
            ],
        };
        cases
            .iter()
            .map(|(x, d)| (x.to_vec(), d.to_vec()))
            .collect()
    }
}

const KINKS: [Kink; 7] = [
    Kink::Abs,
    Kink::Sign,
    Kink::Relu,
    Kink::Max,
    Kink::Min,
    Kink::ClampConst,
    Kink::Clamp,
];

/// The scalar tier at one point: the value, forward-mode partials (one `DualN` pass seeding every
/// argument) and reverse-mode partials (one tape sweep).
fn scalar_tier(kink: Kink, x: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let value = kink.scalar(x);
    let duals: Vec<DualN<f64, 3>> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| DualN::seeded(v, i))
        .collect();
    let forward = kink.scalar(&duals).eps[..x.len()].to_vec();
    let tape = Tape::new();
    let vars = tape.var_slice(x);
    let out = kink.scalar(&vars);
    assert_eq!(out.value().to_bits(), value.to_bits(), "{kink:?} at {x:?}");
    let reverse = tape.backward(out).wrt_all(&vars);
    (value, forward, reverse)
}

/// The tensor tier at every point at once (one element per point): the values, reverse-mode partials
/// (`grad_n` of the sum) and forward-mode partials (`jvp_n` along each argument in turn), each
/// indexed `[argument][point]`.
type TensorTier = (Vec<f64>, Vec<Vec<f64>>, Vec<Vec<f64>>);

fn tensor_tier(kink: Kink, points: &[Vec<f64>]) -> Result<TensorTier> {
    let cpu = CpuBackend::new();
    let (n, arity) = (points.len(), points[0].len());
    let args = (0..arity)
        .map(|i| Tensor::from_vec(points.iter().map(|p| p[i]).collect(), [n], &cpu))
        .collect::<Result<Vec<T>>>()?;
    let value = kink.tensor(&args)?.to_vec::<f64>()?;
    let reverse = grad_n(|v: &[T]| kink.tensor(v)?.sum_all())(&args)?
        .iter()
        .map(|g| g.to_vec::<f64>())
        .collect::<Result<Vec<_>>>()?;
    let forward = (0..arity)
        .map(|i| {
            let tangents = (0..arity)
                .map(|j| {
                    if i == j {
                        args[j].ones_like()
                    } else {
                        args[j].zeros_like()
                    }
                })
                .collect::<Result<Vec<T>>>()?;
            jvp_n(|v: &[T]| kink.tensor(v), &args, &tangents)?
                .1
                .to_vec::<f64>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((value, reverse, forward))
}

#[test]
fn scalar_and_tensor_tiers_agree_at_every_kink() -> Result<()> {
    let mut checked = 0;
    for kink in KINKS {
        let cases = kink.cases();
        let points: Vec<Vec<f64>> = cases.iter().map(|(x, _)| x.clone()).collect();
        let (t_value, t_reverse, t_forward) = tensor_tier(kink, &points)?;
        for (p, (x, expected)) in cases.iter().enumerate() {
            let (value, s_forward, s_reverse) = scalar_tier(kink, x);
            assert_eq!(value, t_value[p], "{kink:?} at {x:?}: value");
            for (i, &want) in expected.iter().enumerate() {
                // `==`, so that a zero partial may come out as -0.0 in one tier and 0.0 in another.
                let got = [
                    ("scalar forward", s_forward[i]),
                    ("scalar reverse", s_reverse[i]),
                    ("tensor reverse (grad)", t_reverse[i][p]),
                    ("tensor forward (jvp)", t_forward[i][p]),
                ];
                for (tier, d) in got {
                    assert!(
                        d == want,
                        "{kink:?} at {x:?}: d/dx{i} is {d} in the {tier}, expected {want} \
                         (all: {got:?})"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4 + 4 + 4 + 14 + 14 + 5 + 21);
    Ok(())
}
