//! Fill, copy, unary, binary, compare, select and cast, through strided and broadcast views.

use crate::common::{DTYPES, assert_close, both, flush_subnormals, random, views, with_gpu};
use nabla_core::{Backend, BinaryOp, CompareOp, DType, HostData, Layout, Scalar, UnaryOp};

const SIZES: [&[usize]; 5] = [&[1], &[7], &[25, 40], &[3, 70, 5], &[70_000]];

#[test]
fn upload_read_round_trips_every_dtype() {
    with_gpu(|g, c| {
        for dt in DTYPES {
            for n in [0, 1, 7, 1000] {
                let data = random(dt, n, n as u64 + 3);
                let s = g.upload(data.clone()).unwrap();
                assert_eq!(
                    g.read(&s, &Layout::contiguous([n])).unwrap(),
                    data,
                    "{dt} x {n}"
                );
            }
            for shape in SIZES {
                for (l, need) in views(shape) {
                    let data = random(dt, need, 9);
                    let (gs, cs) = both(g, c, &data);
                    let want = c.read(&cs, &l).unwrap();
                    assert_eq!(g.read(&gs, &l).unwrap(), want, "{dt} read {l:?}");
                    let copied = g.copy(&gs, &l).unwrap();
                    let got = g.read(&copied, &Layout::row_major(shape)).unwrap();
                    assert_eq!(got, want, "{dt} copy {l:?}");
                }
            }
        }
    });
}

#[test]
fn full_fills_every_dtype() {
    with_gpu(|g, c| {
        for dt in DTYPES {
            for v in [
                Scalar::F64(-2.5),
                Scalar::I64(-7),
                Scalar::Bool(true),
                Scalar::I64(300),
            ] {
                let l = Layout::contiguous([1000]);
                let got = g.read(&g.full(1000, v, dt).unwrap(), &l).unwrap();
                let want = c.read(&c.full(1000, v, dt).unwrap(), &l).unwrap();
                assert_eq!(got, want, "full {v:?} as {dt}");
            }
        }
    });
}

#[test]
fn unary_ops_match_the_cpu() {
    with_gpu(|g, c| {
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool] {
            for op in UnaryOp::ALL {
                if op.output_dtype(dt).is_none() {
                    assert!(
                        g.unary(
                            op,
                            &g.full(1, Scalar::I64(1), dt).unwrap(),
                            &Layout::contiguous([1])
                        )
                        .is_err()
                    );
                    continue;
                }
                // Every size for a few ops; every op through strided and broadcast views.
                let shapes: &[&[usize]] = if matches!(op, UnaryOp::Neg | UnaryOp::Exp) {
                    &SIZES
                } else {
                    &[&[25, 40]]
                };
                for &shape in shapes {
                    for (l, need) in views(shape) {
                        let data = random(dt, need, 5);
                        let (gs, cs) = both(g, c, &data);
                        let out = Layout::row_major(shape);
                        let got = g.read(&g.unary(op, &gs, &l).unwrap(), &out).unwrap();
                        let want = c.read(&c.unary(op, &cs, &l).unwrap(), &out).unwrap();
                        assert_close(&format!("{op:?} {dt} {l:?}"), &got, &want, 2e-5);
                    }
                }
            }
        }
    });
}

