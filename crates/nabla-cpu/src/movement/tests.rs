//! Tests of the movement kernels against plain reference implementations built on `Layout::offsets`
//! and `Layout::offset_of`, over random shapes (zero-size dimensions included) and random strided views.

use crate::{CpuBackend, CpuStorage};
use half::f16;
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{Backend, DType, Element, Error, Layout, Scalar};
use proptest::prelude::*;

/// A small deterministic generator for test data and view choices.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random view of exactly `shape` over a buffer, and that buffer's length: transposed storage, reversed
/// axes, step-2 slices with positive and negative steps, broadcast (stride-0) axes and a leading offset.
pub(crate) fn view_of(shape: &[usize], seed: u64) -> (Layout, usize) {
    let mut rng = Lcg(seed);
    let rank = shape.len();
    let modes: Vec<u64> = (0..rank).map(|_| rng.below(5)).collect();
    let base_dims: Vec<usize> = shape
        .iter()
        .zip(&modes)
        .map(|(&d, &m)| match m {
            2 => 2 * d + 1,
            3 => 1,
            _ => d,
        })
        .collect();
    // Storage order: a random rotation of the axes (a transpose when rank >= 2).
    let rot = if rank > 1 {
        rng.below(rank as u64) as usize
    } else {
        0
    };
    let perm: Vec<usize> = (0..rank).map(|i| (i + rot) % rank).collect();
    let mut inverse = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let stored: Vec<usize> = perm.iter().map(|&p| base_dims[p]).collect();
    let base = Layout::contiguous(stored).permute(&inverse).unwrap();
    let lead = rng.below(3) as usize;
    let mut l = Layout::from_parts(base.shape().to_vec(), base.strides().to_vec(), lead).unwrap();
    for (ax, (&d, &m)) in shape.iter().zip(&modes).enumerate() {
        match m {
            1 => l = l.flip(ax).unwrap(),
            2 if rng.below(2) == 0 => l = l.slice(ax, 1, d, 2).unwrap(),
            2 => l = l.slice(ax, 2 * d, d, -2).unwrap(),
            3 => {
                let mut target = l.shape().to_vec();
                target[ax] = d;
                l = l.broadcast_to(&target).unwrap();
            }
            _ => {}
        }
    }
    assert_eq!(l.shape(), shape);
    (l, lead + base_dims.iter().product::<usize>())
}

/// `len` values with many duplicates and, for complex types, non-zero imaginary parts.
pub(crate) fn values<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = Lcg(seed ^ 0x9e37_79b9);
    (0..len)
        .map(|_| {
            let re = rng.below(11) as f64 - 5.0;
            let im = rng.below(3) as f64 - 1.0;
            T::from_scalar(Scalar::C128(Complex64::new(re, im)))
        })
        .collect()
}

/// Indices in `lo..hi`.
pub(crate) fn indices(len: usize, lo: i64, hi: i64, seed: u64) -> Vec<i64> {
    let mut rng = Lcg(seed ^ 0x5bd1_e995);
    (0..len)
        .map(|_| lo + rng.below((hi - lo).max(1) as u64) as i64)
        .collect()
}

pub(crate) fn typed<T: Element>(s: &CpuStorage) -> Vec<T> {
    T::vec_of(s.host().to_owned()).expect("dtype of the result")
}

