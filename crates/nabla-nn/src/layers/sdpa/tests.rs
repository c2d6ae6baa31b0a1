use super::*;
use crate::layers::fused::test_support::{assert_adjoint, near, on_cpu, on_cpu_kernels, one, vals};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order, no_grad, vjp_n, vmap};

type T = Tensor<CpuBackend>;

fn cpu() -> CpuBackend {
    CpuBackend::new()
}

fn randn(shape: &[usize], seed: u64) -> T {
    Tensor::randn(
        shape.to_vec(),
        DType::F64,
        &mut Generator::new(seed),
        &cpu(),
    )
    .unwrap()
}

/// `q [..., L, E]`, `k [..., S, E]`, `v [..., S, Ev]`.
fn qkv(lead: &[usize], l: usize, s: usize, e: usize, ev: usize, seed: u64) -> Vec<T> {
    let with = |tail: [usize; 2]| -> Vec<usize> { lead.iter().copied().chain(tail).collect() };
    vec![
        randn(&with([l, e]), seed),
        randn(&with([s, e]), seed + 1),
        randn(&with([s, ev]), seed + 2),
    ]
}

fn args<'a>(causal: bool) -> SdpaArgs<'a, CpuBackend> {
    SdpaArgs {
        is_causal: causal,
        ..SdpaArgs::default()
    }
}

/// The fused attention (no mask).
fn fused(v: &[T], causal: bool) -> Result<T> {
    scaled_dot_product_attention(&v[0], &v[1], &v[2], args(causal))
}

/// The composite formula, forced by an all-zero float mask (plus the causal mask as a bias).
fn composite(v: &[T], causal: bool) -> Result<T> {
    let (l, s) = (v[0].shape()[v[0].rank() - 2], v[1].shape()[v[1].rank() - 2]);
    let bias = if causal {
        causal_mask(l, s, v[0].dtype(), v[0].backend())?
    } else {
        Tensor::zeros([l, s], v[0].dtype(), v[0].backend())?
    };
    let a = SdpaArgs {
        attn_mask: Some(&bias),
        ..SdpaArgs::default()
    };
    scaled_dot_product_attention(&v[0], &v[1], &v[2], a)
}

/// A loss reaching every output element with a different weight.
fn loss(out: &T) -> Result<T> {
    let w = Tensor::arange(0, out.numel() as i64, 1, out.dtype(), out.backend())?
        .reshape(out.shape().to_vec())?
        .mul(0.37)?
        .sin()?;
    out.mul(&w)?.sum_all()
}

#[test]
fn values_and_gradients_match_the_composite() {
    // (lead, L, S, E, Ev): several key and query blocks, ragged ends, L above and below S.
    let cases: [(&[usize], usize, usize, usize, usize); 6] = [
        (&[], 1, 1, 1, 1),
        (&[2, 3], 5, 7, 4, 6),
        (&[2], 130, 300, 8, 5),
        (&[1, 2], 300, 130, 3, 9),
        (&[3], 64, 128, 16, 16),
        (&[2], 65, 129, 2, 1),
    ];
    for (i, (lead, l, s, e, ev)) in cases.into_iter().enumerate() {
        for causal in [false, true] {
            let v = qkv(lead, l, s, e, ev, 10 * i as u64);
            let (f, c) = (fused(&v, causal).unwrap(), composite(&v, causal).unwrap());
            assert_eq!(f.shape(), c.shape());
            near(&vals(&f), &vals(&c), 1e-13);
            let (_, gf) = vjp_n(|x| loss(&fused(x, causal)?), &v, &one()).unwrap();
            let (_, gc) = vjp_n(|x| loss(&composite(x, causal)?), &v, &one()).unwrap();
            for (a, b) in gf.iter().zip(&gc) {
                assert_eq!(a.shape(), b.shape());
                near(&vals(a), &vals(b), 1e-12);
            }
        }
    }
}

