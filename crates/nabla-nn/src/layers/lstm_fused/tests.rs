use super::*;
use crate::layers::fused::test_support::{assert_adjoint, near, on_cpu, one, vals};
use nabla_core::Generator;
use nabla_cpu::CpuBackend;
use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order, vjp_n};

type T = Tensor<CpuBackend>;

/// The op's inputs in f64: an input `[len, n, I]` (`I` from 2 to 4, with `h`), weights `[4h, I]`
/// and `[4h, h]`, states `[n, h]` and a bias `[4h]`, spread over the activations' curved parts.
fn inputs(len: usize, n: usize, h: usize, seed: u64) -> Vec<T> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(seed);
    let mut draw = |shape: Vec<usize>, scale: f64| {
        Tensor::randn(shape, DType::F64, &mut rng, &cpu)
            .unwrap()
            .mul(scale)
            .unwrap()
    };
    let input = 2 + h % 3;
    vec![
        draw(vec![len, n, input], 1.0),
        draw(vec![4 * h, input], 0.7),
        draw(vec![4 * h, h], 0.6),
        draw(vec![n, h], 1.0),
        draw(vec![n, h], 1.0),
        draw(vec![4 * h], 0.5),
    ]
}

/// The layer on the inputs `v` (as [`inputs`] orders them).
fn layer(v: &[T], reverse: bool) -> Result<LayerStates<CpuBackend>> {
    let w = LayerWeights {
        w_ih: &v[1],
        w_hh: &v[2],
        bias: Some(&v[5]),
    };
    lstm_layer(&v[0], &w, &v[3], &v[4], reverse)
}

/// The composite steps on the inputs `v`.
fn steps_of(v: &[T], reverse: bool) -> Result<Vec<Step<CpuBackend>>> {
    let xw = v[0].matmul(&v[1].t()?)?.add(&v[5])?;
    composite_steps(&xw, &v[2], &v[3], &v[4], reverse)
}

/// A loss that reaches every output: each step's `h`, and the final `h` and `c`.
fn loss_of(s: &LayerStates<CpuBackend>) -> Result<T> {
    let hs = s.outputs.tanh()?.sum_all()?;
    let last = s.h_n.mul(1.7)?.sin()?.sum_all()?;
    hs.add(last)?.add(s.c_n.square()?.mul(0.3)?.sum_all()?)
}

fn fused_loss(v: &[T], reverse: bool) -> Result<T> {
    loss_of(&layer(v, reverse)?)
}

/// The same loss through the composite steps.
fn composite_loss(v: &[T], reverse: bool) -> Result<T> {
    let steps = steps_of(v, reverse)?;
    let last = if reverse { 0 } else { steps.len() - 1 };
    let hs: Vec<&T> = steps.iter().map(|s| &s.h).collect();
    loss_of(&LayerStates {
        outputs: Tensor::stack(&hs, 0)?,
        h_n: steps[last].h.clone(),
        c_n: steps[last].c.clone(),
    })
}

#[test]
fn values_and_gradients_match_the_composite_layer() {
    let shapes = [
        (1, 1, 1, 1),
        (3, 2, 5, 2),
        (5, 4, 17, 3),
        (4, 40, 32, 4),
        (7, 9, 8, 5),
        // Longer than a chunk of the vjp (CHUNK_STEPS), and not a multiple; then whole chunks.
        (19, 3, 4, 6),
        (8, 2, 3, 15),
        (16, 2, 3, 16),
        // 4H above one column block of the bias's cotangent.
        (3, 2, 40, 17),
    ];
    for (len, n, h, seed) in shapes {
        for reverse in [false, true] {
            let v = inputs(len, n, h, seed);
            let fused = layer(&v, reverse).unwrap();
            let steps = steps_of(&v, reverse).unwrap();
            let hs: Vec<&T> = steps.iter().map(|s| &s.h).collect();
            near(
                &vals(&fused.outputs),
                &vals(&Tensor::stack(&hs, 0).unwrap()),
                1e-14,
            );
            let last = if reverse { 0 } else { len - 1 };
            near(&vals(&fused.c_n), &vals(&steps[last].c), 1e-14);
            near(&vals(&fused.h_n), &vals(&steps[last].h), 1e-14);
            let (lf, gf) = vjp_n(|x| fused_loss(x, reverse), &v, &one()).unwrap();
            let (lc, gc) = vjp_n(|x| composite_loss(x, reverse), &v, &one()).unwrap();
            near(&vals(&lf), &vals(&lc), 1e-13);
            for (f, c) in gf.iter().zip(&gc) {
                assert_eq!(f.shape(), c.shape());
                near(&vals(f), &vals(c), 1e-12);
            }
        }
    }
}

