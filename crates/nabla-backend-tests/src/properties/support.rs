//! Shared pieces of the property tests: shapes, strided views with known logical values, plain-Rust
//! reference helpers and tolerant comparison.

pub use crate::Suite;
pub use nabla_core::Backend;
use nabla_core::{DType, Element, HostData};
pub use nabla_tensor::Tensor;
use proptest::prelude::*;

/// A shape of rank 0..=4 with dimensions 0..=4.
pub fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 0..=4)
}

/// A shape of rank 1..=4 with dimensions 0..=4.
pub fn shape_rank1() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 1..=4)
}

/// Row-major strides.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The multi-index of flat position `i`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = i % shape[d];
            i /= shape[d];
        }
    }
    idx
}

/// The flat position of a multi-index.
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(strides(shape)).map(|(i, s)| i * s).sum()
}

/// NumPy broadcasting of row-major `data` from `from` to `to`.
pub fn expand<V: Copy>(data: &[V], from: &[usize], to: &[usize]) -> Vec<V> {
    let n: usize = to.iter().product();
    let lead = to.len() - from.len();
    (0..n)
        .map(|i| {
            let idx = unravel(i, to);
            let src: Vec<usize> = from
                .iter()
                .enumerate()
                .map(|(d, &s)| if s == 1 { 0 } else { idx[lead + d] })
                .collect();
            data[ravel(&src, from)]
        })
        .collect()
}

/// A shape that broadcasts to `out`: some leading axes dropped, some axes set to 1.
pub fn broadcastable(out: Vec<usize>) -> impl Strategy<Value = Vec<usize>> {
    let r = out.len();
    (0..=r, prop::collection::vec(any::<bool>(), r)).prop_map(move |(drop, ones)| {
        out.iter()
            .enumerate()
            .skip(r - drop.min(r))
            .map(|(d, &n)| if ones[d] { 1 } else { n })
            .collect::<Vec<_>>()
    })
}

/// How an input is laid out in memory; its logical values are the same whatever the layout.
#[derive(Clone, Debug)]
pub enum ViewKind {
    /// A fresh row-major buffer.
    Contiguous,
    /// Stored in another axis order and permuted back (`perm[i]` is the stored axis of logical axis `i`).
    Permuted(Vec<usize>),
    /// Stored reversed along the flagged axes and flipped back (negative strides).
    Flipped(Vec<bool>),
    /// Every other element of a larger buffer, walked backwards along the flagged axes (steps 2 and -2,
    /// non-zero offset).
    Strided(Vec<bool>),
    /// A smaller tensor broadcast up (stride 0); its values live in `Input::src`.
    Broadcast(Vec<usize>),
}

/// Logical values (as `f64`) of a given shape, and the layout to present them in.
#[derive(Clone, Debug)]
pub struct Input {
    /// The logical shape.
    pub shape: Vec<usize>,
    /// The layout.
    pub kind: ViewKind,
    /// The stored values: the logical ones, or for a broadcast the source's.
    pub src: Vec<f64>,
}

/// An input of `shape` with values drawn from `values`, in any of the layouts.
pub fn input(
    shape: Vec<usize>,
    values: impl Strategy<Value = f64> + Clone + 'static,
) -> impl Strategy<Value = Input> {
    let r = shape.len();
    let n: usize = shape.iter().product();
    let idx: Vec<usize> = (0..r).collect();
    let kinds = prop_oneof![
        2 => Just(ViewKind::Contiguous),
        2 => Just(idx).prop_shuffle().prop_map(ViewKind::Permuted),
        1 => prop::collection::vec(any::<bool>(), r).prop_map(ViewKind::Flipped),
        2 => prop::collection::vec(any::<bool>(), r).prop_map(ViewKind::Strided),
        1 => broadcastable(shape.clone()).prop_map(ViewKind::Broadcast),
    ];
    (Just(shape), kinds).prop_flat_map(move |(shape, kind)| {
        let len = match &kind {
            ViewKind::Broadcast(from) => from.iter().product(),
            _ => n,
        };
        (
            Just(shape),
            Just(kind),
            prop::collection::vec(values.clone(), len),
        )
            .prop_map(|(shape, kind, src)| Input { shape, kind, src })
    })
}

/// Continuous values in `[-3, 3]`.
pub fn reals() -> impl Strategy<Value = f64> + Clone {
    -3.0f64..3.0
}

/// Small integers in `[-9, 9]` (as `f64`), so that ties and zeros are common.
pub fn small_ints() -> impl Strategy<Value = f64> + Clone {
    (-9i32..=9).prop_map(f64::from)
}

