//! The LSTM cell's elementwise part as one fused op (what PyTorch's fused RNN cells do): from the
//! gate pre-activations `G = x W_ihᵀ + h W_hhᵀ + b` (`[N, 4H]`, gate order i, f, g, o) and the previous
//! cell state `c` (`[N, H]`), one pass computes the gate activations and the new states, and one pass
//! of its fused vector-Jacobian product gives the cotangents of `G` and `c` (side by side as
//! `[N, 5H]`) from the saved activations, with no transcendental function but one `tanh`.
//!
//! The cell's output is `[6, N, H]`: its first `4NH` elements are the activations `σ(i), σ(f),
//! tanh(g), σ(o)` laid out as `[N, 4H]` (read only by the vjp kernel), then `h'` and `c'` as
//! contiguous `[N, H]` blocks, which are what the caller sees.
//!
//! Derivatives of any order: the reverse rule runs the fused vjp op when nothing it returns is tracked
//! (plain `backward`, the training case); when the pass builds a graph (`create_graph`, higher order)
//! and for forward mode, it differentiates the composite cell instead, which has the same values up
//! to rounding. The fused op runs on the CPU backend for `f32` and `f64`; elsewhere (other backends,
//! traced programs) the cell is the composite.

use nabla_core::simd_math::SimdFloat;
use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor, jvp_n, vjp_n};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// `(h', c')` from the gate pre-activations `gates` (`[N, 4H]`) and the cell state `c` (`[N, H]`).
pub(crate) fn lstm_cell<B: Backend>(gates: &Tensor<B>, c: &Tensor<B>) -> Result<[Tensor<B>; 2]> {
    let fused =
        gates.backend().device().kind == "cpu" && matches!(gates.dtype(), DType::F32 | DType::F64);
    if !fused {
        let (_, h_new, c_new) = composite_parts(gates, c)?;
        return Ok([h_new, c_new]);
    }
    let states = Tensor::apply_family_op::<FusedLstm>(Arc::new(LstmOp::Cell), &[gates, c])?;
    Ok([states.select_index(0, 4)?, states.select_index(0, 5)?])
}

/// The cell by its formula: the activations `[σ(i), σ(f), tanh(g), σ(o)]`, `h'` and `c'`.
type Parts<B> = ([Tensor<B>; 4], Tensor<B>, Tensor<B>);

fn composite_parts<B: Backend>(gates: &Tensor<B>, c: &Tensor<B>) -> Result<Parts<B>> {
    let g = gates.chunk(4, -1)?;
    let i = g[0].sigmoid()?;
    let f = g[1].sigmoid()?;
    let cand = g[2].tanh()?;
    let o = g[3].sigmoid()?;
    let c_new = f.mul(c)?.add(i.mul(&cand)?)?;
    let h_new = o.mul(c_new.tanh()?)?;
    Ok(([i, f, cand, o], h_new, c_new))
}

/// The composite cell laid out as the fused op's output (`[6, N, H]`, the activations first), which
/// the rules differentiate for higher orders and forward mode.
fn composite_cell<B: Backend>(gates: &Tensor<B>, c: &Tensor<B>) -> Result<Tensor<B>> {
    let ([i, f, cand, o], h_new, c_new) = composite_parts(gates, c)?;
    let (n, h) = (c.shape()[0], c.shape()[1]);
    let acts = Tensor::cat(&[&i, &f, &cand, &o], -1)?.reshape([4, n, h])?;
    let states = Tensor::stack(&[&h_new, &c_new], 0)?;
    Tensor::cat(&[&acts, &states], 0)
}

/// The fused cell and its vector-Jacobian product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum LstmOp {
    /// `(gates [N, 4H], c [N, H]) -> [6, N, H]`: the activations, `h'` and `c'`.
    Cell,
    /// `(c [N, H], states [6, N, H], cotangent [6, N, H]) -> [N, 5H]`: the cotangents of the gates and
    /// of `c`, side by side, from the cell's output and its cotangent (whose activation part is
    /// ignored: only `h'` and `c'` leave the cell).
    CellVjp,
}

/// The family binding the cell's rules.
struct FusedLstm;

impl ExtensionFamily for FusedLstm {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.lstm_cell", cell_reverse)
            .forward("fused.lstm_cell", |args, t| {
                let (ins, ts): (Vec<Tensor<B>>, Vec<Tensor<B>>) = args
                    .inputs
                    .iter()
                    .zip(t)
                    .map(|(x, t)| Ok((x.clone(), t.clone().map_or_else(|| x.zeros_like(), Ok)?)))
                    .collect::<Result<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                let (_, tangent) = jvp_n(|v| composite_cell(&v[0], &v[1]), &ins, &ts)?;
                Ok(Some(tangent))
            })
    }
}