#[test]
fn special_float_values_follow_the_cpu() {
    with_gpu(|g, c| {
        let v = vec![
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.5,
            -2.5,
            2.5,
            1e-7,
            40.0,
            -40.0,
            3.5,
        ];
        let n = v.len();
        let data = HostData::F32(v);
        let (gs, cs) = both(g, c, &data);
        let l = Layout::contiguous([n]);
        for op in UnaryOp::ALL {
            if op.output_dtype(DType::F32).is_none() {
                continue;
            }
            let got = g.read(&g.unary(op, &gs, &l).unwrap(), &l).unwrap();
            let want = c.read(&c.unary(op, &cs, &l).unwrap(), &l).unwrap();
            assert_close(&format!("{op:?} on specials"), &got, &want, 2e-5);
        }
        // Pairs of specials for the binary ops.
        let a: Vec<f32> = (0..n * n).map(|i| data_at(&data, i / n)).collect();
        let b: Vec<f32> = (0..n * n).map(|i| data_at(&data, i % n)).collect();
        let (ga, ca) = both(g, c, &HostData::F32(a));
        let (gb, cb) = both(g, c, &HostData::F32(b));
        let l = Layout::contiguous([n * n]);
        for op in BinaryOp::ALL {
            if !op.supports(DType::F32) {
                continue;
            }
            let got = g
                .read(&g.binary(op, &ga, &l, &gb, &l).unwrap(), &l)
                .unwrap();
            let want = c
                .read(&c.binary(op, &ca, &l, &cb, &l).unwrap(), &l)
                .unwrap();
            assert_close(&format!("{op:?} on specials"), &got, &want, 2e-5);
        }
        // Log and pow of a subnormal read its exponent from its bits (the built-in `log2` does not).
        let (gt, ct) = both(g, c, &HostData::F32(vec![1e-40, 1e-40]));
        let (ge, ce) = both(g, c, &HostData::F32(vec![-1.0, 0.5]));
        let l2 = Layout::contiguous([2]);
        let got = g
            .read(&g.binary(BinaryOp::Pow, &gt, &l2, &ge, &l2).unwrap(), &l2)
            .unwrap();
        let want = c
            .read(&c.binary(BinaryOp::Pow, &ct, &l2, &ce, &l2).unwrap(), &l2)
            .unwrap();
        assert_close("pow of a subnormal", &got, &want, 2e-5);
        let got = g
            .read(&g.unary(UnaryOp::Log, &gt, &l2).unwrap(), &l2)
            .unwrap();
        let want = c
            .read(&c.unary(UnaryOp::Log, &ct, &l2).unwrap(), &l2)
            .unwrap();
        assert_close("log of a subnormal", &got, &want, 2e-5);
        // Comparisons with NaN are false, except `ne`.
        for op in CompareOp::ALL {
            let got = g
                .read(&g.compare(op, &ga, &l, &gb, &l).unwrap(), &l)
                .unwrap();
            let want = c
                .read(&c.compare(op, &ca, &l, &cb, &l).unwrap(), &l)
                .unwrap();
            assert_close(&format!("{op:?} on specials"), &got, &want, 0.0);
        }
    });
}

fn data_at(d: &HostData, i: usize) -> f32 {
    d.get(i).map(|s| s.to_f64() as f32).unwrap_or(0.0)
}

#[test]
fn binary_and_compare_ops_match_the_cpu() {
    with_gpu(|g, c| {
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool] {
            for shape in [&[7][..], &[25, 40]] {
                let vs = views(shape);
                for (k, (la, na)) in vs.iter().enumerate().step_by(2) {
                    let (lb, nb) = &vs[(k + 1) % vs.len()];
                    let (ga, ca) = both(g, c, &random(dt, *na, 1));
                    let (gb, cb) = both(g, c, &random(dt, *nb, 2));
                    let out = Layout::row_major(shape);
                    for op in BinaryOp::ALL {
                        let want = c.binary(op, &ca, la, &cb, lb);
                        let got = g.binary(op, &ga, la, &gb, lb);
                        match (got, want) {
                            (Ok(x), Ok(y)) => assert_close(
                                &format!("{op:?} {dt}"),
                                &g.read(&x, &out).unwrap(),
                                &c.read(&y, &out).unwrap(),
                                2e-5,
                            ),
                            (Err(_), Err(_)) => {}
                            (x, y) => panic!("{op:?} {dt}: wgpu {x:?} vs cpu {y:?}"),
                        }
                    }
                    for op in CompareOp::ALL {
                        let got = g.compare(op, &ga, la, &gb, lb).unwrap();
                        let want = c.compare(op, &ca, la, &cb, lb).unwrap();
                        assert_eq!(
                            g.read(&got, &out).unwrap(),
                            c.read(&want, &out).unwrap(),
                            "{op:?} {dt}"
                        );
                    }
                }
            }
        }
    });
}