/// `x` rounded to the nearest value of a 16-bit float format (ties to even), given the format's
/// conversion `bits_of` and its decoding `value_of`. The `half` crate may convert an `f64` through `f32`,
/// rounding twice (2.0693358361610295 became 2.0703125 rather than the nearest f16, 2.068359375), so the
/// conversion's result is corrected by comparing it with its two neighbours.
pub fn nearest_half(x: f64, bits_of: fn(f64) -> u16, value_of: fn(u16) -> f64) -> f64 {
    let c = bits_of(x);
    let mut best = value_of(c);
    if !best.is_finite() || x.is_nan() {
        return best;
    }
    for n in [c.wrapping_sub(1), c.wrapping_add(1)] {
        let v = value_of(n);
        if !v.is_finite() {
            continue;
        }
        let (d, d_best) = ((v - x).abs(), (best - x).abs());
        if d < d_best || (d == d_best && n & 1 == 0) {
            best = v;
        }
    }
    best
}

/// `x` as it reads back after a round trip through `dtype`.
pub fn round_to(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 => x as f32 as f64,
        DType::F16 => nearest_half(
            x,
            |v| half::f16::from_f64(v).to_bits(),
            |b| half::f16::from_bits(b).to_f64(),
        ),
        DType::BF16 => nearest_half(
            x,
            |v| half::bf16::from_f64(v).to_bits(),
            |b| half::bf16::from_bits(b).to_f64(),
        ),
        DType::I32 => x as i32 as f64,
        DType::I64 => x as i64 as f64,
        DType::U8 => x as i64 as u8 as f64,
        DType::Bool => (x != 0.0) as u8 as f64,
        _ => x,
    }
}

/// Host data of `dtype` from `f64` values (complex dtypes get a zero imaginary part).
pub fn host(dtype: DType, values: &[f64]) -> HostData {
    fn conv<E: Element>(values: &[f64]) -> HostData {
        E::into_host(values.iter().map(|&v| E::from_scalar(v.into())).collect())
    }
    nabla_core::dispatch_dtype!(dtype, E => conv::<E>(values))
}

/// A contiguous tensor of `dtype` holding `values`.
pub fn tensor<B: Backend>(
    cx: &Suite<B>,
    values: &[f64],
    shape: &[usize],
    dtype: DType,
) -> Tensor<B> {
    Tensor::from_host(host(dtype, values), shape.to_vec(), cx.backend()).expect("upload")
}

impl Input {
    /// The logical values, row-major.
    pub fn values(&self) -> Vec<f64> {
        match &self.kind {
            ViewKind::Broadcast(from) => expand(&self.src, from, &self.shape),
            _ => self.src.clone(),
        }
    }

    /// The logical values as they read back from a tensor of `dtype`.
    pub fn values_as(&self, dtype: DType) -> Vec<f64> {
        self.values()
            .into_iter()
            .map(|x| round_to(dtype, x))
            .collect()
    }

    /// The same layout with every stored value mapped by `f`.
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Input {
        Input {
            src: self.src.iter().map(|&x| f(x)).collect(),
            ..self.clone()
        }
    }