/// The cell's reverse rule: the fused vjp where no graph is built, the composite's otherwise.
fn cell_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (gates, c) = (&args.inputs[0], &args.inputs[1]);
    let tracked = g.requires_grad() || args.inputs.iter().any(Tensor::requires_grad);
    if tracked {
        let (_, grads) = vjp_n(|v| composite_cell(&v[0], &v[1]), args.inputs, g)?;
        return Ok(grads.into_iter().map(Some).collect());
    }
    let both =
        Tensor::apply_family_op::<FusedLstm>(Arc::new(LstmOp::CellVjp), &[c, args.output, g])?;
    let h4 = gates.shape()[1];
    Ok(vec![
        Some(both.narrow(1, 0, h4)?),
        Some(both.narrow(1, h4, h4 / 4)?),
    ])
}

impl LstmOp {
    fn op_name(self) -> &'static str {
        match self {
            LstmOp::Cell => "fused.lstm_cell",
            LstmOp::CellVjp => "fused.lstm_cell_vjp",
        }
    }

    /// `(dtype, N, H)` from the input shapes, or an error naming the op and the expected shapes.
    fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, usize, usize)> {
        let op = self.op_name();
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                op,
                format!(
                    "expected f32 or f64 inputs of one dtype: gates [N, 4H] and state [N, H] for \
                     the cell, state [N, H], states and cotangent [6, N, H] for its vjp; got \
                     {shapes:?}"
                ),
            )
        };
        let (dtype, first) = *inputs.first().ok_or_else(bad)?;
        let (n, h, arity) = match (self, first) {
            (LstmOp::Cell, &[n, h4]) if h4 % 4 == 0 => (n, h4 / 4, 2),
            (LstmOp::CellVjp, &[n, h]) => (n, h, 3),
            _ => return Err(bad()),
        };
        let want = |i: usize| -> Vec<usize> {
            match (self, i) {
                (LstmOp::Cell, 0) => vec![n, 4 * h],
                (_, 0) | (LstmOp::Cell, _) => vec![n, h],
                (LstmOp::CellVjp, _) => vec![6, n, h],
            }
        };
        let ok = inputs.len() == arity
            && matches!(dtype, DType::F32 | DType::F64)
            && inputs
                .iter()
                .enumerate()
                .all(|(i, (d, s))| *d == dtype && *s == want(i));
        if ok { Ok((dtype, n, h)) } else { Err(bad()) }
    }
}

