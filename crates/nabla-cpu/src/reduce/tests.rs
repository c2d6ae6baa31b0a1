use super::*;
use crate::CpuStorage;
use nabla_core::{DType, Element, HostData, Layout, Scalar, contiguous_strides};
use num_complex::Complex32;
use proptest::prelude::*;

/// Advances a row-major multi-index; returns `false` after the last one.
fn next_index(idx: &mut [usize], shape: &[usize]) -> bool {
    for a in (0..idx.len()).rev() {
        idx[a] += 1;
        if idx[a] < shape[a] {
            return true;
        }
        idx[a] = 0;
    }
    false
}

/// Plain nested-loop reduction over `Layout::offsets`; `None` when an output element has no input
/// and there is no identity.
fn reference<T: Copy>(
    x: &[T],
    l: &Layout,
    axes: &[usize],
    identity: Option<T>,
    f: impl Fn(T, T) -> T,
) -> Option<Vec<T>> {
    let shape = l.shape();
    let out_shape: Vec<usize> = (0..l.rank())
        .map(|a| if axes.contains(&a) { 1 } else { shape[a] })
        .collect();
    let out_strides = contiguous_strides(&out_shape);
    let mut out: Vec<Option<T>> = vec![None; out_shape.iter().product()];
    let mut idx = vec![0usize; l.rank()];
    for off in l.offsets() {
        let o: usize = (0..l.rank())
            .filter(|a| !axes.contains(a))
            .map(|a| idx[a] * out_strides[a] as usize)
            .sum();
        out[o] = Some(match out[o] {
            None => x[off],
            Some(acc) => f(acc, x[off]),
        });
        next_index(&mut idx, shape);
    }
    out.into_iter().map(|v| v.or(identity)).collect()
}

/// Equality that treats NaN as equal to NaN.
#[allow(clippy::eq_op)]
fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x != x && y != y))
}

/// A random view over a buffer: random dims (possibly 0), then flips, strided slices, broadcasts and a
/// permutation. Returns the view and the buffer length it needs.
fn arb_view(max_rank: usize, max_dim: usize) -> impl Strategy<Value = (Layout, usize)> {
    (
        prop::collection::vec(0usize..=max_dim, 0..=max_rank),
        any::<u64>(),
    )
        .prop_map(|(dims, seed)| {
            let mut l = Layout::contiguous(dims.clone());
            let mut s = seed;
            let mut rnd = |m: u64| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 33) % m
            };
            for (ax, &d) in dims.iter().enumerate() {
                match rnd(5) {
                    0 => l = l.flip(ax).unwrap(),
                    1 if d > 2 => l = l.slice(ax, 1, d / 2, 2).unwrap(),
                    2 if d == 1 => {
                        let mut shape = l.shape().to_vec();
                        shape[ax] = 1 + rnd(4) as usize;
                        l = l.broadcast_to(&shape).unwrap();
                    }
                    _ => {}
                }
            }
            let mut perm: Vec<usize> = (0..l.rank()).collect();
            for i in (1..perm.len()).rev() {
                perm.swap(i, rnd(i as u64 + 1) as usize);
            }
            (l.permute(&perm).unwrap(), dims.iter().product())
        })
}

/// Every sorted subset of `0..rank`.
fn subsets(rank: usize) -> Vec<Vec<usize>> {
    (0..1u32 << rank)
        .map(|m| (0..rank).filter(|&a| m >> a & 1 == 1).collect())
        .collect()
}

fn values<T: Element>(n: usize, seed: u64, f: impl Fn(u64) -> Scalar) -> Vec<T> {
    (0..n as u64)
        .map(|i| T::from_scalar(f(i.wrapping_mul(0x9E3779B97F4A7C15) ^ seed)))
        .collect()
}

fn run_reduce<T: Element>(op: ReduceOp, x: &[T], l: &Layout, axes: &[usize]) -> Result<Vec<T>> {
    let s = CpuStorage::from_vec(x.to_vec());
    let out = reduce(op, &s, l, axes)?;
    Ok(T::vec_of(out.into_host()).expect("reduce keeps the dtype"))
}