/// Every multi-index of `shape` in row-major order.
pub(crate) fn multi_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0; shape.len()];
    for _ in 0..n {
        out.push(idx.clone());
        for ax in (0..shape.len()).rev() {
            idx[ax] += 1;
            if idx[ax] < shape[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
    out
}

fn resolve(i: i64, n: usize) -> usize {
    (if i < 0 { i + n as i64 } else { i }) as usize
}

fn check_pad<T: Element>(shape: &[usize], pads: &[(usize, usize)], seed: u64) {
    let (l, len) = view_of(shape, seed);
    let x = values::<T>(len, seed);
    let value = T::from_scalar(Scalar::F64(7.0));
    let got = CpuBackend
        .pad(&CpuStorage::from_vec(x.clone()), &l, pads, Scalar::F64(7.0))
        .unwrap();
    let out_shape: Vec<usize> = shape.iter().zip(pads).map(|(d, p)| d + p.0 + p.1).collect();
    let want: Vec<T> = multi_indices(&out_shape)
        .into_iter()
        .map(|o| {
            let inner: Option<Vec<usize>> = (0..shape.len())
                .map(|d| {
                    let i = o[d].checked_sub(pads[d].0)?;
                    (i < shape[d]).then_some(i)
                })
                .collect();
            inner.map_or(value, |i| x[l.offset_of(&i)])
        })
        .collect();
    assert_eq!(typed::<T>(&got), want, "pad {shape:?} by {pads:?} of {l:?}");
}

fn check_concat<T: Element>(shape: &[usize], axis: usize, sizes: &[usize], seed: u64) {
    let mut parts = Vec::new();
    for (p, &s) in sizes.iter().enumerate() {
        let mut sh = shape.to_vec();
        sh[axis] = s;
        let (l, len) = view_of(&sh, seed.wrapping_add(p as u64 * 77));
        parts.push((values::<T>(len, seed + p as u64), l));
    }
    let storages: Vec<CpuStorage> = parts
        .iter()
        .map(|(v, _)| CpuStorage::from_vec(v.clone()))
        .collect();
    let args: Vec<(&CpuStorage, &Layout)> = storages
        .iter()
        .zip(&parts)
        .map(|(s, (_, l))| (s, l))
        .collect();
    let got = CpuBackend.concat(&args, axis).unwrap();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = sizes.iter().sum();
    let want: Vec<T> = multi_indices(&out_shape)
        .into_iter()
        .map(|mut o| {
            let mut p = 0;
            while o[axis] >= sizes[p] {
                o[axis] -= sizes[p];
                p += 1;
            }
            parts[p].0[parts[p].1.offset_of(&o)]
        })
        .collect();
    assert_eq!(
        typed::<T>(&got),
        want,
        "concat {sizes:?} on axis {axis} of {shape:?}"
    );
}

fn check_gather<T: Element>(shape: &[usize], axis: usize, m: usize, seed: u64) {
    let (lx, xlen) = view_of(shape, seed);
    let x = values::<T>(xlen, seed);
    let mut ishape = shape.to_vec();
    ishape[axis] = m;
    let (li, ilen) = view_of(&ishape, seed.rotate_left(17));
    let n = shape[axis] as i64;
    let idx = indices(ilen, -n, n, seed);
    let got = CpuBackend.gather(
        &CpuStorage::from_vec(x.clone()),
        &lx,
        axis,
        &CpuStorage::from_vec(idx.clone()),
        &li,
    );
    if n == 0 && li.numel() > 0 {
        let e = got.unwrap_err();
        assert!(
            e.to_string()
                .contains("out of bounds for a dimension of size 0"),
            "{e}"
        );
        return;
    }
    let want: Vec<T> = multi_indices(&ishape)
        .into_iter()
        .map(|mut o| {
            o[axis] = resolve(idx[li.offset_of(&o)], n as usize);
            x[lx.offset_of(&o)]
        })
        .collect();
    assert_eq!(typed::<T>(&got.unwrap()), want, "gather {lx:?} by {li:?}");
}

fn check_index_select<T: Element>(shape: &[usize], axis: usize, m: usize, seed: u64) {
    let (lx, xlen) = view_of(shape, seed);
    let x = values::<T>(xlen, seed);
    let (li, ilen) = view_of(&[m], seed.rotate_left(9));
    let n = shape[axis] as i64;
    let idx = indices(ilen, -n, n, seed);
    let got = CpuBackend.index_select(
        &CpuStorage::from_vec(x.clone()),
        &lx,
        axis,
        &CpuStorage::from_vec(idx.clone()),
        &li,
    );
    if n == 0 && m > 0 {
        assert!(got.is_err());
        return;
    }
    let mut out_shape = shape.to_vec();
    out_shape[axis] = m;
    let want: Vec<T> = multi_indices(&out_shape)
        .into_iter()
        .map(|mut o| {
            o[axis] = resolve(idx[li.offset_of(&[o[axis]])], n as usize);
            x[lx.offset_of(&o)]
        })
        .collect();
    assert_eq!(
        typed::<T>(&got.unwrap()),
        want,
        "index_select {lx:?} by {li:?}"
    );
}

/// Sequential scatter-add in row-major order of the index: the order the kernel must reproduce exactly.
#[allow(clippy::too_many_arguments)]
fn scatter_reference<T: Element>(
    dst: &[T],
    ld: &Layout,
    axis: usize,
    idx: &[i64],
    li: &Layout,
    src: &[T],
    ls: &Layout,
    add: impl Fn(T, T) -> T,
) -> Vec<T> {
    let mut out: Vec<T> = ld.offsets().map(|o| dst[o]).collect();
    let out_layout = Layout::contiguous(ld.shape().to_vec());
    for o in multi_indices(li.shape()) {
        let mut t = o.clone();
        t[axis] = resolve(idx[li.offset_of(&o)], ld.shape()[axis]);
        let p = out_layout.offset_of(&t);
        out[p] = add(out[p], src[ls.offset_of(&o)]);
    }
    out
}

fn check_scatter<T: Element>(
    shape: &[usize],
    axis: usize,
    m: usize,
    seed: u64,
    add: impl Fn(T, T) -> T,
) {
    let (ld, dlen) = view_of(shape, seed);
    let dst = values::<T>(dlen, seed);
    let mut ishape = shape.to_vec();
    ishape[axis] = m;
    let (li, ilen) = view_of(&ishape, seed.rotate_left(5));
    let (ls, slen) = view_of(&ishape, seed.rotate_left(23));
    let src = values::<T>(slen, seed + 1);
    let n = shape[axis] as i64;
    let idx = indices(ilen, -n, n, seed);
    let got = CpuBackend.scatter_add(
        &CpuStorage::from_vec(dst.clone()),
        &ld,
        axis,
        &CpuStorage::from_vec(idx.clone()),
        &li,
        &CpuStorage::from_vec(src.clone()),
        &ls,
    );
    if n == 0 && li.numel() > 0 {
        assert!(got.is_err());
        return;
    }
    let want = scatter_reference(&dst, &ld, axis, &idx, &li, &src, &ls, &add);
    assert_eq!(
        typed::<T>(&got.unwrap()),
        want,
        "scatter_add into {ld:?} by {li:?} from {ls:?}"
    );
    // Onto a broadcast constant (a gather's gradient): line by line along the last axis.
    let lc = Layout::from_parts(shape.to_vec(), vec![0; shape.len()], 0).unwrap();
    let constant = values::<T>(1, seed);
    let scatter = |idx: &[i64]| {
        CpuBackend.scatter_add(
            &CpuStorage::from_vec(constant.clone()),
            &lc,
            axis,
            &CpuStorage::from_vec(idx.to_vec()),
            &li,
            &CpuStorage::from_vec(src.clone()),
            &ls,
        )
    };
    let want = scatter_reference(&constant, &lc, axis, &idx, &li, &src, &ls, &add);
    assert_eq!(typed::<T>(&scatter(&idx).unwrap()), want, "onto {lc:?}");
    // A bad index is reported as on the general path: the first in row-major order of the view.
    if let Some(o) = li.offsets().nth(li.numel() / 2) {
        let mut bad = idx.clone();
        bad[o] = n + 3;
        let first = li.offsets().map(|o| bad[o]).find(|i| !(-n..n).contains(i));
        match scatter(&bad) {
            Err(Error::IndexOutOfBounds { index, .. }) => assert_eq!(Some(index), first),
            other => panic!("expected an index error, got {other:?}"),
        }
    }
}

fn check_one_hot<T: Element>(shape: &[usize], classes: usize, seed: u64) {
    let (l, len) = view_of(shape, seed);
    let idx = indices(len, 0, classes as i64, seed);
    let got = CpuBackend
        .one_hot(&CpuStorage::from_vec(idx.clone()), &l, classes, T::DTYPE)
        .unwrap();
    let want: Vec<T> = l
        .offsets()
        .flat_map(|o| {
            let i = idx[o];
            (0..classes).map(move |c| if c as i64 == i { T::one() } else { T::zero() })
        })
        .collect();
    assert_eq!(typed::<T>(&got), want);
}

fn arb_shape(min_rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, min_rank..4)
}

/// A shape of rank >= 1 and an axis of it.
fn arb_axis_shape() -> impl Strategy<Value = (Vec<usize>, usize)> {
    arb_shape(1).prop_flat_map(|s| {
        let r = s.len();
        (Just(s), 0..r)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn pad_matches_reference(
        (shape, pads) in arb_shape(0).prop_flat_map(|s| {
            let r = s.len();
            (Just(s), prop::collection::vec((0usize..3, 0usize..3), r))
        }),
        seed in any::<u64>(),
    ) {
        check_pad::<f32>(&shape, &pads, seed);
        check_pad::<i64>(&shape, &pads, seed);
        check_pad::<bool>(&shape, &pads, seed);
        check_pad::<Complex32>(&shape, &pads, seed);
        check_pad::<f16>(&shape, &pads, seed);
    }

    #[test]
    fn concat_matches_reference(
        (shape, axis) in arb_axis_shape(),
        sizes in prop::collection::vec(0usize..4, 1..4),
        seed in any::<u64>(),
    ) {
        check_concat::<f64>(&shape, axis, &sizes, seed);
        check_concat::<i32>(&shape, axis, &sizes, seed);
        check_concat::<bool>(&shape, axis, &sizes, seed);
        check_concat::<Complex64>(&shape, axis, &sizes, seed);
        check_concat::<f16>(&shape, axis, &sizes, seed);
    }

    #[test]
    fn gather_matches_reference((shape, axis) in arb_axis_shape(), m in 0usize..5, seed in any::<u64>()) {
        check_gather::<f32>(&shape, axis, m, seed);
        check_gather::<i64>(&shape, axis, m, seed);
        check_gather::<bool>(&shape, axis, m, seed);
        check_gather::<Complex32>(&shape, axis, m, seed);
        check_gather::<f16>(&shape, axis, m, seed);
    }

    #[test]
    fn index_select_matches_reference(
        (shape, axis) in prop::collection::vec(0usize..5, 1..4).prop_flat_map(|s| {
            let r = s.len();
            (Just(s), 0..r)
        }),
        m in 0usize..6,
        seed in any::<u64>(),
    ) {
        check_index_select::<f32>(&shape, axis, m, seed);
        check_index_select::<u8>(&shape, axis, m, seed);
        check_index_select::<bool>(&shape, axis, m, seed);
        check_index_select::<Complex64>(&shape, axis, m, seed);
        check_index_select::<f16>(&shape, axis, m, seed);
    }

    #[test]
    fn scatter_add_matches_sequential_reference(
        (shape, axis) in arb_axis_shape(),
        m in 0usize..6,
        seed in any::<u64>(),
    ) {
        check_scatter::<f64>(&shape, axis, m, seed, |a, b| a + b);
        check_scatter::<f32>(&shape, axis, m, seed, |a, b| a + b);
        check_scatter::<i64>(&shape, axis, m, seed, |a, b| a + b);
        check_scatter::<u8>(&shape, axis, m, seed, |a, b| a.wrapping_add(b));
        check_scatter::<Complex32>(&shape, axis, m, seed, |a, b| a + b);
    }

    #[test]
    fn gather_and_scatter_add_are_adjoint(
        (shape, axis) in arb_axis_shape(),
        m in 0usize..5,
        seed in any::<u64>(),
    ) {
        // <gather(x, idx), y> == <x, scatter_add(0, idx, y)>
        prop_assume!(shape[axis] > 0);
        let lx = Layout::contiguous(shape.clone());
        let mut rng = Lcg(seed);
        let x: Vec<f64> = (0..lx.numel()).map(|_| rng.below(1000) as f64 / 97.0 - 5.0).collect();
        let mut ishape = shape.clone();
        ishape[axis] = m;
        let (li, ilen) = view_of(&ishape, seed);
        let n = shape[axis] as i64;
        let idx = CpuStorage::from_vec(indices(ilen, -n, n, seed));
        let ly = Layout::contiguous(ishape.clone());
        let y: Vec<f64> = (0..ly.numel()).map(|_| rng.below(1000) as f64 / 89.0 - 5.0).collect();
        let cpu = CpuBackend;
        let gx = typed::<f64>(&cpu.gather(&CpuStorage::from_vec(x.clone()), &lx, axis, &idx, &li).unwrap());
        let zeros = CpuStorage::from_vec(vec![0.0f64; lx.numel()]);
        let sy = typed::<f64>(
            &cpu.scatter_add(&zeros, &lx, axis, &idx, &li, &CpuStorage::from_vec(y.clone()), &ly).unwrap(),
        );
        let lhs: f64 = gx.iter().zip(&y).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&sy).map(|(a, b)| a * b).sum();
        prop_assert!((lhs - rhs).abs() <= 1e-9 * (1.0 + lhs.abs()), "{} vs {}", lhs, rhs);
    }

    #[test]
    fn one_hot_matches_reference(shape in arb_shape(0), classes in 1usize..5, seed in any::<u64>()) {
        check_one_hot::<f32>(&shape, classes, seed);
        check_one_hot::<bool>(&shape, classes, seed);
        check_one_hot::<i64>(&shape, classes, seed);
        check_one_hot::<Complex32>(&shape, classes, seed);
        check_one_hot::<f16>(&shape, classes, seed);
    }
}

#[test]
fn large_inputs_take_the_parallel_paths() {
    // Sizes above PARALLEL_THRESHOLD, through transposed and contiguous views.
    check_pad::<f32>(&[300, 200], &[(1, 2), (3, 0)], 11);
    check_concat::<f32>(&[120, 150], 1, &[150, 7, 150], 12);
    check_concat::<i64>(&[120, 150], 0, &[120, 60, 100], 13);
    check_concat::<u8>(&[1], 0, &[40_000, 30_000], 19);
    check_gather::<f64>(&[200, 300], 1, 300, 14);
    check_gather::<f32>(&[200, 300], 0, 250, 15);
    check_index_select::<f32>(&[200, 40], 0, 1000, 16);
    check_index_select::<i32>(&[40, 200], 1, 1000, 17);
    check_one_hot::<f32>(&[5000], 10, 18);
    check_one_hot::<bool>(&[50, 100], 7, 20);
}

#[test]
fn transposed_sources_are_copied_in_tiles() {
    // Views whose innermost dimension is strided and the next one unit-stride, small and large, with and
    // without outer planes and reversed axes.
    let cases = [
        Layout::contiguous([200, 300]).permute(&[1, 0]).unwrap(),
        Layout::contiguous([7, 5]).permute(&[1, 0]).unwrap(),
        Layout::contiguous([4, 50, 60]).permute(&[0, 2, 1]).unwrap(),
        Layout::contiguous([3, 40, 33])
            .permute(&[2, 0, 1])
            .unwrap()
            .flip(2)
            .unwrap(),
    ];
    for l in cases {
        let x: Vec<i32> = (0..l.numel() as i32).collect();
        let rank = l.rank();
        let pads: Vec<(usize, usize)> = (0..rank).map(|d| (d % 2, 1)).collect();
        let got = CpuBackend
            .pad(&CpuStorage::from_vec(x.clone()), &l, &pads, Scalar::I64(-1))
            .unwrap();
        let out_shape: Vec<usize> = l
            .shape()
            .iter()
            .zip(&pads)
            .map(|(d, p)| d + p.0 + p.1)
            .collect();
        let want: Vec<i32> = multi_indices(&out_shape)
            .into_iter()
            .map(|o| {
                let inner: Option<Vec<usize>> = (0..rank)
                    .map(|d| o[d].checked_sub(pads[d].0).filter(|&i| i < l.shape()[d]))
                    .collect();
                inner.map_or(-1, |i| x[l.offset_of(&i)])
            })
            .collect();
        assert_eq!(typed::<i32>(&got), want, "pad of {l:?}");
        let c = Layout::contiguous(l.shape().to_vec());
        let s = CpuStorage::from_vec(x.clone());
        let got = CpuBackend.concat(&[(&s, &l), (&s, &c)], 0).unwrap();
        let mut want: Vec<i32> = l.offsets().map(|o| x[o]).collect();
        want.extend(c.offsets().map(|o| x[o]));
        assert_eq!(typed::<i32>(&got), want, "concat of {l:?}");
    }
}

#[test]
fn embedding_lookup_copies_rows() {
    let table: Vec<f32> = (0..1000 * 64).map(|v| v as f32).collect();
    let lt = Layout::contiguous([1000, 64]);
    let ids: Vec<i64> = (0..600).map(|i| (i * 37 % 1000) - 500).collect();
    let out = CpuBackend
        .index_select(
            &CpuStorage::from_vec(table),
            &lt,
            0,
            &CpuStorage::from_vec(ids.clone()),
            &Layout::contiguous([600]),
        )
        .unwrap();
    let out = typed::<f32>(&out);
    assert_eq!(out.len(), 600 * 64);
    for (r, &i) in ids.iter().enumerate() {
        let row = resolve(i, 1000);
        assert_eq!(
            out[r * 64..(r + 1) * 64],
            (0..64).map(|c| (row * 64 + c) as f32).collect::<Vec<_>>()[..]
        );
    }
}

#[test]
fn scatter_add_duplicates_are_exact_and_deterministic() {
    // Small explicit case: every src element lands on index 1 or -1 (== 2) of a length-3 axis.
    let dst = CpuStorage::from_vec(vec![1.0f32, 2.0, 3.0, 10.0, 20.0, 30.0]);
    let ld = Layout::contiguous([2, 3]);
    let idx = CpuStorage::from_vec(vec![1i64, 1, -1, 1, 0, 1, 1, 1]);
    let li = Layout::contiguous([2, 4]);
    let src = CpuStorage::from_vec(vec![0.5f32, 0.25, 4.0, 0.125, 1.0, 2.0, 3.0, 4.0]);
    let out = CpuBackend
        .scatter_add(&dst, &ld, 1, &idx, &li, &src, &li)
        .unwrap();
    assert_eq!(typed::<f32>(&out), vec![1.0, 2.875, 7.0, 11.0, 29.0, 30.0]);
    // Large: 80 000 contributions onto 200 outputs, split across threads; equal bit for bit to the
    // sequential row-major accumulation, on both axes.
    for (shape, axis, ishape) in [([4, 50], 1, [4, 20_000]), ([5, 300], 0, [200, 300])] {
        let ld = Layout::contiguous(shape);
        let li = Layout::contiguous(ishape);
        let dst = values::<f32>(ld.numel(), 1);
        let mut rng = Lcg(3);
        let src: Vec<f32> = (0..li.numel())
            .map(|_| rng.below(1 << 20) as f32 * 1e-3)
            .collect();
        let n = shape[axis] as i64;
        let idx = indices(li.numel(), -n, n, 4);
        let got = CpuBackend
            .scatter_add(
                &CpuStorage::from_vec(dst.clone()),
                &ld,
                axis,
                &CpuStorage::from_vec(idx.clone()),
                &li,
                &CpuStorage::from_vec(src.clone()),
                &li,
            )
            .unwrap();
        let want = scatter_reference(&dst, &ld, axis, &idx, &li, &src, &li, |a, b| a + b);
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(typed::<f32>(&got)), bits(want));
    }
}

#[test]
fn scatter_add_onto_zeros_splits_lines_across_threads() {
    // Max pooling's backward: 4 values per 16-element line (some repeated), 40 000 lines, onto a
    // broadcast zero; bit for bit the sequential accumulation.
    let (lines, n, m) = (40_000, 16, 4);
    let ld = Layout::from_parts(vec![lines, n], vec![0, 0], 0).unwrap();
    let li = Layout::contiguous([lines, m]);
    let mut rng = Lcg(9);
    let src: Vec<f32> = (0..li.numel())
        .map(|_| rng.below(1 << 20) as f32 * 1e-3)
        .collect();
    let idx = indices(li.numel(), -(n as i64), n as i64, 5);
    let got = CpuBackend
        .scatter_add(
            &CpuStorage::from_vec(vec![0.0f32]),
            &ld,
            1,
            &CpuStorage::from_vec(idx.clone()),
            &li,
            &CpuStorage::from_vec(src.clone()),
            &li,
        )
        .unwrap();
    let want = scatter_reference(&[0.0f32], &ld, 1, &idx, &li, &src, &li, |a, b| a + b);
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(bits(typed::<f32>(&got)), bits(want));
}

#[test]
fn negative_indices_count_from_the_end() {
    let x = CpuStorage::from_vec(vec![10i64, 11, 12, 20, 21, 22]);
    let lx = Layout::contiguous([2, 3]);
    let idx = CpuStorage::from_vec(vec![-1i64, -3, 2, -2]);
    let g = CpuBackend
        .gather(&x, &lx, 1, &idx, &Layout::contiguous([2, 2]))
        .unwrap();
    assert_eq!(typed::<i64>(&g), vec![12, 10, 22, 21]);
    let s = CpuBackend
        .index_select(&x, &lx, 0, &idx, &Layout::contiguous([1]))
        .unwrap();
    assert_eq!(typed::<i64>(&s), vec![20, 21, 22]);
}

fn err_text(r: nabla_core::Result<CpuStorage>) -> String {
    r.expect_err("an error").to_string()
}

#[test]
fn movement_errors_name_the_op_and_values() {
    let cpu = CpuBackend;
    let x = CpuStorage::from_vec(vec![1.0f32; 6]);
    let lx = Layout::contiguous([2, 3]);
    let i64s = |v: Vec<i64>| CpuStorage::from_vec(v);
    assert_eq!(
        err_text(cpu.pad(&x, &lx, &[(1, 1)], Scalar::F64(0.0))),
        "pad: 1 (before, after) pairs were given for shape [2, 3] of rank 2; give one pair per dimension"
    );
    // concat
    assert_eq!(
        err_text(cpu.concat(&[], 0)),
        "concat: at least one tensor is needed"
    );
    let y = CpuStorage::from_vec(vec![1.0f64; 6]);
    assert!(
        err_text(cpu.concat(&[(&x, &lx), (&y, &lx)], 0))
            .starts_with("concat: dtype mismatch between float32 and float64")
    );
    let l32 = Layout::contiguous([3, 2]);
    assert_eq!(
        err_text(cpu.concat(&[(&x, &lx), (&x, &l32)], 0)),
        "concat: shape mismatch between [2, 3] and [3, 2] (all parts must have rank 2 and equal sizes on every axis except 0)"
    );
    assert_eq!(
        err_text(cpu.concat(&[(&x, &lx)], 2)),
        "concat: axis 2 is out of range for a tensor of rank 2 (expected -2..=1)"
    );
    // gather
    let li = Layout::contiguous([2, 1]);
    let bad_dtype = CpuStorage::from_vec(vec![0i32, 1]);
    assert_eq!(
        err_text(cpu.gather(&x, &lx, 1, &bad_dtype, &li)),
        "gather: not supported for dtype int32 (indices must be int64)"
    );
    assert_eq!(
        err_text(cpu.gather(&x, &lx, 1, &i64s(vec![0, 3]), &li)),
        "gather: index 3 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        err_text(cpu.gather(&x, &lx, 1, &i64s(vec![-4, 0]), &li)),
        "gather: index -4 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        err_text(cpu.gather(&x, &lx, 1, &i64s(vec![0, 0]), &Layout::contiguous([2]))),
        "gather: shape mismatch between [2, 3] and [2] (the index must have rank 2 and the same size on every axis except 1)"
    );
    assert_eq!(
        err_text(cpu.gather(&x, &lx, 1, &i64s(vec![0; 3]), &Layout::contiguous([3, 1]))),
        "gather: shape mismatch between [2, 3] and [3, 1] (the index must have rank 2 and the same size on every axis except 1)"
    );
    // index_select
    assert_eq!(
        err_text(cpu.index_select(&x, &lx, 0, &i64s(vec![0, 1]), &li)),
        "index_select: the index must be 1-D, got shape [2, 1]"
    );
    assert_eq!(
        err_text(cpu.index_select(&x, &lx, 0, &i64s(vec![1, 2]), &Layout::contiguous([2]))),
        "index_select: index 2 is out of bounds for a dimension of size 2"
    );
    assert_eq!(
        err_text(cpu.index_select(
            &x,
            &lx,
            0,
            &CpuStorage::from_vec(vec![1.0f32]),
            &Layout::contiguous([1])
        )),
        "index_select: not supported for dtype float32 (indices must be int64)"
    );
    // scatter_add
    let src = CpuStorage::from_vec(vec![1.0f32; 2]);
    assert_eq!(
        err_text(cpu.scatter_add(&x, &lx, 1, &i64s(vec![0, 5]), &li, &src, &li)),
        "scatter_add: index 5 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        err_text(cpu.scatter_add(&x, &lx, 1, &bad_dtype, &li, &src, &li)),
        "scatter_add: not supported for dtype int32 (indices must be int64)"
    );
    assert!(
        err_text(cpu.scatter_add(&x, &lx, 1, &i64s(vec![0, 0]), &li, &y, &li))
            .starts_with("scatter_add: dtype mismatch between float32 and float64")
    );
    assert_eq!(
        err_text(cpu.scatter_add(
            &x,
            &lx,
            1,
            &i64s(vec![0, 0]),
            &li,
            &src,
            &Layout::contiguous([1, 2])
        )),
        "scatter_add: shape mismatch between [2, 1] and [1, 2] (the index and the source must have one shape)"
    );
    let b = CpuStorage::from_vec(vec![true; 6]);
    assert_eq!(
        err_text(cpu.scatter_add(&b, &lx, 1, &i64s(vec![0, 0]), &li, &b, &li)),
        "scatter_add: not supported for dtype bool"
    );
    let h = CpuStorage::from_vec(vec![f16::ONE; 6]);
    assert_eq!(
        err_text(cpu.scatter_add(&h, &lx, 1, &i64s(vec![0, 0]), &li, &h, &li)),
        "scatter_add: not supported for dtype float16 (half-precision types are for storage; cast to float32 first)"
    );
    // one_hot
    assert_eq!(
        err_text(cpu.one_hot(&i64s(vec![0, 4]), &Layout::contiguous([2]), 4, DType::F32)),
        "one_hot: index 4 is out of bounds for a dimension of size 4"
    );
    assert_eq!(
        err_text(cpu.one_hot(&i64s(vec![-1]), &Layout::contiguous([1]), 4, DType::Bool)),
        "one_hot: index -1 is out of bounds for a dimension of size 4"
    );
    assert_eq!(
        err_text(cpu.one_hot(&bad_dtype, &Layout::contiguous([2]), 4, DType::F32)),
        "one_hot: not supported for dtype int32 (indices must be int64)"
    );
}

#[test]
fn zero_classes_and_scalars() {
    let cpu = CpuBackend;
    let none = CpuStorage::from_vec(Vec::<i64>::new());
    let out = cpu
        .one_hot(&none, &Layout::contiguous([0]), 0, DType::F64)
        .unwrap();
    assert_eq!(out.len(), 0);
    let s = CpuStorage::from_vec(vec![5u8]);
    let p = cpu
        .pad(&s, &Layout::contiguous([]), &[], Scalar::I64(0))
        .unwrap();
    assert_eq!(typed::<u8>(&p), vec![5]);
    let e = CpuStorage::from_vec(Vec::<f32>::new());
    let p = cpu
        .pad(
            &e,
            &Layout::contiguous([0, 2]),
            &[(1, 0), (0, 1)],
            Scalar::F64(2.0),
        )
        .unwrap();
    assert_eq!(typed::<f32>(&p), vec![2.0; 3]);
}