impl ExtensionOp for LstmOp {
    fn name(&self) -> &str {
        self.op_name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, n, h) = self.dims(inputs)?;
        let shape = match self {
            LstmOp::Cell => vec![6, n, h],
            LstmOp::CellVjp => vec![n, 5 * h],
        };
        Ok(OutputSpec { dtype, shape })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let specs: Vec<_> = views.iter().map(|v| (v.data.dtype(), v.shape)).collect();
        let (_, n, h) = self.dims(&specs)?;
        let data: Vec<&HostData> = views.iter().map(|v| v.data).collect();
        match data[0] {
            HostData::F32(_) => Ok(HostData::F32(kernel::<f32>(*self, &data, n, h, alloc)?)),
            HostData::F64(_) => Ok(HostData::F64(kernel::<f64>(*self, &data, n, h, alloc)?)),
            other => Err(Error::dtype(self.op_name(), other.dtype())),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Batch rows per parallel task: rows of a few hundred units are a few microseconds of work each.
const ROWS_PER_TASK: usize = 8;

/// Runs `op` on `n` rows of `h` units; inputs already validated by [`LstmOp::dims`].
fn kernel<T: SimdFloat + nabla_core::Element>(
    op: LstmOp,
    data: &[&HostData],
    n: usize,
    h: usize,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let slice =
        |i: usize| T::slice_of(data[i]).ok_or_else(|| Error::dtype(op.op_name(), data[i].dtype()));
    let len = match op {
        LstmOp::Cell => 6 * n * h,
        LstmOp::CellVjp => 5 * n * h,
    };
    let mut out: Vec<T> = alloc.vec(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    match op {
        LstmOp::Cell => {
            let (gates, c) = (slice(0)?, slice(1)?);
            let (acts, states) = spare.split_at_mut(4 * n * h);
            let (h_out, c_out) = states.split_at_mut(n * h);
            acts.par_chunks_mut(4 * h)
                .zip(h_out.par_chunks_mut(h).zip(c_out.par_chunks_mut(h)))
                .zip(gates.par_chunks(4 * h).zip(c.par_chunks(h)))
                .with_min_len(ROWS_PER_TASK)
                .for_each(|((a, (ho, co)), (g, c))| cell_row(g, c, a, ho, co));
        }
        LstmOp::CellVjp => {
            let (c, states, cot) = (slice(0)?, slice(1)?, slice(2)?);
            let (acts, c_new) = (&states[..4 * n * h], &states[5 * n * h..]);
            let (dh, dc) = (&cot[4 * n * h..5 * n * h], &cot[5 * n * h..]);
            spare
                .par_chunks_mut(5 * h)
                .enumerate()
                .with_min_len(ROWS_PER_TASK)
                .for_each(|(b, o)| {
                    let r = b * h..(b + 1) * h;
                    let ins = RowIn {
                        acts: &acts[b * 4 * h..(b + 1) * 4 * h],
                        c: &c[r.clone()],
                        c_new: &c_new[r.clone()],
                        dh: &dh[r.clone()],
                        dc: &dc[r],
                    };
                    cell_vjp_row(&ins, o)
                });
        }
    }
    // SAFETY: the rows above wrote every one of the `len` elements.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// One batch row of the cell: the activations `[σ(i), σ(f), tanh(g), σ(o)]` into `acts`, then the
/// new states.
#[multiversion::multiversion(targets("x86_64+avx2+fma"))]
fn cell_row<T: SimdFloat>(
    g: &[T],
    c: &[T],
    acts: &mut [MaybeUninit<T>],
    h_out: &mut [MaybeUninit<T>],
    c_out: &mut [MaybeUninit<T>],
) {
    let h = c.len();
    let (gi, rest) = g.split_at(h);
    let (gf, rest) = rest.split_at(h);
    let (gg, go) = rest.split_at(h);
    let (ai, rest) = acts.split_at_mut(h);
    let (af, rest) = rest.split_at_mut(h);
    let (ag, ao) = rest.split_at_mut(h);
    for j in 0..h {
        let (i, f) = (gi[j].sigmoid(), gf[j].sigmoid());
        let (cand, o) = (gg[j].tanh(), go[j].sigmoid());
        ai[j].write(i);
        af[j].write(f);
        ag[j].write(cand);
        ao[j].write(o);
        let c_new = f * c[j] + i * cand;
        c_out[j].write(c_new);
        h_out[j].write(o * c_new.tanh());
    }
}

/// The inputs of one batch row of the vjp.
struct RowIn<'a, T> {
    /// The saved activations, `[σ(i), σ(f), tanh(g), σ(o)]`.
    acts: &'a [T],
    c: &'a [T],
    c_new: &'a [T],
    dh: &'a [T],
    dc: &'a [T],
}

/// One batch row of the vjp: `out` is `[di, df, dg, do, dc_prev]`, `h` each.
#[multiversion::multiversion(targets("x86_64+avx2+fma"))]
fn cell_vjp_row<T: SimdFloat>(x: &RowIn<'_, T>, out: &mut [MaybeUninit<T>]) {
    let h = x.c.len();
    let (ai, rest) = x.acts.split_at(h);
    let (af, rest) = rest.split_at(h);
    let (ag, ao) = rest.split_at(h);
    let (di, rest) = out.split_at_mut(h);
    let (df, rest) = rest.split_at_mut(h);
    let (dg, rest) = rest.split_at_mut(h);
    let (d_o, dc_prev) = rest.split_at_mut(h);
    let one = T::ONE;
    for j in 0..h {
        let (i, f, cand, o) = (ai[j], af[j], ag[j], ao[j]);
        let tc = x.c_new[j].tanh();
        let dh = x.dh[j];
        let dc = x.dc[j] + dh * o * (one - tc * tc);
        d_o[j].write(dh * tc * (o * (one - o)));
        di[j].write(dc * cand * (i * (one - i)));
        df[j].write(dc * x.c[j] * (f * (one - f)));
        dg[j].write(dc * i * (one - cand * cand));
        dc_prev[j].write(dc * f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_core::Generator;
    use nabla_cpu::CpuBackend;
    use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order, grad};

    type T = Tensor<CpuBackend>;

    /// Gates `[n, 4h]` and a state `[n, h]` in f64, spread over the activations' curved parts.
    fn inputs(n: usize, h: usize, seed: u64) -> (T, T) {
        let cpu = CpuBackend::new();
        let mut rng = Generator::new(seed);
        let g = Tensor::randn([n, 4 * h], DType::F64, &mut rng, &cpu).unwrap();
        let c = Tensor::randn([n, h], DType::F64, &mut rng, &cpu).unwrap();
        (g.mul(1.5).unwrap(), c)
    }

    fn vals(t: &T) -> Vec<f64> {
        t.contiguous().unwrap().to_vec::<f64>().unwrap()
    }

    #[track_caller]
    fn near(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= tol * (1.0 + y.abs()),
                "element {i}: {x} vs {y}"
            );
        }
    }

    /// A loss that reaches both outputs, so the cotangent has an `h` and a `c` part.
    fn loss(v: &[T]) -> Result<T> {
        let [h, c] = lstm_cell(&v[0], &v[1])?;
        h.tanh()?.sum_all()?.add(c.square()?.mul(0.3)?.sum_all()?)
    }

    fn loss_composite(v: &[T]) -> Result<T> {
        let s = composite_cell(&v[0], &v[1])?;
        let (h, c) = (s.select_index(0, 4)?, s.select_index(0, 5)?);
        h.tanh()?.sum_all()?.add(c.square()?.mul(0.3)?.sum_all()?)
    }

    #[test]
    fn values_and_gradients_match_the_composite_cell() {
        for (n, h, seed) in [(1, 1, 1), (3, 5, 2), (4, 17, 3), (40, 32, 4)] {
            let (g, c) = inputs(n, h, seed);
            let [h_new, c_new] = lstm_cell(&g, &c).unwrap();
            let s = composite_cell(&g, &c).unwrap();
            near(&vals(&h_new), &vals(&s.select_index(0, 4).unwrap()), 1e-15);
            near(&vals(&c_new), &vals(&s.select_index(0, 5).unwrap()), 1e-15);
            for i in 0..2 {
                let fused = grad(|x: &T| {
                    let mut v = vec![g.clone(), c.clone()];
                    v[i] = x.clone();
                    loss(&v)
                })(if i == 0 { &g } else { &c })
                .unwrap();
                let composite = grad(|x: &T| {
                    let mut v = vec![g.clone(), c.clone()];
                    v[i] = x.clone();
                    loss_composite(&v)
                })(if i == 0 { &g } else { &c })
                .unwrap();
                near(&vals(&fused), &vals(&composite), 1e-13);
            }
        }
    }

    #[test]
    fn derivatives_match_finite_differences_to_second_order() {
        let (g, c) = inputs(3, 4, 7);
        let opts = GradCheckOptions::default();
        let xs = [g, c];
        check_gradients(loss, &xs, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
        // Non-scalar output: the stacked states contracted with a random cotangent.
        let stacked = |v: &[T]| -> Result<T> {
            let [h, c] = lstm_cell(&v[0], &v[1])?;
            Tensor::stack(&[&h, &c], 0)
        };
        check_gradients(stacked, &xs, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
        // Higher order runs the composite's rules through the graph the reverse rule builds.
        check_second_order(loss, &xs, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
    }

    #[test]
    fn forward_mode_agrees_with_reverse_mode() {
        let (g, c) = inputs(2, 3, 9);
        let (tg, tc) = inputs(2, 3, 10);
        let (_, jv) = jvp_n(loss, &[g.clone(), c.clone()], &[tg.clone(), tc.clone()]).unwrap();
        let one = Tensor::from_vec(vec![1.0f64], [], &CpuBackend::new()).unwrap();
        let (_, gs) = vjp_n(loss, &[g, c], &one).unwrap();
        let dot = |a: &T, b: &T| a.mul(b).unwrap().sum_all().unwrap().item::<f64>().unwrap();
        let rhs = dot(&gs[0], &tg) + dot(&gs[1], &tc);
        let lhs = jv.item::<f64>().unwrap();
        assert!(
            (lhs - rhs).abs() < 1e-12 * (1.0 + rhs.abs()),
            "{lhs} vs {rhs}"
        );
    }

    #[test]
    fn bad_shapes_and_dtypes_are_errors() {
        let cpu = CpuBackend::new();
        let (g, c) = inputs(2, 3, 11);
        let wide = Tensor::zeros([2, 4], DType::F64, &cpu).unwrap();
        let err = Tensor::apply_family_op::<FusedLstm>(Arc::new(LstmOp::Cell), &[&g, &wide])
            .unwrap_err()
            .to_string();
        assert!(err.contains("fused.lstm_cell"), "{err}");
        let ints = Tensor::zeros([2, 12], DType::I64, &cpu).unwrap();
        let err = Tensor::apply_family_op::<FusedLstm>(Arc::new(LstmOp::Cell), &[&ints, &c])
            .unwrap_err()
            .to_string();
        assert!(err.contains("f32 or f64"), "{err}");
    }
}
