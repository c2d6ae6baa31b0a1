//! NumPy/PyTorch-style printing.
//!
//! A tensor prints as `tensor([...])` with nested brackets aligned under each other, every element
//! formatted the same way (fixed point with [`PrintOptions::precision`] digits, or scientific notation
//! when the magnitudes call for it), rows wrapped at [`PrintOptions::line_width`], and large tensors
//! summarised with `...`. The dtype is appended unless it is a default one (`float32`, `int64`, `bool`,
//! `complex64`), as PyTorch does.
//!
//! ```
//! # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let x = Tensor::from_vec(vec![1.0f32, 2.5, -3.0, 4.0], [2, 2], &cpu)?;
//! assert_eq!(x.to_string(), "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]])");
//! let i = Tensor::from_vec(vec![1i32, 20, 300], [3], &cpu)?;
//! assert_eq!(i.to_string(), "tensor([  1,  20, 300], dtype=int32)");
//! # Ok::<(), nabla_core::Error>(())
//! ```
//!
//! Summarising reads back only the printed elements: the printed part of every long axis is two
//! strided blocks (`edge_items` at each end), which one extra view dimension expresses without a copy.

use crate::Tensor;
use nabla_core::{Backend, DType, Element, Error, HostData, Layout, Result};
use std::fmt;

/// The text that opens every printed tensor; continuation lines are indented by its length.
const PREFIX: &str = "tensor(";

/// Options that control how tensors print. [`Default`] gives PyTorch's defaults.
///
/// ```
/// # use nabla_tensor::{Tensor, PrintOptions}; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![0.5f64, 1.25], [2], &CpuBackend::new())?;
/// let opts = PrintOptions { precision: 2, ..Default::default() };
/// assert_eq!(x.format_with(&opts)?, "tensor([0.50, 1.25], dtype=float64)");
/// let sci = PrintOptions { sci_mode: Some(true), ..Default::default() };
/// assert_eq!(x.format_with(&sci)?, "tensor([5.0000e-01, 1.2500e+00], dtype=float64)");
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintOptions {
    /// Digits after the decimal point for floating-point values (default 4).
    pub precision: usize,
    /// Tensors with more elements than this are summarised with `...` (default 1000).
    pub threshold: usize,
    /// Items printed at each end of a summarised dimension (default 3).
    pub edge_items: usize,
    /// Characters per line before rows wrap (default 80).
    pub line_width: usize,
    /// `Some(true)` forces scientific notation, `Some(false)` forbids it, `None` (default) picks it when
    /// the non-zero magnitudes span more than three decades or leave `[1e-4, 1e8)`, as NumPy does.
    pub sci_mode: Option<bool>,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            precision: 4,
            threshold: 1000,
            edge_items: 3,
            line_width: 80,
            sci_mode: None,
        }
    }
}

/// How one axis of the tensor is printed.
#[derive(Clone, Copy, Debug)]
struct AxisPlan {
    /// Entries printed along the axis.
    printed: usize,
    /// Position among the printed entries where `...` goes, if the axis is summarised.
    gap: Option<usize>,
}

/// The printed elements, converted to a few host types.
enum Values {
    Float(Vec<f64>),
    Complex(Vec<(f64, f64)>),
    Int(Vec<i128>),
    Bool(Vec<bool>),
}

impl Values {
    fn from_host(host: HostData) -> Values {
        match host {
            HostData::F16(v) => Values::Float(v.iter().map(|x| x.to_f64()).collect()),
            HostData::BF16(v) => Values::Float(v.iter().map(|x| x.to_f64()).collect()),
            HostData::F32(v) => Values::Float(v.iter().map(|&x| x as f64).collect()),
            HostData::F64(v) => Values::Float(v),
            HostData::C64(v) => {
                Values::Complex(v.iter().map(|c| (c.re as f64, c.im as f64)).collect())
            }
            HostData::C128(v) => Values::Complex(v.iter().map(|c| (c.re, c.im)).collect()),
            HostData::Bool(v) => Values::Bool(v),
            ints => Values::Int(nabla_core::with_host_data!(ints, v => v.iter().map(|x| {
                    x.to_scalar().as_integer().unwrap_or_default()
                }).collect())),
        }
    }