/// Checks all four reductions of one typed buffer over every axis subset against the reference.
fn check_ops<T: Element + PartialOrd>(
    x: &[T],
    l: &Layout,
    add: impl Fn(T, T) -> T + Copy,
    mul: impl Fn(T, T) -> T + Copy,
) -> std::result::Result<(), TestCaseError> {
    for axes in subsets(l.rank()) {
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
            let want = match op {
                ReduceOp::Sum => reference(x, l, &axes, Some(T::zero()), add),
                ReduceOp::Prod => reference(x, l, &axes, Some(T::one()), mul),
                ReduceOp::Max => reference(x, l, &axes, None, max_nan::<T>),
                ReduceOp::Min => reference(x, l, &axes, None, min_nan::<T>),
            };
            let got = run_reduce(op, x, l, &axes);
            match (want, got) {
                (Some(w), Ok(g)) => prop_assert!(
                    same(&w, &g),
                    "{op:?} over {axes:?} of {l:?}: want {w:?}, got {g:?}"
                ),
                (None, Err(e)) => prop_assert!(e.to_string().contains("no identity")),
                (w, g) => prop_assert!(false, "{op:?} over {axes:?} of {l:?}: {w:?} vs {g:?}"),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn integer_reductions_match_reference((l, n) in arb_view(4, 5), seed in any::<u64>()) {
        // Large values so that sums and products wrap.
        let x: Vec<i64> = values(n, seed, |v| Scalar::I64(v as i64));
        check_ops(&x, &l, |a: i64, b| a.wrapping_add(b), |a: i64, b| a.wrapping_mul(b))?;
        let x: Vec<u8> = values(n, seed, |v| Scalar::I64((v % 256) as i64));
        check_ops(&x, &l, |a: u8, b| a.wrapping_add(b), |a: u8, b| a.wrapping_mul(b))?;
    }

    #[test]
    fn float_reductions_match_reference((l, n) in arb_view(4, 5), seed in any::<u64>(), nan in any::<bool>()) {
        // Small integers (sums exact in any order) and +-1 (products exact); sometimes a NaN.
        let mut x: Vec<f64> = values(n, seed, |v| Scalar::I64((v % 9) as i64 - 4));
        if nan && n > 0 {
            x[(seed % n as u64) as usize] = f64::NAN;
        }
        check_ops(&x, &l, |a, b| a + b, |a, b| a * b)?;
        let x: Vec<f32> = values(n, seed, |v| Scalar::I64(if v % 2 == 0 { 1 } else { -1 }));
        check_ops(&x, &l, |a, b| a + b, |a, b| a * b)?;
    }

    #[test]
    fn bool_and_complex_reductions((l, n) in arb_view(3, 5), seed in any::<u64>()) {
        let x: Vec<bool> = values(n, seed, |v| Scalar::Bool(v % 3 == 0));
        for axes in subsets(l.rank()) {
            let any = reference(&x, &l, &axes, None, |a, b| a || b);
            let all = reference(&x, &l, &axes, None, |a, b| a && b);
            prop_assert_eq!(run_reduce(ReduceOp::Max, &x, &l, &axes).ok(), any);
            prop_assert_eq!(run_reduce(ReduceOp::Min, &x, &l, &axes).ok(), all);
            let c: Vec<Complex32> = x.iter().enumerate().map(|(i, &b)| Complex32::new(i as f32 % 7.0, b as u8 as f32)).collect();
            let want = reference(&c, &l, &axes, Some(Complex32::new(0.0, 0.0)), |a, b| a + b);
            prop_assert_eq!(run_reduce(ReduceOp::Sum, &c, &l, &axes).ok(), want);
        }
    }
}

#[test]
fn large_views_take_every_path() {
    // Above the parallel threshold: row sums, column sums, few outputs with long reductions, narrow
    // columns, transposed and reversed views, and a reduction of broadcast rows.
    let cases: Vec<(Layout, Vec<usize>)> = vec![
        (Layout::contiguous([300, 517]), vec![0]),
        (Layout::contiguous([300, 517]), vec![1]),
        (Layout::contiguous([2, 200_000]), vec![1]),
        (Layout::contiguous([100_003, 3]), vec![0]),
        (Layout::contiguous([3, 100_003]), vec![0]),
        (Layout::contiguous([40, 50, 60]), vec![0, 2]),
        // A convolution bias's gradient: fewer outer rows than a serial block, split across threads.
        (Layout::contiguous([64, 32, 676]), vec![0, 2]),
        (
            Layout::contiguous([517, 300]).permute(&[1, 0]).unwrap(),
            vec![0],
        ),
        (
            Layout::contiguous([517, 300]).permute(&[1, 0]).unwrap(),
            vec![1],
        ),
        (
            Layout::contiguous([300, 517])
                .flip(1)
                .unwrap()
                .flip(0)
                .unwrap(),
            vec![1],
        ),
        (
            Layout::contiguous([1, 700])
                .broadcast_to(&[400, 700])
                .unwrap(),
            vec![0],
        ),
        (
            Layout::contiguous([1, 700])
                .broadcast_to(&[400, 700])
                .unwrap(),
            vec![1],
        ),
        (Layout::contiguous([200_000]), vec![0]),
    ];
    for (l, axes) in cases {
        let n = l.max_offset() as usize + 1;
        let x: Vec<i64> = values(n, 7, |v| Scalar::I64((v % 1000) as i64 - 500));
        for (op, id, f) in [
            (
                ReduceOp::Sum,
                Some(0),
                (|a: i64, b: i64| a.wrapping_add(b)) as fn(i64, i64) -> i64,
            ),
            (ReduceOp::Max, None, max_nan::<i64>),
        ] {
            let want = reference(&x, &l, &axes, id, f).unwrap();
            assert_eq!(
                run_reduce(op, &x, &l, &axes).unwrap(),
                want,
                "{op:?} {axes:?} {l:?}"
            );
        }
        let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let want = reference(&xf, &l, &axes, Some(0.0), |a, b| a + b).unwrap();
        assert_eq!(
            run_reduce(ReduceOp::Sum, &xf, &l, &axes).unwrap(),
            want,
            "{axes:?} {l:?}"
        );
    }
}

#[test]
fn float_sums_are_accurate() {
    let n = 1 << 24;
    let ones = vec![1.0f32; n];
    assert_eq!(
        run_reduce(ReduceOp::Sum, &ones, &Layout::contiguous([n]), &[0]).unwrap(),
        vec![n as f32]
    );
    // Column sums of 2^24 rows stay exact too.
    let l = Layout::contiguous([n / 2, 2]);
    assert_eq!(
        run_reduce(ReduceOp::Sum, &ones, &l, &[0]).unwrap(),
        vec![(n / 2) as f32; 2]
    );
    let m = 1 << 20;
    let key = nabla_core::Generator::new(42).next_key(m);
    let u: Vec<f32> = (0..m as u64).map(|i| key.uniform_f64(i) as f32).collect();
    let exact: f64 = u.iter().map(|&v| v as f64).sum();
    let got = run_reduce(ReduceOp::Sum, &u, &Layout::contiguous([m]), &[0]).unwrap()[0] as f64;
    assert!((got - exact).abs() / exact < 1e-6, "{got} vs {exact}");
    let l = Layout::contiguous([m / 4, 4]);
    let cols = run_reduce(ReduceOp::Sum, &u, &l, &[0]).unwrap();
    for (c, &got) in cols.iter().enumerate() {
        let exact: f64 = u.iter().skip(c).step_by(4).map(|&v| v as f64).sum();
        assert!(
            (got as f64 - exact).abs() / exact < 1e-6,
            "column {c}: {got} vs {exact}"
        );
    }
    let strided = Layout::contiguous([m]).slice(0, 0, m / 2, 2).unwrap();
    let got = run_reduce(ReduceOp::Sum, &u, &strided, &[0]).unwrap()[0] as f64;
    let exact: f64 = u.iter().step_by(2).map(|&v| v as f64).sum();
    assert!((got - exact).abs() / exact < 1e-6, "{got} vs {exact}");
}

#[test]
fn empty_reductions() {
    let x: Vec<f32> = vec![];
    let l = Layout::contiguous([0, 3]);
    assert_eq!(
        run_reduce(ReduceOp::Sum, &x, &l, &[0]).unwrap(),
        vec![0.0; 3]
    );
    assert_eq!(
        run_reduce(ReduceOp::Prod, &x, &l, &[0]).unwrap(),
        vec![1.0; 3]
    );
    assert_eq!(
        run_reduce(ReduceOp::Max, &x, &l, &[1]).unwrap(),
        Vec::<f32>::new()
    );
    let e = run_reduce(ReduceOp::Max, &x, &l, &[0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "max: zero-size reduction has no identity (reducing axes [0] of shape [0, 3])"
    );
    let e = run_reduce(ReduceOp::Min, &x, &Layout::contiguous([0]), &[0]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("min: zero-size reduction has no identity")
    );
    // A rank-0 view reduced over no axes is a copy.
    assert_eq!(
        run_reduce(ReduceOp::Sum, &[5i32], &Layout::contiguous([]), &[]).unwrap(),
        vec![5]
    );
}

#[test]
fn reduce_errors_name_the_op() {
    let b = CpuStorage::new(HostData::Bool(vec![true; 4]));
    let l = Layout::contiguous([2, 2]);
    let e = reduce(ReduceOp::Sum, &b, &l, &[0]).unwrap_err();
    assert_eq!(e.to_string(), "sum: not supported for dtype bool");
    let c = CpuStorage::from_vec(vec![Complex32::new(1.0, 0.0); 4]);
    let e = reduce(ReduceOp::Max, &c, &l, &[0]).unwrap_err();
    assert_eq!(e.to_string(), "max: not supported for dtype complex64");
    let h = CpuStorage::new(HostData::filled(DType::F16, 4, Scalar::F64(1.0)));
    assert!(
        reduce(ReduceOp::Prod, &h, &l, &[0])
            .unwrap_err()
            .to_string()
            .contains("cast to float32")
    );
    let f = CpuStorage::from_vec(vec![1.0f32; 4]);
    let e = reduce(ReduceOp::Sum, &f, &l, &[2]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("sum: axis 2 is out of range for a tensor of rank 2")
    );
    let e = reduce(ReduceOp::Sum, &f, &l, &[1, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sum: axes [1, 0] must be sorted and distinct (shape [2, 2])"
    );
}

/// Reference argmax/argmin: first index whose value beats all earlier ones (NaN beats everything).
fn arg_reference<T: Copy + PartialOrd>(x: &[T], l: &Layout, axis: usize, max: bool) -> Vec<i64> {
    let shape = l.shape();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = 1;
    let out_layout = Layout::contiguous(out_shape.clone());
    let mut out = Vec::new();
    let mut idx = vec![0usize; l.rank()];
    if out_layout.numel() == 0 {
        return out;
    }
    loop {
        let mut best: Option<(T, usize)> = None;
        for i in 0..shape[axis] {
            let mut full = idx.clone();
            full[axis] = i;
            let v = x[l.offset_of(&full)];
            #[allow(clippy::eq_op)]
            let better = match best {
                None => true,
                Some((b, _)) if b != b => false,
                Some(_) if v != v => true,
                Some((b, _)) => {
                    if max {
                        v > b
                    } else {
                        v < b
                    }
                }
            };
            if better {
                best = Some((v, i));
            }
        }
        out.push(best.map(|b| b.1 as i64).unwrap_or(-1));
        if !next_index(&mut idx, &out_shape) {
            return out;
        }
    }
}

fn run_arg<T: Element>(op: ArgReduceOp, x: &[T], l: &Layout, axis: usize) -> Result<Vec<i64>> {
    let s = CpuStorage::from_vec(x.to_vec());
    let out = arg_reduce(op, &s, l, axis)?;
    Ok(i64::vec_of(out.into_host()).expect("argmax returns int64"))
}

fn run_cumsum<T: Element>(x: &[T], l: &Layout, axis: usize) -> Result<Vec<T>> {
    let s = CpuStorage::from_vec(x.to_vec());
    Ok(T::vec_of(cumsum(&s, l, axis)?.into_host()).expect("cumsum keeps the dtype"))
}

/// Reference cumulative sum: walks each line along `axis` in the view.
fn cumsum_reference<T: Copy>(x: &[T], l: &Layout, axis: usize, add: impl Fn(T, T) -> T) -> Vec<T> {
    let shape = l.shape();
    let out_layout = Layout::contiguous(shape.to_vec());
    let mut out: Vec<T> = l.offsets().map(|o| x[o]).collect();
    let mut idx = vec![0usize; l.rank()];
    for _ in 0..out.len() {
        if idx[axis] > 0 {
            let here = out_layout.offset_of(&idx);
            let mut prev = idx.clone();
            prev[axis] -= 1;
            out[here] = add(out[out_layout.offset_of(&prev)], out[here]);
        }
        next_index(&mut idx, shape);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn arg_reductions_match_reference((l, n) in arb_view(4, 5), seed in any::<u64>(), axis in 0usize..4) {
        prop_assume!(l.rank() > 0);
        let axis = axis % l.rank();
        // Few distinct values so that ties are common; some NaNs.
        let x: Vec<f32> = values(n, seed, |v| Scalar::F64(if v % 11 == 0 { f64::NAN } else { (v % 4) as f64 }));
        let xi: Vec<u8> = values(n, seed, |v| Scalar::I64((v % 3) as i64));
        let xb: Vec<bool> = values(n, seed, |v| Scalar::Bool(v % 3 == 0));
        let empty = l.shape()[axis] == 0 && l.shape().iter().enumerate().all(|(a, &d)| a == axis || d > 0);
        for (op, max) in [(ArgReduceOp::ArgMax, true), (ArgReduceOp::ArgMin, false)] {
            if empty {
                prop_assert!(run_arg(op, &x, &l, axis).unwrap_err().to_string().contains("empty axis"));
                continue;
            }
            prop_assert_eq!(run_arg(op, &x, &l, axis).unwrap(), arg_reference(&x, &l, axis, max));
            prop_assert_eq!(run_arg(op, &xi, &l, axis).unwrap(), arg_reference(&xi, &l, axis, max));
            prop_assert_eq!(run_arg(op, &xb, &l, axis).unwrap(), arg_reference(&xb, &l, axis, max));
        }
    }

    #[test]
    fn cumsum_matches_reference((l, n) in arb_view(4, 5), seed in any::<u64>(), axis in 0usize..4) {
        prop_assume!(l.rank() > 0);
        let axis = axis % l.rank();
        let x: Vec<i32> = values(n, seed, |v| Scalar::I64(v as i64));
        prop_assert_eq!(run_cumsum(&x, &l, axis).unwrap(), cumsum_reference(&x, &l, axis, i32::wrapping_add));
        let xf: Vec<f64> = values(n, seed, |v| Scalar::I64((v % 7) as i64));
        prop_assert_eq!(run_cumsum(&xf, &l, axis).unwrap(), cumsum_reference(&xf, &l, axis, |a, b| a + b));
        let xc: Vec<Complex32> = xf.iter().map(|&v| Complex32::new(v as f32, 1.0)).collect();
        prop_assert_eq!(run_cumsum(&xc, &l, axis).unwrap(), cumsum_reference(&xc, &l, axis, |a, b| a + b));
    }
}

#[test]
fn large_arg_reductions_and_cumsum() {
    for (l, axis) in [
        (Layout::contiguous([300, 517]), 0),
        (Layout::contiguous([300, 517]), 1),
        (Layout::contiguous([517, 300]).permute(&[1, 0]).unwrap(), 0),
        (Layout::contiguous([3, 70_000]), 1),
        (Layout::contiguous([70_000, 3]).flip(0).unwrap(), 0),
    ] {
        let n = l.max_offset() as usize + 1;
        let x: Vec<i64> = values(n, 3, |v| Scalar::I64((v % 1000) as i64));
        assert_eq!(
            run_arg(ArgReduceOp::ArgMax, &x, &l, axis).unwrap(),
            arg_reference(&x, &l, axis, true)
        );
        assert_eq!(
            run_arg(ArgReduceOp::ArgMin, &x, &l, axis).unwrap(),
            arg_reference(&x, &l, axis, false)
        );
        assert_eq!(
            run_cumsum(&x, &l, axis).unwrap(),
            cumsum_reference(&x, &l, axis, |a, b| a + b)
        );
    }
}

#[test]
fn arg_reductions_over_long_runs() {
    // Ties and NaNs in later blocks of long contiguous runs.
    let n = 10_000;
    let mut x: Vec<f32> = (0..3 * n).map(|i| (i % 97) as f32).collect();
    x[n + 7000] = f32::NAN;
    x[n + 9000] = f32::NAN;
    x[2 * n + 5000] = 200.0;
    x[2 * n + 8000] = 200.0;
    x[2 * n + 6000] = -1.0;
    let l = Layout::contiguous([3, n]);
    let max = run_arg(ArgReduceOp::ArgMax, &x, &l, 1).unwrap();
    let min = run_arg(ArgReduceOp::ArgMin, &x, &l, 1).unwrap();
    assert_eq!(max, vec![96, 7000, 5000]);
    assert_eq!(min, vec![0, 7000, 6000]);
    assert_eq!(max, arg_reference(&x, &l, 1, true));
    assert_eq!(min, arg_reference(&x, &l, 1, false));
}

#[test]
fn arg_reduce_and_cumsum_errors() {
    let l = Layout::contiguous([2, 2]);
    let c = CpuStorage::from_vec(vec![Complex32::new(1.0, 0.0); 4]);
    let e = arg_reduce(ArgReduceOp::ArgMax, &c, &l, 0).unwrap_err();
    assert_eq!(e.to_string(), "argmax: not supported for dtype complex64");
    let f = CpuStorage::from_vec(Vec::<f32>::new());
    let e = arg_reduce(ArgReduceOp::ArgMin, &f, &Layout::contiguous([3, 0]), 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "argmin: attempt to take the argmin of an empty axis 1 (shape [3, 0])"
    );
    let out = arg_reduce(ArgReduceOp::ArgMin, &f, &Layout::contiguous([0, 3]), 1).unwrap();
    assert_eq!(out.len(), 0);
    let x = CpuStorage::from_vec(vec![1.0f32; 4]);
    assert!(
        arg_reduce(ArgReduceOp::ArgMax, &x, &l, 2)
            .unwrap_err()
            .to_string()
            .contains("axis 2 is out of range")
    );
    let b = CpuStorage::new(HostData::Bool(vec![true; 4]));
    assert_eq!(
        cumsum(&b, &l, 0).unwrap_err().to_string(),
        "cumsum: not supported for dtype bool"
    );
    let h = CpuStorage::new(HostData::filled(DType::BF16, 4, Scalar::F64(1.0)));
    assert!(
        cumsum(&h, &l, 0)
            .unwrap_err()
            .to_string()
            .starts_with("cumsum: not supported for dtype bfloat16")
    );
    assert!(
        cumsum(&x, &l, 5)
            .unwrap_err()
            .to_string()
            .contains("axis 5 is out of range")
    );
}
