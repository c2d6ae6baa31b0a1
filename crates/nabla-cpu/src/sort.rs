//! Sorting along an axis: stable `sort` (values and their original positions) and `topk`.
//!
//! Both work lane by lane (a lane is the run of elements along `axis` at one position of the other
//! dimensions), reading the lane straight from the strided input and writing the outputs in place; lanes
//! are split across threads for large inputs. The order is total: numbers ascending with NaN after every
//! number; descending is its exact reverse (NaN first). Ties always keep their original relative order, so
//! `sort` is stable in both directions and `topk` prefers the lower index. Each value is mapped to an
//! unsigned key whose integer order is that order, and packed with its position into one `u64` (`u128`
//! for 64-bit types), so lanes sort as plain integers and ties fall to the lower position. `topk` selects
//! its `k` entries with `select_nth_unstable` and sorts only those.
//!
//! Real floats, integers and bool are supported; complex numbers have no order and half-precision types
//! are storage-only, both are reported as unsupported.

use crate::CpuStorage;
use crate::movement::walk::{SharedOut, drop_axis, for_each_lane};
use crate::movement::{build_pair, check_axis};
use nabla_core::{DType, Element, Error, Layout, Primitive, Result};

/// Element types the sort kernels order, through an order-preserving map to unsigned integer keys.
trait SortKey: Element {
    /// Significant bits of [`SortKey::key`].
    const KEY_BITS: u32;
    /// A key whose unsigned order is the ascending order of values: numbers ascending, `-0.0` equal to
    /// `0.0`, every NaN equal to every other and after every number.
    fn key(self) -> u64;
}

macro_rules! sort_key_float {
    ($($t:ty => $bits:ty),*) => {$(
        impl SortKey for $t {
            const KEY_BITS: u32 = <$bits>::BITS;
            #[inline]
            fn key(self) -> u64 {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                if self.is_nan() {
                    return <$bits>::MAX as u64;
                }
                // Adding 0.0 turns -0.0 into 0.0; flipping makes the IEEE bits order like the values.
                let b = (self + 0.0).to_bits();
                (if b & SIGN != 0 { !b } else { b | SIGN }) as u64
            }
        }
    )*};
}
sort_key_float!(f32 => u32, f64 => u64);

macro_rules! sort_key_int {
    ($($t:ty => $bits:ty, $bias:expr),*) => {$(
        impl SortKey for $t {
            const KEY_BITS: u32 = <$bits>::BITS;
            #[inline]
            fn key(self) -> u64 {
                ((self as $bits) ^ $bias) as u64
            }
        }
    )*};
}
sort_key_int!(
    i8 => u8, 1 << 7,
    i16 => u16, 1 << 15,
    i32 => u32, 1 << 31,
    i64 => u64, 1 << 63,
    u8 => u8, 0,
    u16 => u16, 0,
    u32 => u32, 0,
    u64 => u64, 0
);

impl SortKey for bool {
    const KEY_BITS: u32 = 1;
    #[inline]
    fn key(self) -> u64 {
        self as u64
    }
}

/// A key and a position packed into one integer, key in the high bits: sorting the integers orders by key
/// and breaks ties by position, which makes an unstable sort stable.
trait Packed: Ord + Copy + Send + Sync + 'static {
    /// Packs `key` above the `bits` low bits that hold `position`.
    fn pack(key: u64, position: usize, bits: u32) -> Self;
    /// The position stored in the `bits` low bits.
    fn position(self, bits: u32) -> usize;
}

macro_rules! packed {
    ($($t:ty),*) => {$(
        impl Packed for $t {
            #[inline]
            fn pack(key: u64, position: usize, bits: u32) -> Self {
                ((key as $t) << bits) | position as $t
            }
            #[inline]
            fn position(self, bits: u32) -> usize {
                (self & ((1 << bits) - 1)) as usize
            }
        }
    )*};
}
packed!(u64, u128);

/// Runs `$body` with `$v` bound to the typed data of a sortable buffer (real floats, integers,
/// bool), or reports the dtype.
macro_rules! with_sortable {
    ($op:expr, $x:expr, $v:ident => $body:expr) => {
        nabla_core::dispatch_dtype!($x.dtype(), T, {
            real | int | bool => {
                let $v = $x.typed::<T>($op)?;
                $body
            },
            _ => Err(unsortable($op, $x.dtype())),
        })
    };
}