#[test]
fn select_picks_per_element() {
    with_gpu(|g, c| {
        for dt in DTYPES {
            for shape in SIZES {
                for (l, need) in views(shape) {
                    let (gc, cc) = both(g, c, &random(DType::Bool, need, 4));
                    let (gt, ct) = both(g, c, &random(dt, need, 5));
                    let (gf, cf) = both(g, c, &random(dt, need, 6));
                    let out = Layout::row_major(shape);
                    let got = g.select(&gc, &l, &gt, &l, &gf, &l).unwrap();
                    let want = c.select(&cc, &l, &ct, &l, &cf, &l).unwrap();
                    assert_eq!(
                        g.read(&got, &out).unwrap(),
                        c.read(&want, &out).unwrap(),
                        "{dt}"
                    );
                }
            }
        }
    });
}

#[test]
fn casts_between_every_pair() {
    with_gpu(|g, c| {
        let specials = HostData::F32(vec![
            0.0,
            -0.0,
            0.4,
            -0.6,
            1.5,
            2.5,
            -2.5,
            255.7,
            256.0,
            -1.0,
            3e9,
            -3e9,
            1e20,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            65504.0,
            65520.0,
            1e-6,
            0.1,
            123456.78,
        ]);
        for from in DTYPES {
            let mut inputs = vec![random(from, 1000, 8)];
            if from == DType::F32 {
                inputs.push(specials.clone());
            }
            for data in inputs {
                let n = data.len();
                let (gs, cs) = both(g, c, &data);
                let l = Layout::contiguous([n]);
                for to in DTYPES {
                    let got = g.read(&g.cast(&gs, &l, to).unwrap(), &l).unwrap();
                    let want = c.read(&c.cast(&cs, &l, to).unwrap(), &l).unwrap();
                    assert_close(&format!("cast {from} -> {to}"), &got, &want, 0.0);
                }
            }
        }
    });
}