#[test]
fn derivatives_match_finite_differences_to_second_order() {
    let opts = GradCheckOptions::default();
    for reverse in [false, true] {
        let v = inputs(3, 2, 3, 7);
        check_gradients(|x: &[T]| fused_loss(x, reverse), &v, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
        // Higher order runs the composite's rules through the graph the reverse rule builds.
        check_second_order(|x: &[T]| fused_loss(x, reverse), &v, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
    }
    // Every step's `h` and `c` (what leaves the op: the activations are its own), contracted with a
    // random cotangent, so that each step's `c` gets an outside cotangent too.
    let states = |x: &[T]| -> Result<T> {
        Tensor::apply_family_op::<FusedLstm>(
            Arc::new(on_cpu(LstmOp::Layer {
                reverse: true,
                activations: true,
            })),
            &[&x[0], &x[1], &x[2], &x[3], &x[4], &x[5]],
        )?
        .narrow(0, 4, 2)
    };
    check_gradients(states, &inputs(3, 3, 2, 8), &opts)
        .unwrap()
        .assert_close(1e-7, 1e-6)
        .unwrap();
}

#[test]
fn forward_mode_agrees_with_reverse_mode() {
    for reverse in [false, true] {
        let (v, t) = (inputs(4, 2, 3, 9), inputs(4, 2, 3, 10));
        assert_adjoint(|x| fused_loss(x, reverse), &v, &t);
    }
}

#[test]
fn float32_layer_matches_float64_to_single_precision() {
    let v = inputs(6, 5, 16, 12);
    let v32: Vec<T> = v.iter().map(|x| x.cast(DType::F32).unwrap()).collect();
    let (l64, g64) = vjp_n(|x| fused_loss(x, false), &v, &one()).unwrap();
    let one32 = one().cast(DType::F32).unwrap();
    let (l32, g32) = vjp_n(|x| fused_loss(x, false), &v32, &one32).unwrap();
    let to64 = |t: &T| vals(&t.cast(DType::F64).unwrap());
    near(&to64(&l32), &vals(&l64), 1e-5);
    for (a, b) in g32.iter().zip(&g64) {
        near(&to64(a), &vals(b), 1e-4);
    }
}

#[test]
fn an_empty_batch_gives_empty_states_and_zero_weight_cotangent() {
    let v = inputs(3, 0, 4, 13);
    let s = layer(&v, false).unwrap();
    assert_eq!(s.outputs.shape(), &[3, 0, 4]);
    let (_, g) = vjp_n(|x| fused_loss(x, false), &v, &one()).unwrap();
    assert_eq!(g[0].shape(), &[3, 0, 3]);
    assert_eq!(g[1].shape(), &[16, 3]);
    assert_eq!(g[2].shape(), &[16, 4]);
    assert_eq!(g[5].shape(), &[16]);
    for weight in [&g[1], &g[2], &g[5]] {
        assert!(vals(weight).iter().all(|&x| x == 0.0));
    }
}

#[test]
fn bad_shapes_and_dtypes_are_errors() {
    let cpu = CpuBackend::new();
    let v = inputs(2, 2, 3, 11);
    let op = |x: &[&T]| {
        Tensor::apply_family_op::<FusedLstm>(
            Arc::new(on_cpu(LstmOp::Layer {
                reverse: false,
                activations: true,
            })),
            x,
        )
        .unwrap_err()
        .to_string()
    };
    let wide = Tensor::zeros([2, 4], DType::F64, &cpu).unwrap();
    let all = |k: usize, t: &T| -> Vec<T> {
        let mut w = v.clone();
        w[k] = t.clone();
        w
    };
    let refs = |w: &[T]| -> String { op(&w.iter().collect::<Vec<_>>()) };
    let err = refs(&all(4, &wide));
    assert!(err.contains("fused.lstm_layer"), "{err}");
    let long_bias = Tensor::zeros([13], DType::F64, &cpu).unwrap();
    let err = refs(&all(5, &long_bias));
    assert!(err.contains("bias [4H]"), "{err}");
    let other_input = Tensor::zeros([12, 5], DType::F64, &cpu).unwrap();
    let err = refs(&all(1, &other_input));
    assert!(err.contains("weights [4H, I]"), "{err}");
    let ints = Tensor::zeros([2, 2, 2], DType::I64, &cpu).unwrap();
    let err = refs(&all(0, &ints));
    assert!(err.contains("f32 or f64"), "{err}");
    let err = refs(&v[..5]);
    assert!(err.contains("fused.lstm_layer"), "{err}");
    let empty = Tensor::zeros([0, 2, 2], DType::F64, &cpu).unwrap();
    let mut short = v.clone();
    short[0] = empty;
    let err = layer(&short, false).err().unwrap().to_string();
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn a_missing_bias_is_a_zero_bias() {
    for reverse in [false, true] {
        let mut v = inputs(11, 3, 5, 14);
        v[5] = v[5].zeros_like().unwrap();
        let without_bias = |x: &[T]| -> Result<T> {
            let w = LayerWeights {
                w_ih: &x[1],
                w_hh: &x[2],
                bias: None,
            };
            loss_of(&lstm_layer(&x[0], &w, &x[3], &x[4], reverse)?)
        };
        let (lz, gz) = vjp_n(|x| fused_loss(x, reverse), &v, &one()).unwrap();
        let (ln, gn) = vjp_n(without_bias, &v[..5], &one()).unwrap();
        assert_eq!(vals(&lz), vals(&ln));
        for (a, b) in gz.iter().zip(&gn) {
            assert_eq!(vals(a), vals(b));
        }
    }
}

#[test]
fn the_fused_vjp_matches_the_composite_for_every_output() {
    // Every step's `h` and `c` with a random cotangent, over several chunks of the vjp.
    let cpu = CpuBackend::new();
    for reverse in [false, true] {
        let v = inputs(19, 3, 6, 18);
        let mut rng = Generator::new(19);
        let cot = Tensor::randn([2, 19, 3, 6], DType::F64, &mut rng, &cpu).unwrap();
        let op = Arc::new(on_cpu(LstmOp::Layer {
            reverse,
            activations: true,
        }));
        let fused = |x: &[T]| -> Result<T> {
            Tensor::apply_family_op::<FusedLstm>(op.clone(), &x.iter().collect::<Vec<_>>())?
                .narrow(0, 4, 2)
        };
        let composite = |x: &[T]| composite_layer(x, op.op)?.narrow(0, 4, 2);
        let (yf, gf) = vjp_n(fused, &v, &cot).unwrap();
        let (yc, gc) = vjp_n(composite, &v, &cot).unwrap();
        near(&vals(&yf), &vals(&yc), 1e-13);
        for (f, c) in gf.iter().zip(&gc) {
            near(&vals(f), &vals(c), 1e-12);
        }
    }
}

#[test]
fn an_input_without_gradient_leaves_the_others_unchanged() {
    // Data as the input: the vjp leaves the input's cotangent out.
    let v = inputs(10, 2, 3, 20);
    let (_, all) = vjp_n(|x| fused_loss(x, true), &v, &one()).unwrap();
    let vars: Vec<T> = v[1..]
        .iter()
        .enumerate()
        .map(|(k, t)| Tensor::var(format!("w{k}"), t.clone()).unwrap())
        .collect();
    let mut with_data = vec![v[0].clone()];
    with_data.extend(vars.iter().cloned());
    let grads = fused_loss(&with_data, true).unwrap().backward().unwrap();
    for (var, want) in vars.iter().zip(&all[1..]) {
        assert_eq!(vals(grads.get(var).unwrap()), vals(want));
    }
}

#[test]
fn an_empty_input_size_and_mixed_dtypes_work() {
    // No input features: the projections are zero, the input's cotangent empty.
    let mut v = inputs(9, 2, 3, 21);
    let cpu = CpuBackend::new();
    v[0] = Tensor::zeros([9, 2, 0], DType::F64, &cpu).unwrap();
    v[1] = Tensor::zeros([12, 0], DType::F64, &cpu).unwrap();
    let (lf, gf) = vjp_n(|x| fused_loss(x, false), &v, &one()).unwrap();
    let (lc, gc) = vjp_n(|x| composite_loss(x, false), &v, &one()).unwrap();
    near(&vals(&lf), &vals(&lc), 1e-13);
    for (f, c) in gf.iter().zip(&gc) {
        assert_eq!(f.shape(), c.shape());
        near(&vals(f), &vals(c), 1e-12);
    }
    // An f32 input with f64 weights and states promotes, as the composite ops do.
    let v = inputs(3, 2, 3, 22);
    let mut mixed = v.clone();
    mixed[0] = v[0].cast(DType::F32).unwrap();
    let s = layer(&mixed, false).unwrap();
    assert_eq!(s.outputs.dtype(), DType::F64);
    near(
        &vals(&s.outputs),
        &vals(&layer(&v, false).unwrap().outputs),
        1e-6,
    );
}

#[test]
fn without_gradients_the_states_are_the_same_and_the_activations_are_not_kept() {
    for reverse in [false, true] {
        let v = inputs(11, 3, 5, 21);
        let tracked: Vec<T> = v
            .iter()
            .enumerate()
            .map(|(i, t)| Tensor::var(format!("v{i}"), t.clone()).unwrap())
            .collect();
        let with = layer(&tracked, reverse).unwrap();
        for without in [
            layer(&v, reverse).unwrap(),
            nabla_tensor::no_grad(|| layer(&tracked, reverse)).unwrap(),
        ] {
            assert!(!without.outputs.requires_grad());
            near(&vals(&without.outputs), &vals(&with.outputs), 0.0);
            near(&vals(&without.h_n), &vals(&with.h_n), 0.0);
            near(&vals(&without.c_n), &vals(&with.c_n), 0.0);
        }
        // The untracked op's output is the two state planes only.
        let op = Arc::new(on_cpu(LstmOp::Layer {
            reverse,
            activations: false,
        }));
        let states =
            Tensor::apply_family_op::<FusedLstm>(op.clone(), &v.iter().collect::<Vec<_>>())
                .unwrap();
        assert_eq!(states.shape(), &[2, 11, 3, 5]);
        // Its rules (which nothing calls in practice) are the composite's.
        let fused = |x: &[T]| -> Result<T> {
            Tensor::apply_family_op::<FusedLstm>(op.clone(), &x.iter().collect::<Vec<_>>())
        };
        let cot = states.ones_like().unwrap();
        let (yf, gf) = vjp_n(fused, &v, &cot).unwrap();
        let (yc, gc) = vjp_n(|x| composite_layer(x, op.op), &v, &cot).unwrap();
        near(&vals(&yf), &vals(&yc), 1e-13);
        for (f, c) in gf.iter().zip(&gc) {
            near(&vals(f), &vals(c), 1e-12);
        }
    }
}