/// The error for a dtype without an order (complex) or without arithmetic (half precision).
fn unsortable(op: &'static str, dtype: DType) -> Error {
    let e = Error::dtype(op, dtype);
    if dtype.is_complex() {
        e.with_hint("complex numbers have no order; sort the real part or the magnitude")
    } else {
        e
    }
}

/// Stable sort along `axis`; returns the sorted values and their original positions (`I64`).
pub(crate) fn sort(
    x: &CpuStorage,
    layout: &Layout,
    axis: usize,
    descending: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    check_axis("sort", axis, layout.rank())?;
    let n = layout.shape()[axis];
    with_sortable!("sort", x, v => sorted_lanes(v, layout, axis, n, descending))
}

/// The `k` largest (or smallest) entries along `axis` in sorted order, with their positions (`I64`).
pub(crate) fn topk(
    x: &CpuStorage,
    layout: &Layout,
    axis: usize,
    k: usize,
    largest: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    check_axis("topk", axis, layout.rank())?;
    // The shape rule checks `k` against the axis.
    Primitive::Topk { axis, k, largest }.output_specs(&[(x.dtype(), layout.shape())])?;
    with_sortable!("topk", x, v => sorted_lanes(v, layout, axis, k, largest))
}

/// The first `k` entries of every lane along `axis` in sorted order (descending when `descending`), and
/// their positions in the lane.
fn sorted_lanes<T: SortKey>(
    x: &[T],
    lx: &Layout,
    axis: usize,
    k: usize,
    descending: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    let n = lx.shape()[axis];
    let mut out_shape = lx.shape().to_vec();
    out_shape[axis] = k;
    let out_layout = Layout::contiguous(out_shape);
    let total = out_layout.numel();
    if total == 0 {
        return Ok((
            CpuStorage::from_vec(Vec::<T>::new()),
            CpuStorage::from_vec(Vec::<i64>::new()),
        ));
    }
    // The output is non-empty, so `k > 0`, every lane is non-empty, and `lx` is a valid non-empty view.
    let sa = lx.strides()[axis];
    let os = out_layout.strides()[axis] as usize;
    let x_rest = drop_axis(lx, axis)?;
    let o_rest = drop_axis(&out_layout, axis)?;
    // Positions need this many bits; the key goes above them, in a u64 when both fit.
    let bits = usize::BITS - (n - 1).leading_zeros();
    let lanes = Lanes {
        x,
        sa,
        n,
        k,
        os,
        flip: if descending {
            u64::MAX >> (64 - T::KEY_BITS)
        } else {
            0
        },
        bits,
    };
    let (values, positions) = build_pair::<T, i64>(total, |values, positions| {
        let (values, positions) = (SharedOut::new(values), SharedOut::new(positions));
        if T::KEY_BITS + bits <= 64 {
            lanes.run::<u64>(&x_rest, &o_rest, &values, &positions);
        } else {
            lanes.run::<u128>(&x_rest, &o_rest, &values, &positions);
        }
    });
    Ok((
        CpuStorage::from_vec(values),
        CpuStorage::from_vec(positions),
    ))
}

/// What every lane of one sort or topk shares.
struct Lanes<'a, T> {
    x: &'a [T],
    /// Stride of the lane axis in `x`.
    sa: isize,
    /// Lane length.
    n: usize,
    /// Entries kept per lane.
    k: usize,
    /// Stride of the lane axis in the outputs.
    os: usize,
    /// XOR-ed into every key: all ones (within the key bits) for descending order, else zero.
    flip: u64,
    /// Bits that hold a position in a packed key.
    bits: u32,
}