    /// Each element as text, unpadded.
    fn cells(&self, opts: &PrintOptions) -> Vec<String> {
        match self {
            Values::Float(v) => {
                let sci = opts
                    .sci_mode
                    .unwrap_or_else(|| wants_scientific(v.iter().copied()));
                v.iter()
                    .map(|&x| format_float(x, opts.precision, sci))
                    .collect()
            }
            Values::Complex(v) => {
                let sci = opts
                    .sci_mode
                    .unwrap_or_else(|| wants_scientific(v.iter().flat_map(|&(re, im)| [re, im])));
                v.iter()
                    .map(|&(re, im)| {
                        let sign = if im.is_sign_negative() && !im.is_nan() {
                            '-'
                        } else {
                            '+'
                        };
                        format!(
                            "{}{sign}{}j",
                            format_float(re, opts.precision, sci),
                            format_float(im.abs(), opts.precision, sci)
                        )
                    })
                    .collect()
            }
            Values::Int(v) => v.iter().map(|x| x.to_string()).collect(),
            Values::Bool(v) => v.iter().map(|x| x.to_string()).collect(),
        }
    }
}

/// NumPy's rule: scientific notation when the non-zero finite magnitudes reach `1e8`, go below `1e-4`, or
/// span a ratio above 1000.
fn wants_scientific(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        let a = v.abs();
        if a.is_finite() && a != 0.0 {
            lo = lo.min(a);
            hi = hi.max(a);
        }
    }
    hi > 0.0 && (hi >= 1e8 || lo < 1e-4 || hi / lo > 1000.0)
}

/// One float as text: `nan`, `inf`, `-inf`, fixed point, or scientific with a signed two-digit exponent.
fn format_float(x: f64, precision: usize, sci: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if !sci {
        return format!("{x:.precision$}");
    }
    let s = format!("{x:.precision$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let e: i32 = exp.parse().unwrap_or(0);
            let sign = if e < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", e.unsigned_abs())
        }
        None => s,
    }
}

/// Lays the padded cells out in nested, aligned brackets.
struct Grid<'a> {
    cells: &'a [String],
    plan: &'a [AxisPlan],
    /// Row-major strides of the printed grid.
    strides: Vec<usize>,
    width: usize,
    line_width: usize,
}

impl Grid<'_> {
    /// Entries of one axis: printed items with `ellipsis` inserted at the gap.
    fn entries(
        &self,
        depth: usize,
        ellipsis: &str,
        mut item: impl FnMut(usize) -> String,
    ) -> Vec<String> {
        let ax = self.plan[depth];
        let mut out = Vec::with_capacity(ax.printed + 1);
        for i in 0..=ax.printed {
            if ax.gap == Some(i) {
                out.push(if out.is_empty() { "..." } else { ellipsis }.to_string());
            }
            if i < ax.printed {
                out.push(item(i));
            }
        }
        out
    }

    fn render(&self, depth: usize, base: usize, indent: usize) -> String {
        let rank = self.plan.len();
        if rank == 0 {
            return self.cells[0].clone();
        }
        if depth + 1 == rank {
            // The leading space keeps `...` clear of the column before it, as PyTorch prints it.
            let items = self.entries(depth, " ...", |i| self.cells[base + i].clone());
            let per_line = (self.line_width.saturating_sub(indent) / (self.width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
            let sep = format!(",\n{}", " ".repeat(indent + 1));
            return format!("[{}]", lines.join(&sep));
        }
        let stride = self.strides[depth];
        let slices = self.entries(depth, "...", |i| {
            self.render(depth + 1, base + i * stride, indent + 1)
        });
        let sep = format!(
            ",{}{}",
            "\n".repeat(rank - depth - 1),
            " ".repeat(indent + 1)
        );
        format!("[{}]", slices.join(&sep))
    }
}

/// PyTorch's rule for appending `, suffix` or wrapping it onto a new line.
fn add_suffixes(mut text: String, suffixes: &[String], line_width: usize) -> String {
    let mut last = text.len() - text.rfind('\n').map_or(0, |i| i + 1) + 2;
    for suffix in suffixes {
        if last + suffix.len() + 2 > line_width {
            text.push_str(",\n");
            text.push_str(&" ".repeat(PREFIX.len()));
            last = PREFIX.len() + suffix.len();
        } else {
            text.push_str(", ");
            last += suffix.len() + 2;
        }
        text.push_str(suffix);
    }
    text.push(')');
    text
}

/// `true` for the dtypes PyTorch leaves unnamed when printing.
fn is_default_dtype(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::C64 | DType::I64 | DType::Bool)
}