#[test]
fn unsupported_dtypes_are_clear_errors() {
    with_gpu(|g, _| {
        let e = g.upload(HostData::F64(vec![1.0])).unwrap_err().to_string();
        assert!(e.contains("wgpu backend does not support float64"), "{e}");
        let x = g.upload(HostData::F32(vec![1.0])).unwrap();
        let e = g
            .cast(&x, &Layout::contiguous([1]), DType::BF16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bfloat16"), "{e}");
        let e = g
            .full(3, Scalar::F64(1.0), DType::C64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("complex64"), "{e}");
        let h = g.upload(HostData::F16(vec![half::f16::ONE])).unwrap();
        assert!(g.unary(UnaryOp::Exp, &h, &Layout::contiguous([1])).is_err());
    });
}

#[test]
fn buffers_over_the_binding_limit_are_rejected() {
    with_gpu(|g, _| {
        let n = (g.max_binding_bytes() / 4 + 1) as usize;
        let e = g
            .full(n, Scalar::F64(0.0), DType::F32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("limit"), "{e}");
    });
}

/// `rem` on `float32` is exact (C `fmod` moved to the divisor's sign, as on the CPU) however large the
/// quotient: bit-for-bit equal to the CPU on huge ratios, signs, subnormals, infinities and zeros.
#[test]
fn float_remainder_is_exact_for_any_quotient() {
    with_gpu(|g, c| {
        let tiny = f32::from_bits(1); // the smallest subnormal
        let sub = f32::from_bits(0x0040_0001);
        let hard = [
            (1e30f32, 3.0f32),
            (-1e30, 3.0),
            (1e30, -3.0),
            (-1e30, -3.0),
            (f32::MAX, 1.1),
            (f32::MAX, tiny),
            (f32::MAX, sub),
            (16_777_217.0, 0.1),
            (123_456_790.0, 0.7),
            (1e20, 1e-20),
            (3.0e38, 7.0e-39),
            (sub, tiny),
            (sub, -sub / 3.0),
            (1e-39, 3e-41),
            (-5.5, 2.0),
            (5.5, -2.0),
            (6.0, 3.0),
            (-6.0, 3.0),
            (6.0, -3.0),
            (0.0, 3.0),
            (-0.0, -3.0),
            (2.5, f32::INFINITY),
            (-2.5, f32::INFINITY),
            (2.5, f32::NEG_INFINITY),
            (-2.5, f32::NEG_INFINITY),
            (2.5, 0.0),
            (2.5, -0.0),
            (0.0, 0.0),
            (f32::INFINITY, 3.0),
            (f32::NEG_INFINITY, -3.0),
            (f32::INFINITY, f32::INFINITY),
            (f32::NAN, 3.0),
            (3.0, f32::NAN),
        ];
        let (mut a, mut b): (Vec<f32>, Vec<f32>) = hard.iter().copied().unzip();
        // Random bit patterns: every exponent pair, so quotients up to 2^277 and subnormals of both.
        let mut rng = crate::common::Rng::new(7);
        for _ in 0..4000 {
            a.push(f32::from_bits(rng.next() as u32));
            b.push(f32::from_bits(rng.next() as u32));
        }
        let n = a.len();
        let (ga, ca) = both(g, c, &HostData::F32(a.clone()));
        let (gb, cb) = both(g, c, &HostData::F32(b.clone()));
        let l = Layout::contiguous([n]);
        let got = g
            .read(&g.binary(BinaryOp::Rem, &ga, &l, &gb, &l).unwrap(), &l)
            .unwrap();
        let want = c
            .read(&c.binary(BinaryOp::Rem, &ca, &l, &cb, &l).unwrap(), &l)
            .unwrap();
        let (HostData::F32(got), HostData::F32(want)) = (got, want) else {
            panic!("rem of float32 must give float32");
        };
        // A device that flushes subnormals may give the remainder of the flushed operands, or be
        // off by less than the smallest normal (`fmod` works on bits, its sign fix in arithmetic).
        let flushed = g.flushes_subnormals().unwrap().then(|| {
            let (fa, fb) = (flush_subnormals(&a), flush_subnormals(&b));
            let (fa, fb) = (
                c.upload(HostData::F32(fa)).unwrap(),
                c.upload(HostData::F32(fb)).unwrap(),
            );
            match c
                .read(&c.binary(BinaryOp::Rem, &fa, &l, &fb, &l).unwrap(), &l)
                .unwrap()
            {
                HostData::F32(v) => v,
                other => panic!("rem of float32 gave {other:?}"),
            }
        });
        let same = |x: f32, y: f32| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
        for i in 0..n {
            let (x, y) = (got[i], want[i]);
            let flush_ok = flushed
                .as_ref()
                .is_some_and(|f| same(x, f[i]) || (x - y).abs() < f32::MIN_POSITIVE);
            assert!(
                same(x, y) || flush_ok,
                "rem({:e}, {:e}): wgpu {x:e} ({:#010x}) vs cpu {y:e} ({:#010x})",
                a[i],
                b[i],
                x.to_bits(),
                y.to_bits()
            );
        }
    });
}

/// The subnormal probe agrees with the device's arithmetic on other subnormals, and llvmpipe (the
/// CI's adapter) keeps them, so that CI checks every plain expectation.
#[test]
fn subnormal_flushing_is_measured() {
    with_gpu(|g, c| {
        let flushes = g.flushes_subnormals().unwrap();
        eprintln!("{}: flushes f32 subnormals: {flushes}", g.adapter_name());
        if g.is_software() {
            assert!(!flushes, "llvmpipe keeps subnormals");
        }
        let x = vec![1e-40f32, -3e-39, f32::from_bits(1), 2.0];
        let n = x.len();
        let (gx, _) = both(g, c, &HostData::F32(x.clone()));
        let (gone, _) = both(g, c, &HostData::F32(vec![1.0; n]));
        let l = Layout::contiguous([n]);
        let got = g
            .read(&g.binary(BinaryOp::Mul, &gx, &l, &gone, &l).unwrap(), &l)
            .unwrap();
        let want = if flushes { flush_subnormals(&x) } else { x };
        let HostData::F32(got) = got else {
            panic!("a float32 product must be float32");
        };
        for (a, b) in got.iter().zip(&want) {
            assert_eq!(a.abs().to_bits(), b.abs().to_bits(), "{got:?} vs {want:?}");
        }
    });
}
