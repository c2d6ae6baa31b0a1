//! Direct checks of Backend methods: each calls the kernel on the backend itself (with contiguous,
//! permuted, flipped and stepped views as inputs) and compares its output buffer with a plain-Rust
//! reference, so that every backend is held to the contract written in `nabla_core::Backend`, including
//! the parts the `Tensor` API does not reach on its own (pooling indices, the convolution gradients with
//! every parameter, NaN and tie rules).

pub mod conv;
pub mod misc;
pub mod pool;
pub mod rounded;

use crate::Suite;
use crate::properties::support::{Input, ViewKind, close};
use nabla_core::{Backend, DType, Layout};
use nabla_tensor::Tensor;

/// Deterministic values: small integers in `[-span, span]` (exact in every dtype), from a seed.
pub(crate) fn small_values(n: usize, seed: u64, span: i64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % (2 * span as u64 + 1)) as i64 as f64 - span as f64
        })
        .collect()
}

/// The layouts every direct check tries for an input of rank `rank`: contiguous, permuted (reversed
/// axes), flipped on every axis, and stepped (every other element, walking the last axis backwards).
pub(crate) fn view_kinds(rank: usize) -> Vec<ViewKind> {
    vec![
        ViewKind::Contiguous,
        ViewKind::Permuted((0..rank).rev().collect()),
        ViewKind::Flipped(vec![true; rank]),
        ViewKind::Strided((0..rank).map(|d| d + 1 == rank).collect()),
    ]
}

/// A tensor of `dtype` holding `values` (row-major, of `shape`) seen through a `kind` view.
pub(crate) fn view<B: Backend>(
    cx: &Suite<B>,
    shape: &[usize],
    values: &[f64],
    kind: &ViewKind,
    dtype: DType,
) -> Tensor<B> {
    Input {
        shape: shape.to_vec(),
        kind: kind.clone(),
        src: values.to_vec(),
    }
    .tensor(cx, dtype)
}

/// Reads an output buffer of a kernel as a contiguous `shape`, after checking its dtype and length.
pub(crate) fn read_out<B: Backend>(
    cx: &Suite<B>,
    storage: &B::Storage,
    shape: &[usize],
    dtype: DType,
    what: &str,
) -> Result<Vec<f64>, String> {
    let b = cx.backend();
    let n: usize = shape.iter().product();
    if b.storage_dtype(storage) != dtype || b.storage_len(storage) != n {
        return Err(format!(
            "{what}: output buffer is {} x {}, expected {dtype} x {n} (shape {shape:?})",
            b.storage_dtype(storage),
            b.storage_len(storage)
        ));
    }
    let host = b
        .read(storage, &Layout::contiguous(shape.to_vec()))
        .map_err(|e| format!("{what}: reading the output: {e}"))?;
    Ok(host.to_f64_vec())
}

/// `Err` naming the first difference (NaN equals NaN), instead of a panic.
pub(crate) fn compare(
    got: &[f64],
    want: &[f64],
    (rtol, atol): (f64, f64),
    what: &str,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    match (0..got.len()).find(|&i| !close(got[i], want[i], rtol, atol)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} is {}, expected {} (rtol {rtol:e}, atol {atol:e})\n  got:  {got:?}\n  want: {want:?}",
            got[i], want[i]
        )),
    }
}

/// Formats a kernel error for a report.
pub(crate) fn kernel(what: &str) -> impl Fn(nabla_core::Error) -> String + '_ {
    move |e| format!("{what}: the kernel returned an error: {e}")
}