impl<B: Backend> Tensor<B> {
    /// The summarised view (printed elements only) and how each axis prints.
    fn printed_view(&self, opts: &PrintOptions) -> Result<(Tensor<B>, Vec<AxisPlan>)> {
        let summarize = self.numel() > opts.threshold;
        let e = opts.edge_items;
        let l = self.layout();
        let (mut shape, mut strides, mut plan) = (Vec::new(), Vec::new(), Vec::new());
        for (&d, &s) in l.shape().iter().zip(l.strides()) {
            if summarize && d > 2 * e {
                // Two blocks of `e` entries: the first at 0, the second at `d - e`.
                shape.extend([2, e]);
                strides.extend([(d - e) as isize * s, s]);
                plan.push(AxisPlan {
                    printed: 2 * e,
                    gap: Some(e),
                });
            } else {
                shape.push(d);
                strides.push(s);
                plan.push(AxisPlan {
                    printed: d,
                    gap: None,
                });
            }
        }
        let view = Layout::from_parts(shape, strides, l.offset())?;
        Ok((self.with_layout(view), plan))
    }

    /// Formats the tensor with explicit [`PrintOptions`]; fails only if reading the data back fails.
    ///
    /// ```
    /// # use nabla_tensor::{Tensor, PrintOptions}; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::arange(0, 10, 1, DType::I64, &CpuBackend::new())?;
    /// let opts = PrintOptions { threshold: 5, edge_items: 2, ..Default::default() };
    /// assert_eq!(x.format_with(&opts)?, "tensor([0, 1,  ..., 8, 9])");
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn format_with(&self, opts: &PrintOptions) -> Result<String> {
        let mut suffixes = Vec::new();
        if self.numel() == 0 {
            if self.rank() != 1 {
                let dims: Vec<String> = self.shape().iter().map(|d| d.to_string()).collect();
                suffixes.push(format!("size=({})", dims.join(", ")));
            }
            if self.dtype() != DType::F32 {
                suffixes.push(format!("dtype={}", self.dtype()));
            }
            return Ok(add_suffixes(
                format!("{PREFIX}[]"),
                &suffixes,
                opts.line_width,
            ));
        }
        if !is_default_dtype(self.dtype()) {
            suffixes.push(format!("dtype={}", self.dtype()));
        }
        let (view, plan) = self.printed_view(opts)?;
        let count: usize = view.numel();
        let values = if count == 0 {
            Values::Int(Vec::new())
        } else {
            let host = view.to_host()?;
            if host.len() != count {
                return Err(Error::Backend {
                    backend: self.backend().name().to_string(),
                    message: format!(
                        "read returned {} elements for a view of {count}",
                        host.len()
                    ),
                });
            }
            Values::from_host(host)
        };
        let raw = values.cells(opts);
        let width = raw.iter().map(|c| c.len()).max().unwrap_or(1);
        let cells: Vec<String> = raw.iter().map(|c| format!("{c:>width$}")).collect();
        let mut strides = vec![1usize; plan.len()];
        for i in (0..plan.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * plan[i + 1].printed;
        }
        let grid = Grid {
            cells: &cells,
            plan: &plan,
            strides,
            width,
            line_width: opts.line_width,
        };
        let body = grid.render(0, 0, PREFIX.len());
        Ok(add_suffixes(
            format!("{PREFIX}{body}"),
            &suffixes,
            opts.line_width,
        ))
    }
}