    /// The tensor: a view in this input's layout over a buffer of `dtype`.
    pub fn tensor<B: Backend>(&self, cx: &Suite<B>, dtype: DType) -> Tensor<B> {
        let shape = &self.shape;
        let n: usize = shape.iter().product();
        let built = match &self.kind {
            ViewKind::Contiguous => Ok(tensor(cx, &self.src, shape, dtype)),
            ViewKind::Permuted(perm) => {
                // Stored axis perm[i] holds logical axis i.
                let mut stored = vec![0; shape.len()];
                for (i, &p) in perm.iter().enumerate() {
                    stored[p] = shape[i];
                }
                let mut data = vec![0.0; n];
                for (i, &v) in self.src.iter().enumerate() {
                    let idx = unravel(i, shape);
                    let mut sidx = vec![0; shape.len()];
                    for (d, &p) in perm.iter().enumerate() {
                        sidx[p] = idx[d];
                    }
                    data[ravel(&sidx, &stored)] = v;
                }
                let p: Vec<isize> = perm.iter().map(|&p| p as isize).collect();
                tensor(cx, &data, &stored, dtype).permute(&p)
            }
            ViewKind::Flipped(mask) => {
                let mut data = vec![0.0; n];
                for (i, &v) in self.src.iter().enumerate() {
                    let mut idx = unravel(i, shape);
                    for d in 0..shape.len() {
                        if mask[d] {
                            idx[d] = shape[d] - 1 - idx[d];
                        }
                    }
                    data[ravel(&idx, shape)] = v;
                }
                let axes: Vec<isize> = (0..shape.len())
                    .filter(|&d| mask[d])
                    .map(|d| d as isize)
                    .collect();
                tensor(cx, &data, shape, dtype).flip(&axes)
            }
            ViewKind::Strided(backwards) => {
                // Logical i sits at stored 2i + 1 (or 2(d - 1 - i) + 1 walking backwards); the gaps hold
                // a sentinel that must never show up.
                let stored: Vec<usize> = shape.iter().map(|&d| 2 * d + 1).collect();
                let total: usize = stored.iter().product();
                let mut data = vec![7.0; total];
                for (i, &v) in self.src.iter().enumerate() {
                    let idx = unravel(i, shape);
                    let sidx: Vec<usize> = idx
                        .iter()
                        .enumerate()
                        .map(|(d, &j)| {
                            let j = if backwards[d] { shape[d] - 1 - j } else { j };
                            2 * j + 1
                        })
                        .collect();
                    data[ravel(&sidx, &stored)] = v;
                }
                let mut t = tensor(cx, &data, &stored, dtype);
                for (d, &back) in backwards.iter().enumerate() {
                    t = if back {
                        t.slice(d as isize, Some(-2), None, -2)
                    } else {
                        t.slice(d as isize, Some(1), None, 2)
                    }
                    .expect("strided slice");
                }
                Ok(t)
            }
            ViewKind::Broadcast(from) => {
                tensor(cx, &self.src, from, dtype).broadcast_to(shape.clone())
            }
        };
        let t = built.expect("building the view");
        assert_eq!(t.shape(), &shape[..], "view shape for {:?}", self.kind);
        t
    }
}

/// Reads every element back as `f64` (real part for complex, 0/1 for bool).
pub fn read<B: Backend>(t: &Tensor<B>) -> Vec<f64> {
    t.to_host().expect("read back").to_f64_vec()
}

/// `true` when `got` matches `want` within `atol + rtol * |want|`; NaNs and infinities must match exactly.
pub fn close(got: f64, want: f64, rtol: f64, atol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    (got - want).abs() <= atol + rtol * want.abs()
}

/// Asserts element-wise closeness, naming the first mismatch.
pub fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(g, w, rtol, atol),
            "{what}: element {i} is {g}, expected {w}\n got: {got:?}\nwant: {want:?}"
        );
    }
}

/// The checked shape of a result.
pub fn assert_shape<B: Backend>(t: &Tensor<B>, want: &[usize], what: &str) {
    assert_eq!(t.shape(), want, "{what}: shape");
}

/// The layouts the properties rely on really are strided views holding the intended values.
pub fn view_kinds_are_strided_views_of_their_values<B: Backend>(
    cx: &Suite<B>,
) -> Result<(), String> {
    let kinds = [
        ViewKind::Permuted(vec![1, 0]),
        ViewKind::Flipped(vec![true, false]),
        ViewKind::Strided(vec![false, true]),
        ViewKind::Strided(vec![false, false]),
        ViewKind::Broadcast(vec![1, 3]),
    ];
    for kind in kinds {
        let n = if matches!(kind, ViewKind::Broadcast(_)) {
            3
        } else {
            6
        };
        let x = Input {
            shape: vec![2, 3],
            kind,
            src: (0..n).map(f64::from).collect(),
        };
        let t = x.tensor(cx, cx.float());
        if t.is_contiguous() {
            return Err(format!("{:?} gave a contiguous tensor", x.kind));
        }
        if read(&t) != x.values() {
            return Err(format!(
                "{:?} reads back {:?}, not {:?}",
                x.kind,
                read(&t),
                x.values()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The case that made `half`'s own conversion disagree with NumPy and the CPU backend.
    #[test]
    fn sixteen_bit_rounding_is_to_nearest() {
        assert_eq!(round_to(DType::F16, 2.0693358361610295), 2.068359375);
        assert_eq!(round_to(DType::F16, 1.0), 1.0);
        // A tie goes to the even neighbour: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
        assert_eq!(round_to(DType::F16, 1.0 + 2f64.powi(-11)), 1.0);
        assert_eq!(
            round_to(DType::F16, 1.0 + 3.0 * 2f64.powi(-11)),
            1.0 + 2.0 * 2f64.powi(-10)
        );
        assert_eq!(round_to(DType::BF16, 1.0 + 2f64.powi(-8)), 1.0);
        assert_eq!(round_to(DType::F16, 1e6), f64::INFINITY);
    }
}