impl<T: SortKey> Lanes<'_, T> {
    /// Sorts (or selects) every lane and writes the first `k` values and positions of each.
    fn run<P: Packed>(
        &self,
        x_rest: &Layout,
        o_rest: &Layout,
        values: &SharedOut<'_, T>,
        positions: &SharedOut<'_, i64>,
    ) {
        let (n, k) = (self.n, self.k);
        let work = n * x_rest.numel();
        let scratch = || (Vec::<P>::with_capacity(n), Vec::<T>::with_capacity(n));
        for_each_lane(x_rest, o_rest, work, scratch, |(keys, lane), xo, oo| {
            lane.clear();
            lane.extend((0..n).map(|t| self.x[(xo as isize + t as isize * self.sa) as usize]));
            keys.clear();
            keys.extend(
                lane.iter()
                    .enumerate()
                    .map(|(t, v)| P::pack(v.key() ^ self.flip, t, self.bits)),
            );
            if k < n {
                keys.select_nth_unstable(k - 1);
            }
            keys[..k].sort_unstable();
            for (t, key) in keys[..k].iter().enumerate() {
                let p = key.position(self.bits);
                // SAFETY: each lane writes only its own `k` output positions; lanes are disjoint.
                unsafe {
                    values.write(oo + t * self.os, lane[p]);
                    positions.write(oo + t * self.os, p as i64);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuBackend;
    use crate::movement::tests::{Lcg, multi_indices, typed, view_of};
    use half::f16;
    use nabla_core::num_complex::Complex32;
    use nabla_core::{Backend, Scalar};
    use proptest::prelude::*;
    use std::cmp::Ordering;

    /// Values with duplicates, signed zeros and (for floats) NaN.
    fn sort_values<T: Element>(len: usize, seed: u64) -> Vec<T> {
        let mut rng = Lcg(seed);
        (0..len)
            .map(|_| {
                let v = match rng.below(10) {
                    0 => f64::NAN,
                    1 => -0.0,
                    r => r as f64 - 5.0 + (rng.below(4) * 50) as f64,
                };
                T::from_scalar(Scalar::F64(v))
            })
            .collect()
    }

    /// The reference order, through `f64`: ascending, NaN last, NaNs equal.
    fn reference_cmp(a: f64, b: f64) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => a.partial_cmp(&b).unwrap(),
        }
    }

    /// Checks `sort` (when `k` is `None`) or `topk` against a std stable sort of every lane.
    fn check<T: Element>(shape: &[usize], axis: usize, k: Option<usize>, desc: bool, seed: u64) {
        let (l, len) = view_of(shape, seed);
        let x = sort_values::<T>(len, seed);
        let s = CpuStorage::from_vec(x.clone());
        let (vals, pos) = match k {
            None => CpuBackend.sort(&s, &l, axis, desc),
            Some(k) => CpuBackend.topk(&s, &l, axis, k, desc),
        }
        .unwrap();
        let n = shape[axis];
        let k = k.unwrap_or(n);
        let mut out_shape = shape.to_vec();
        out_shape[axis] = k;
        let out = Layout::contiguous(out_shape);
        let mut want_vals = vec![T::default(); out.numel()];
        let mut want_pos = vec![0i64; out.numel()];
        let mut lane_shape = shape.to_vec();
        lane_shape[axis] = 1;
        for mut o in multi_indices(&lane_shape) {
            let lane: Vec<T> = (0..n)
                .map(|t| {
                    o[axis] = t;
                    x[l.offset_of(&o)]
                })
                .collect();
            let key = |t: usize| lane[t].to_scalar().to_f64();
            let mut perm: Vec<usize> = (0..n).collect();
            if desc {
                perm.sort_by(|&a, &b| reference_cmp(key(b), key(a)));
            } else {
                perm.sort_by(|&a, &b| reference_cmp(key(a), key(b)));
            }
            for (t, &p) in perm.iter().take(k).enumerate() {
                o[axis] = t;
                want_vals[out.offset_of(&o)] = lane[p];
                want_pos[out.offset_of(&o)] = p as i64;
            }
        }
        assert_eq!(
            typed::<i64>(&pos),
            want_pos,
            "positions of {l:?}, axis {axis}, k {k}, desc {desc}"
        );
        assert_eq!(
            format!("{:?}", typed::<T>(&vals)),
            format!("{want_vals:?}"),
            "values of {l:?}, axis {axis}, k {k}, desc {desc}"
        );
    }

    fn all_dtypes(shape: &[usize], axis: usize, k: Option<usize>, desc: bool, seed: u64) {
        check::<f32>(shape, axis, k, desc, seed);
        check::<f64>(shape, axis, k, desc, seed);
        check::<i64>(shape, axis, k, desc, seed);
        check::<i32>(shape, axis, k, desc, seed);
        check::<u8>(shape, axis, k, desc, seed);
        check::<bool>(shape, axis, k, desc, seed);
    }

    fn arb_axis_shape() -> impl Strategy<Value = (Vec<usize>, usize)> {
        prop::collection::vec(0usize..6, 1..4).prop_flat_map(|s| {
            let r = s.len();
            (Just(s), 0..r)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn sort_matches_stable_reference((shape, axis) in arb_axis_shape(), desc in any::<bool>(), seed in any::<u64>()) {
            all_dtypes(&shape, axis, None, desc, seed);
        }

        #[test]
        fn topk_matches_sorted_prefix(
            (shape, axis) in arb_axis_shape(),
            frac in 0.0f64..=1.0,
            largest in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let k = (frac * shape[axis] as f64).round() as usize;
            all_dtypes(&shape, axis, Some(k), largest, seed);
        }
    }

    #[test]
    fn large_inputs_split_lanes_across_threads() {
        check::<f32>(&[300, 200], 0, None, false, 1);
        check::<f32>(&[300, 200], 1, None, true, 2);
        check::<i64>(&[1, 50_000], 1, None, false, 3);
        check::<f64>(&[100, 1000], 1, Some(5), true, 4);
        check::<f64>(&[1000, 100], 0, Some(3), false, 5);
        check::<u8>(&[64, 1024], 1, Some(1000), true, 6);
    }

    #[test]
    fn nan_order_and_ties() {
        let x = CpuStorage::from_vec(vec![3.0f32, f32::NAN, 1.0, f32::NAN, 3.0, 2.0]);
        let l = Layout::contiguous([6]);
        let (v, p) = CpuBackend.sort(&x, &l, 0, false).unwrap();
        assert_eq!(
            format!("{:?}", typed::<f32>(&v)),
            "[1.0, 2.0, 3.0, 3.0, NaN, NaN]"
        );
        assert_eq!(typed::<i64>(&p), vec![2, 5, 0, 4, 1, 3]);
        let (v, p) = CpuBackend.sort(&x, &l, 0, true).unwrap();
        assert_eq!(
            format!("{:?}", typed::<f32>(&v)),
            "[NaN, NaN, 3.0, 3.0, 2.0, 1.0]"
        );
        assert_eq!(typed::<i64>(&p), vec![1, 3, 0, 4, 5, 2]);
        let (v, p) = CpuBackend.topk(&x, &l, 0, 3, true).unwrap();
        assert_eq!(format!("{:?}", typed::<f32>(&v)), "[NaN, NaN, 3.0]");
        assert_eq!(typed::<i64>(&p), vec![1, 3, 0]);
        let (v, p) = CpuBackend.topk(&x, &l, 0, 3, false).unwrap();
        assert_eq!(typed::<f32>(&v), vec![1.0, 2.0, 3.0]);
        assert_eq!(typed::<i64>(&p), vec![2, 5, 0]);
    }

    #[test]
    fn sort_errors_name_the_op_and_values() {
        let text = |r: Result<(CpuStorage, CpuStorage)>| r.expect_err("an error").to_string();
        let l = Layout::contiguous([2, 3]);
        let c = CpuStorage::from_vec(vec![Complex32::new(1.0, 0.0); 6]);
        assert_eq!(
            text(CpuBackend.sort(&c, &l, 1, false)),
            "sort: not supported for dtype complex64 (complex numbers have no order; sort the real part or the magnitude)"
        );
        let h = CpuStorage::from_vec(vec![f16::ONE; 6]);
        assert_eq!(
            text(CpuBackend.topk(&h, &l, 1, 1, true)),
            "topk: not supported for dtype float16 (half-precision types are for storage; cast to float32 first)"
        );
        let x = CpuStorage::from_vec(vec![1i64; 6]);
        assert_eq!(
            text(CpuBackend.topk(&x, &l, 1, 4, true)),
            "topk: k = 4 is larger than the size 3 of axis 1 of shape [2, 3]"
        );
        assert_eq!(
            text(CpuBackend.sort(&x, &l, 2, false)),
            "sort: axis 2 is out of range for a tensor of rank 2 (expected -2..=1)"
        );
        let s = CpuStorage::from_vec(vec![1i64]);
        assert_eq!(
            text(CpuBackend.sort(&s, &Layout::contiguous([]), 0, false)),
            "sort: axis 0 is out of range for a tensor of rank 0"
        );
    }
}