/// Prints like PyTorch with the default [`PrintOptions`]; a precision in the format string (`{:.2}`)
/// overrides the default one. Never panics: a failed read-back prints `tensor(<error: ...>)`.
impl<B: Backend> fmt::Display for Tensor<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut opts = PrintOptions::default();
        if let Some(p) = f.precision() {
            opts.precision = p;
        }
        match self.format_with(&opts) {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "{PREFIX}<error: {e}>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_core::{Element, Shape};
    use nabla_cpu::CpuBackend;
    use num_complex::{Complex32, Complex64};

    fn t<T: Element>(data: Vec<T>, shape: impl Into<Shape>) -> Tensor<CpuBackend> {
        Tensor::from_vec(data, shape, &CpuBackend::new()).expect("from_vec")
    }

    fn arange_i64(n: i64, shape: &[usize]) -> Tensor<CpuBackend> {
        t((0..n).collect::<Vec<i64>>(), shape.to_vec())
    }

    #[test]
    fn scalars() {
        assert_eq!(t(vec![3.5f32], ()).to_string(), "tensor(3.5000)");
        assert_eq!(
            t(vec![-2.0f64], ()).to_string(),
            "tensor(-2.0000, dtype=float64)"
        );
        assert_eq!(t(vec![7i64], ()).to_string(), "tensor(7)");
        assert_eq!(t(vec![true], ()).to_string(), "tensor(true)");
        assert_eq!(
            t(vec![Complex64::new(1.0, -2.0)], ()).to_string(),
            "tensor(1.0000-2.0000j, dtype=complex128)"
        );
    }

    #[test]
    fn vectors_and_matrices_align_their_columns() {
        assert_eq!(
            t(vec![1.0f32, 2.5, -3.0], [3]).to_string(),
            "tensor([ 1.0000,  2.5000, -3.0000])"
        );
        assert_eq!(
            t(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]).to_string(),
            "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]])"
        );
        assert_eq!(
            arange_i64(12, &[2, 2, 3]).to_string(),
            "tensor([[[ 0,  1,  2],\n         [ 3,  4,  5]],\n\n        [[ 6,  7,  8],\n         [ 9, 10, 11]]])"
        );
    }

    #[test]
    fn integers_bools_and_complex() {
        assert_eq!(
            t(vec![1i32, 20, 300], [3]).to_string(),
            "tensor([  1,  20, 300], dtype=int32)"
        );
        assert_eq!(
            t(vec![0u8, 255], [2]).to_string(),
            "tensor([  0, 255], dtype=uint8)"
        );
        assert_eq!(
            t(vec![true, false, true], [3]).to_string(),
            "tensor([ true, false,  true])"
        );
        assert_eq!(
            t(
                vec![Complex32::new(1.0, 2.0), Complex32::new(-3.0, -4.5)],
                [2]
            )
            .to_string(),
            "tensor([ 1.0000+2.0000j, -3.0000-4.5000j])"
        );
    }

    #[test]
    fn empty_tensors_show_their_shape() {
        assert_eq!(
            t(Vec::<f32>::new(), [0, 3]).to_string(),
            "tensor([], size=(0, 3))"
        );
        assert_eq!(t(Vec::<f32>::new(), [0]).to_string(), "tensor([])");
        assert_eq!(
            t(Vec::<i64>::new(), [0]).to_string(),
            "tensor([], dtype=int64)"
        );
        assert_eq!(
            t(Vec::<f64>::new(), [2, 0]).to_string(),
            "tensor([], size=(2, 0), dtype=float64)"
        );
    }

    #[test]
    fn long_rows_wrap_and_suffixes_move_to_a_new_line() {
        let x = t((0..20).map(|v| v as f32).collect(), [20]);
        assert_eq!(
            x.to_string(),
            "tensor([ 0.0000,  1.0000,  2.0000,  3.0000,  4.0000,  5.0000,  6.0000,  7.0000,\n         8.0000,  9.0000, 10.0000, 11.0000, 12.0000, 13.0000, 14.0000, 15.0000,\n        16.0000, 17.0000, 18.0000, 19.0000])"
        );
        let x = t((0..16).map(|v| v as f64).collect(), [16]);
        assert_eq!(
            x.to_string(),
            "tensor([ 0.0000,  1.0000,  2.0000,  3.0000,  4.0000,  5.0000,  6.0000,  7.0000,\n         8.0000,  9.0000, 10.0000, 11.0000, 12.0000, 13.0000, 14.0000, 15.0000],\n       dtype=float64)"
        );
    }

    #[test]
    fn large_tensors_are_summarised() {
        let x = t((0..2000).map(|v| v as f32).collect(), [2000]);
        assert_eq!(
            x.to_string(),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
        );
        assert_eq!(
            arange_i64(2000, &[2000]).to_string(),
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
        );
        assert_eq!(
            arange_i64(10000, &[100, 100]).to_string(),
            "tensor([[   0,    1,    2,  ...,   97,   98,   99],
        [ 100,  101,  102,  ...,  197,  198,  199],
        [ 200,  201,  202,  ...,  297,  298,  299],
        ...,
        [9700, 9701, 9702,  ..., 9797, 9798, 9799],
        [9800, 9801, 9802,  ..., 9897, 9898, 9899],
        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])"
        );
        let opts = PrintOptions {
            threshold: 10,
            edge_items: 1,
            ..Default::default()
        };
        assert_eq!(
            arange_i64(64, &[4, 4, 4]).format_with(&opts).unwrap(),
            "tensor([[[ 0,  ...,  3],
         ...,
         [12,  ..., 15]],

        ...,

        [[48,  ..., 51],
         ...,
         [60,  ..., 63]]])"
        );
        let none = PrintOptions {
            threshold: 0,
            edge_items: 0,
            ..Default::default()
        };
        assert_eq!(
            arange_i64(6, &[2, 3]).format_with(&none).unwrap(),
            "tensor([...])"
        );
    }

    #[test]
    fn summarising_reads_only_the_printed_elements() {
        let x = arange_i64(10000, &[100, 100]);
        let (view, plan) = x.printed_view(&PrintOptions::default()).unwrap();
        assert_eq!(view.numel(), 36);
        assert_eq!(view.shape(), &[2, 3, 2, 3]);
        assert!(view.shares_storage_with(&x));
        assert_eq!(
            plan.iter().map(|p| p.printed).collect::<Vec<_>>(),
            vec![6, 6]
        );
        // Offsets of the printed elements, straight from the view's layout.
        let offsets: Vec<usize> = view.layout().offsets().collect();
        assert_eq!(&offsets[..7], &[0, 1, 2, 97, 98, 99, 100]);
        assert_eq!(offsets[35], 9999);
    }

    #[test]
    fn non_contiguous_views_print_in_logical_order() {
        let x = t(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]);
        assert_eq!(
            x.t().unwrap().to_string(),
            "tensor([[1.0000, 4.0000],\n        [2.0000, 5.0000],\n        [3.0000, 6.0000]])"
        );
        let big = arange_i64(2000, &[2000]).flip(&[0]).unwrap();
        assert_eq!(
            big.to_string(),
            "tensor([1999, 1998, 1997,  ...,    2,    1,    0])"
        );
    }

    #[test]
    fn special_values_and_scientific_notation() {
        let x = t(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5], [4]);
        assert_eq!(x.to_string(), "tensor([   nan,    inf,   -inf, 1.5000])");
        assert_eq!(
            t(vec![1e-5f64, 1.0], [2]).to_string(),
            "tensor([1.0000e-05, 1.0000e+00], dtype=float64)"
        );
        assert_eq!(
            t(vec![1e8f32, 1.0], [2]).to_string(),
            "tensor([1.0000e+08, 1.0000e+00])"
        );
        assert_eq!(
            t(vec![123456.0f32, 1.0], [2]).to_string(),
            "tensor([1.2346e+05, 1.0000e+00])"
        );
        assert_eq!(
            t(vec![-1e-5f32, 2.0], [2]).to_string(),
            "tensor([-1.0000e-05,  2.0000e+00])"
        );
        // Three decades or less, all within [1e-4, 1e8): fixed point.
        assert_eq!(
            t(vec![0.001f32, 0.5], [2]).to_string(),
            "tensor([0.0010, 0.5000])"
        );
        assert_eq!(
            t(vec![0.0f32, 0.0], [2]).to_string(),
            "tensor([0.0000, 0.0000])"
        );
        let fixed = PrintOptions {
            sci_mode: Some(false),
            ..Default::default()
        };
        assert_eq!(
            t(vec![1e-5f64, 1.0], [2]).format_with(&fixed).unwrap(),
            "tensor([0.0000, 1.0000], dtype=float64)"
        );
    }

    #[test]
    fn half_precision_and_format_precision() {
        let h = vec![half::f16::from_f32(1.5), half::f16::from_f32(-2.0)];
        assert_eq!(
            t(h, [2]).to_string(),
            "tensor([ 1.5000, -2.0000], dtype=float16)"
        );
        let b = vec![half::bf16::from_f32(0.25)];
        assert_eq!(t(b, [1]).to_string(), "tensor([0.2500], dtype=bfloat16)");
        assert_eq!(
            format!("{:.2}", t(vec![1.0f32, 2.5], [2])),
            "tensor([1.00, 2.50])"
        );
    }
}