#[test]
fn derivatives_match_finite_differences_to_second_order() {
    let opts = GradCheckOptions::default();
    for causal in [false, true] {
        let v = qkv(&[2], 4, 5, 3, 2, 1);
        check_gradients(|x: &[T]| fused(x, causal), &v, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
        check_second_order(|x: &[T]| fused(x, causal), &v, &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
    }
    // The log-sum-exp column of the packed output gets a cotangent of its own here, as it does when
    // a higher-order pass reaches it.
    let packed = |x: &[T]| op::apply(on_cpu_kernels(), &x[0], &x[1], &x[2], 0.7, true);
    check_gradients(packed, &qkv(&[2], 3, 4, 2, 3, 2), &opts)
        .unwrap()
        .assert_close(1e-7, 1e-6)
        .unwrap();
}

#[test]
fn forward_mode_agrees_with_reverse_mode() {
    for causal in [false, true] {
        let v = qkv(&[3], 6, 9, 4, 5, 20);
        let t = qkv(&[3], 6, 9, 4, 5, 30);
        assert_adjoint(|x| loss(&fused(x, causal)?), &v, &t);
    }
}

#[test]
fn float32_matches_float64_to_single_precision() {
    let v = qkv(&[2, 2], 70, 150, 16, 8, 40);
    let v32: Vec<T> = v.iter().map(|x| x.cast(DType::F32).unwrap()).collect();
    let to64 = |t: &T| vals(&t.cast(DType::F64).unwrap());
    near(
        &to64(&fused(&v32, true).unwrap()),
        &vals(&fused(&v, true).unwrap()),
        1e-5,
    );
    let (_, g64) = vjp_n(|x| loss(&fused(x, true)?), &v, &one()).unwrap();
    let one32 = one().cast(DType::F32).unwrap();
    let (_, g32) = vjp_n(|x| loss(&fused(x, true)?), &v32, &one32).unwrap();
    for (a, b) in g32.iter().zip(&g64) {
        near(&to64(a), &vals(b), 1e-4);
    }
}

#[test]
fn strided_and_broadcast_inputs_match_contiguous_ones() {
    // Heads split from [N, T, H, D] by a permutation, as attention layers make them.
    let raw = qkv(&[2, 9], 3, 0, 4, 0, 50)[0].clone();
    let q = raw.permute(&[0, 2, 1, 3]).unwrap();
    let k = randn(&[2, 9, 3, 4], 51).permute(&[0, 2, 1, 3]).unwrap();
    let v = randn(&[2, 9, 3, 4], 52).permute(&[0, 2, 1, 3]).unwrap();
    let strided = fused(&[q.clone(), k.clone(), v.clone()], true).unwrap();
    let contiguous = [q, k, v].map(|t| t.contiguous().unwrap());
    near(
        &vals(&strided),
        &vals(&fused(&contiguous, true).unwrap()),
        0.0,
    );
    // Keys and values shared across the first axis broadcast, and their gradients sum back.
    let q = randn(&[2, 3, 5, 4], 53);
    let (k, v) = (randn(&[1, 3, 6, 4], 54), randn(&[3, 6, 2], 55));
    let shared = [q.clone(), k.clone(), v.clone()];
    let expanded = [
        q,
        k.broadcast_to([2, 3, 6, 4]).unwrap(),
        v.broadcast_to([2, 3, 6, 2]).unwrap(),
    ];
    near(
        &vals(&fused(&shared, false).unwrap()),
        &vals(&fused(&expanded, false).unwrap()),
        0.0,
    );
    let (_, g) = vjp_n(|x| loss(&fused(x, false)?), &shared, &one()).unwrap();
    let (_, gc) = vjp_n(|x| loss(&composite(x, false)?), &shared, &one()).unwrap();
    assert_eq!(g[1].shape(), &[1, 3, 6, 4]);
    assert_eq!(g[2].shape(), &[3, 6, 2]);
    for (a, b) in g.iter().zip(&gc) {
        near(&vals(a), &vals(b), 1e-12);
    }
}

#[test]
fn grouped_query_attention_repeats_each_key_head() {
    let q = randn(&[2, 6, 5, 4], 60);
    let (k, v) = (randn(&[2, 2, 7, 4], 61), randn(&[2, 2, 7, 3], 62));
    let gqa = SdpaArgs {
        enable_gqa: true,
        is_causal: true,
        ..SdpaArgs::default()
    };
    let got = scaled_dot_product_attention(&q, &k, &v, gqa).unwrap();
    // Query heads 0-2 use key head 0, heads 3-5 key head 1.
    let repeat = |t: &T| {
        let parts: Vec<T> = (0..6).map(|h| t.narrow(1, h / 3, 1).unwrap()).collect();
        Tensor::cat(&parts.iter().collect::<Vec<_>>(), 1).unwrap()
    };
    let want = fused(&[q, repeat(&k), repeat(&v)], true).unwrap();
    near(&vals(&got), &vals(&want), 0.0);
}

#[test]
fn masks_follow_pytorch_conventions() {
    let v = qkv(&[2], 4, 6, 3, 2, 70);
    // A bool mask marks the keys a query may attend to; as a float mask that is 0 and -inf.
    let allowed = Tensor::rand([4, 6], DType::F64, &mut Generator::new(71), &cpu())
        .unwrap()
        .gt(0.3)
        .unwrap();
    let neg = Tensor::full([], f64::NEG_INFINITY, DType::F64, &cpu()).unwrap();
    let bias = allowed.where_(0.0, &neg).unwrap();
    let with = |m: &T| {
        let a = SdpaArgs {
            attn_mask: Some(m),
            ..SdpaArgs::default()
        };
        scaled_dot_product_attention(&v[0], &v[1], &v[2], a).unwrap()
    };
    near(&vals(&with(&allowed)), &vals(&with(&bias)), 0.0);
    // The causal flag is the lower-triangular bool mask (top-left aligned, also for L != S).
    let tril = Tensor::ones([4, 6], DType::F64, &cpu())
        .unwrap()
        .tril(0)
        .unwrap()
        .gt(0.5)
        .unwrap();
    near(&vals(&with(&tril)), &vals(&fused(&v, true).unwrap()), 1e-13);
    // A query allowed no key gets NaN, as in PyTorch.
    let none = Tensor::zeros([4, 6], DType::Bool, &cpu()).unwrap();
    assert!(vals(&with(&none)).iter().all(|x| x.is_nan()));
}

#[test]
fn empty_sizes_give_empty_or_zero_outputs() {
    for (lead, l, s, e, ev) in [
        (vec![0, 3], 4, 5, 2, 3),
        (vec![2], 0, 5, 2, 3),
        (vec![2], 4, 0, 2, 3),
        (vec![2], 4, 5, 0, 3),
        (vec![2], 4, 5, 2, 0),
    ] {
        for causal in [false, true] {
            let v = qkv(&lead, l, s, e, ev, 80);
            let out = fused(&v, causal).unwrap();
            let want: Vec<usize> = lead.iter().copied().chain([l, ev]).collect();
            assert_eq!(out.shape(), want.as_slice());
            near(&vals(&out), &vals(&composite_or_zero(&v, causal)), 1e-13);
            let (_, g) = vjp_n(|x| loss(&fused(x, causal)?), &v, &one()).unwrap();
            for (gi, xi) in g.iter().zip(&v) {
                assert_eq!(gi.shape(), xi.shape());
            }
            if s == 0 {
                assert!(g.iter().all(|g| vals(g).iter().all(|&x| x == 0.0)));
            }
        }
    }
}

/// The composite, or zeros where there are no keys (the composite's softmax has no empty rows).
fn composite_or_zero(v: &[T], causal: bool) -> T {
    if v[1].shape()[v[1].rank() - 2] == 0 {
        return fused(v, causal).unwrap().zeros_like().unwrap();
    }
    composite(v, causal).unwrap()
}

#[test]
fn a_nan_query_makes_only_its_own_row_nan() {
    let v = qkv(&[1], 3, 200, 2, 2, 90);
    let mut q = vals(&v[0]);
    q[2] = f64::NAN;
    let q = Tensor::from_vec(q, [1, 3, 2], &cpu()).unwrap();
    let out = vals(&fused(&[q, v[1].clone(), v[2].clone()], false).unwrap());
    assert!(out[..2].iter().all(|x| x.is_finite()));
    assert!(out[2..4].iter().all(|x| x.is_nan()));
    assert!(out[4..].iter().all(|x| x.is_finite()));
}

#[test]
fn vmap_and_no_grad_give_the_same_values() {
    let v = qkv(&[3, 2], 5, 6, 4, 3, 100);
    let direct = fused(&v, true).unwrap();
    let causal = || SdpaArgs {
        is_causal: true,
        ..SdpaArgs::default()
    };
    let mapped = vmap(|t| scaled_dot_product_attention(&t[0], &t[1], &t[2], causal()))
        .call1(&[&v[0], &v[1], &v[2]])
        .unwrap();
    near(&vals(&mapped), &vals(&direct), 1e-13);
    let untracked = no_grad(|| fused(&v, true)).unwrap();
    near(&vals(&untracked), &vals(&direct), 0.0);
}

#[test]
fn dropout_draws_from_the_generator() {
    let v = qkv(&[2], 4, 5, 3, 2, 110);
    let run = |p: f64, seed: u64| {
        let mut rng = Generator::new(seed);
        let a = SdpaArgs {
            dropout_p: p,
            rng: Some(&mut rng),
            ..SdpaArgs::default()
        };
        vals(&scaled_dot_product_attention(&v[0], &v[1], &v[2], a).unwrap())
    };
    assert_eq!(run(0.5, 1), run(0.5, 1));
    assert_ne!(run(0.5, 1), run(0.5, 2));
    assert!(run(1.0, 1).iter().all(|&x| x == 0.0));
    near(&run(0.0, 1), &vals(&fused(&v, false).unwrap()), 0.0);
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let v = qkv(&[2], 4, 5, 3, 2, 120);
    let err = |q: &T, k: &T, v: &T, a: SdpaArgs<'_, CpuBackend>| {
        let e = scaled_dot_product_attention(q, k, v, a)
            .unwrap_err()
            .to_string();
        assert!(e.contains("scaled_dot_product_attention"), "{e}");
        e
    };
    let (q, k, val) = (&v[0], &v[1], &v[2]);
    err(&q.cast(DType::F32).unwrap(), k, val, args(false));
    err(&q.cast(DType::I64).unwrap(), k, val, args(false));
    err(&randn(&[3], 1), k, val, args(false));
    err(q, &randn(&[2, 5, 4], 1), val, args(false));
    err(q, k, &randn(&[2, 6, 2], 1), args(false));
    err(&randn(&[3, 4, 3], 1), k, val, args(false));
    let mask = Tensor::ones([4, 4], DType::Bool, &cpu()).unwrap();
    let masked = |m| SdpaArgs {
        attn_mask: Some(m),
        ..SdpaArgs::default()
    };
    err(q, k, val, masked(&mask));
    err(
        q,
        k,
        val,
        masked(&Tensor::ones([4, 5], DType::I64, &cpu()).unwrap()),
    );
    let ok_mask = Tensor::ones([4, 5], DType::Bool, &cpu()).unwrap();
    let both = SdpaArgs {
        attn_mask: Some(&ok_mask),
        is_causal: true,
        ..SdpaArgs::default()
    };
    err(q, k, val, both);
    for p in [-0.1, 1.5, f64::NAN] {
        let bad = SdpaArgs {
            dropout_p: p,
            ..SdpaArgs::default()
        };
        err(q, k, val, bad);
    }
    let no_rng = SdpaArgs {
        dropout_p: 0.2,
        ..SdpaArgs::default()
    };
    err(q, k, val, no_rng);
    let gqa = SdpaArgs {
        enable_gqa: true,
        ..SdpaArgs::default()
    };
    err(
        &randn(&[5, 4, 3], 1),
        &randn(&[2, 5, 3], 2),
        &randn(&[2, 5, 2], 3),
        gqa,
    );
}

#[test]
fn the_ops_reject_inputs_they_cannot_run() {
    let v = qkv(&[2], 4, 5, 3, 2, 130);
    let bad = |inputs: &[&T]| {
        let op = on_cpu(op::AttentionOp::Forward {
            scale: 1f64.to_bits(),
            causal: false,
        });
        let e = Tensor::apply_family_op::<op::FusedAttention>(std::sync::Arc::new(op), inputs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("fused.attention"), "{e}");
    };
    bad(&[&v[0], &v[1]]);
    bad(&[&v[0], &v[2], &v[1]]);
    bad(&[&v[0], &randn(&[3, 5, 3], 1), &v[2]]);
    bad(&[&v[0].cast(DType::F32).unwrap(), &v[1], &v[2]]);
}

#[test]
fn multihead_attention_without_weights_matches_the_weighted_path() {
    use crate::{AttentionArgs, MultiheadAttention, MultiheadAttentionConfig};
    let config = MultiheadAttentionConfig {
        batch_first: true,
        ..MultiheadAttentionConfig::new(12, 3)
    };
    let mha = MultiheadAttention::new(config, DType::F64, &mut Generator::new(7), &cpu()).unwrap();
    let x = randn(&[2, 9, 12], 140);
    let padding = Tensor::from_vec(
        (0..18).map(|i| i % 9 == 8).collect::<Vec<bool>>(),
        [2, 9],
        &cpu(),
    )
    .unwrap();
    for key_padding_mask in [None, Some(&padding)] {
        let run = |need_weights: bool| {
            let args = AttentionArgs {
                need_weights,
                is_causal: true,
                key_padding_mask,
                ..AttentionArgs::default()
            };
            let (y, w) = mha.forward(&x, &x, &x, args).unwrap();
            assert_eq!(w.is_some(), need_weights);
            vals(&y)
        };
        near(&run(false), &run(true), 1e-13);
    }
}
