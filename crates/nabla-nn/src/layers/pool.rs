//! Pooling: max and average pooling in one and two dimensions, and adaptive average pooling.
//!
//! Max pooling runs one backend kernel that also returns the positions of the maxima, whose gather is
//! differentiable; average pooling is built from differentiable tensor ops (padding, strided slices,
//! sums and matrix products). Gradients follow from the eager autodiff.

use super::conv::SpatialSize;
use crate::module::{Forward, LayerAlgebra, Module};
use crate::param::Param;
use nabla_core::{Backend, Error, Pool2dParams, Result};
use nabla_tensor::Tensor;

/// The window geometry of a pooling layer, as `(height, width)` pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    ceil_mode: bool,
}

impl Window {
    /// Checks the arguments as PyTorch does; `max_pad` is the largest padding allowed for a kernel
    /// extent (the dilated kernel for max pooling, the kernel for average pooling).
    fn new<K: SpatialSize>(
        op: &'static str,
        kernel: K,
        stride: Option<K>,
        padding: K,
        dilation: K,
        ceil_mode: bool,
    ) -> Result<Window> {
        let w = Window {
            kernel: kernel.hw(1),
            stride: stride.unwrap_or(kernel).hw(1),
            padding: padding.hw(0),
            dilation: dilation.hw(1),
            ceil_mode,
        };
        let positive = [
            w.kernel.0,
            w.kernel.1,
            w.stride.0,
            w.stride.1,
            w.dilation.0,
            w.dilation.1,
        ];
        if positive.contains(&0) {
            return Err(Error::invalid(
                op,
                format!(
                    "kernel_size, stride and dilation must be positive, got kernel_size {kernel:?}, \
                     stride {stride:?}, dilation {dilation:?}"
                ),
            ));
        }
        let extent = |k: usize, d: usize| (k - 1) * d + 1;
        if 2 * w.padding.0 > extent(w.kernel.0, w.dilation.0)
            || 2 * w.padding.1 > extent(w.kernel.1, w.dilation.1)
        {
            return Err(Error::invalid(
                op,
                format!(
                    "padding {padding:?} must be at most half of the (dilated) kernel {kernel:?}"
                ),
            ));
        }
        Ok(w)
    }

    /// `f(n, o, axis)` for the height axis (input size `n.0`, output size `o.0`) and the width axis
    /// (`n.1`, `o.1`).
    fn per_axis<T>(
        &self,
        n: (usize, usize),
        o: (usize, usize),
        f: impl Fn(usize, usize, Axis) -> T,
    ) -> (T, T) {
        let axis = |pick: fn((usize, usize)) -> usize| Axis {
            k: pick(self.kernel),
            s: pick(self.stride),
            p: pick(self.padding),
            d: pick(self.dilation),
        };
        (f(n.0, o.0, axis(|v| v.0)), f(n.1, o.1, axis(|v| v.1)))
    }

    /// Output length of one axis (PyTorch's `pooling_output_shape`), or `None` when not positive.
    fn out_len(n: usize, Axis { k, s, p, d }: Axis, ceil: bool) -> Option<usize> {
        let span = (n + 2 * p).checked_sub(d * (k - 1) + 1)?;
        let mut out = if ceil { span.div_ceil(s) } else { span / s } + 1;
        // The last window must start inside the input or its left padding.
        if ceil && (out - 1) * s >= n + p {
            out -= 1;
        }
        Some(out)
    }

    /// `(OH, OW)` for an input of spatial size `(h, w)`.
    fn output_hw(&self, op: &'static str, x: &Tensor<impl Backend>) -> Result<(usize, usize)> {
        let hw = (x.shape()[2], x.shape()[3]);
        let (oh, ow) = self.per_axis(hw, (0, 0), |n, _, a| Self::out_len(n, a, self.ceil_mode));
        match (oh, ow) {
            (Some(oh), Some(ow)) if oh > 0 && ow > 0 => Ok((oh, ow)),
            _ => Err(Error::invalid(
                op,
                format!(
                    "input of shape {:?} is too small for the pooling window {self:?}",
                    x.shape()
                ),
            )),
        }
    }

    /// The `KH * KW` strided views `[N, C, OH, OW]` of `x` padded with `fill`, one per kernel tap
    /// (in row-major tap order), and the output size.
    fn taps<B: Backend>(&self, op: &'static str, x: &Tensor<B>, fill: f64) -> Result<Taps<B>> {
        let (oh, ow) = self.output_hw(op, x)?;
        // With ceil_mode the last window may run past the padded input: pad further on the right.
        let hw = (x.shape()[2], x.shape()[3]);
        let (ph, pw) = self.per_axis(hw, (oh, ow), |n, o, Axis { k, s, p, d }| {
            let need = (o - 1) * s + (k - 1) * d + 1;
            (p, p + need.saturating_sub(n + 2 * p))
        });
        let xp = x.pad(&[(0, 0), (0, 0), ph, pw], fill)?;
        let mut taps = Vec::with_capacity(self.kernel.0 * self.kernel.1);
        for i in 0..self.kernel.0 {
            let start = (i * self.dilation.0) as isize;
            let rows = xp.slice(
                2,
                Some(start),
                Some(start + ((oh - 1) * self.stride.0 + 1) as isize),
                self.stride.0 as isize,
            )?;
            for j in 0..self.kernel.1 {
                let start = (j * self.dilation.1) as isize;
                let end = start + ((ow - 1) * self.stride.1 + 1) as isize;
                taps.push(rows.slice(3, Some(start), Some(end), self.stride.1 as isize)?);
            }
        }
        Ok((taps, (oh, ow)))
    }

    /// The divisor of every output position of average pooling, `[OH, OW]`, as PyTorch computes it.
    fn avg_divisor<B: Backend>(
        &self,
        x: &Tensor<B>,
        (oh, ow): (usize, usize),
        count_include_pad: bool,
    ) -> Result<Tensor<B>> {
        let hw = (x.shape()[2], x.shape()[3]);
        let (dh, dw) = self.per_axis(hw, (oh, ow), |n, o, Axis { k, s, p, .. }| {
            (0..o)
                .map(|i| {
                    let start = (i * s) as isize - p as isize;
                    let end = (start + k as isize).min((n + p) as isize);
                    let with_pad = end - start;
                    let inside = end.min(n as isize) - start.max(0);
                    (if count_include_pad { with_pad } else { inside }) as f64
                })
                .collect::<Vec<f64>>()
        });
        let table: Vec<f64> = dh
            .iter()
            .flat_map(|a| dw.iter().map(move |b| a * b))
            .collect();
        Tensor::from_f64s(table, [oh, ow], x.dtype(), x.backend())
    }
}

/// One axis of a [`Window`]: kernel, stride, padding and dilation.
#[derive(Clone, Copy)]
struct Axis {
    k: usize,
    s: usize,
    p: usize,
    d: usize,
}

/// The strided views of every kernel tap and the output size `(OH, OW)`.
type Taps<B> = (Vec<Tensor<B>>, (usize, usize));

/// Runs `f` on `x` viewed as `[N, C, H, W]`: a `spatial`-D layer (1 or 2) takes `[N, C, *]` or the
/// unbatched `[C, *]`; a 1-D input gets a height-1 axis. The result is shaped back likewise.
fn as_nchw<B: Backend>(
    op: &'static str,
    x: &Tensor<B>,
    spatial: usize,
    f: impl FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
) -> Result<Tensor<B>> {
    let unbatched = x.rank() == spatial + 1;
    if x.rank() != spatial + 2 && !unbatched {
        return Err(Error::invalid(
            op,
            format!(
                "expected a {}-D (batched) or {}-D (unbatched) input, got shape {:?}",
                spatial + 2,
                spatial + 1,
                x.shape()
            ),
        ));
    }
    let mut x4 = if unbatched {
        x.unsqueeze(0)?
    } else {
        x.clone()
    };
    if spatial == 1 {
        x4 = x4.unsqueeze(2)?;
    }
    let mut y = f(&x4)?;
    if spatial == 1 {
        y = y.squeeze(2)?;
    }
    if unbatched { y.squeeze(0) } else { Ok(y) }
}

/// Maximum over each window; padding counts as `-inf` and a NaN in a window gives NaN (as in PyTorch).
/// One backend kernel ([`Tensor::max_pool2d`]); the gradient of a window goes to its first maximum.
fn max_pool<B: Backend>(op: &'static str, w: &Window, x: &Tensor<B>) -> Result<Tensor<B>> {
    w.output_hw(op, x)?;
    let params = Pool2dParams {
        kernel: w.kernel,
        stride: w.stride,
        padding: w.padding,
        dilation: w.dilation,
        ceil_mode: w.ceil_mode,
    };
    Ok(x.max_pool2d(&params)?.0)
}

/// Mean over each window with PyTorch's divisor rules.
fn avg_pool<B: Backend>(
    op: &'static str,
    w: &Window,
    x: &Tensor<B>,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Tensor<B>> {
    let (taps, out_hw) = w.taps(op, x, 0.0)?;
    let mut sum = taps[0].clone();
    for t in &taps[1..] {
        sum = sum.add(t)?;
    }
    match divisor_override {
        Some(d) => sum.div(d as f64),
        None => sum.div(w.avg_divisor(x, out_hw, count_include_pad)?),
    }
}

/// Declares a pooling layer type `$name` over `$spatial` axes with size type `$k`.
macro_rules! pooling_layer {
    (
        $(#[$doc:meta])* $name:ident, $op:literal, $spatial:literal,
        { $($(#[$fdoc:meta])* $field:ident : $fty:ty),* },
        |$m:ident, $x:ident| $body:expr $(, $algebra:expr)?
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            window: Window,
            $($(#[$fdoc])* pub $field: $fty),*
        }

        impl<B: Backend> Module<B> for $name {
            fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}
            fn set_training(&mut self, _training: bool) {}
        }

        impl<B: Backend> Forward<B> for $name {
            fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
                as_nchw($op, x, $spatial, |$x| {
                    let $m = self;
                    $body
                })
            }

            $(fn algebra(&self) -> LayerAlgebra {
                $algebra
            })?
        }
    };
}

pooling_layer!(
    /// 1-D max pooling (PyTorch's `nn.MaxPool1d`) of `[N, C, L]` or `[C, L]`. `stride` defaults to
    /// `kernel_size`; padding is `-inf`. The gradient of a window goes to its first maximum, as in
    /// PyTorch.
    ///
    /// ```
    /// use nabla_nn::{Forward, MaxPool1d};
    /// use nabla_cpu::CpuBackend;
    /// use nabla_tensor::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f64, 3.0, 2.0, 5.0, 4.0], [1, 1, 5], &CpuBackend::new())?;
    /// let pool = MaxPool1d::new(2, None, 0, 1, true)?;
    /// assert_eq!(pool.forward(&x)?.to_vec::<f64>()?, vec![3.0, 5.0, 4.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    MaxPool1d, "MaxPool1d", 1, {}, |m, x| max_pool("MaxPool1d", &m.window, x),
    LayerAlgebra::MaxOverWindows
);
pooling_layer!(
    /// 2-D max pooling (PyTorch's `nn.MaxPool2d`) of `[N, C, H, W]` or `[C, H, W]`. `stride` defaults
    /// to `kernel_size`; padding is `-inf`. The gradient of a window goes to its first maximum in
    /// row-major order, as in PyTorch.
    ///
    /// ```
    /// use nabla_nn::{Forward, MaxPool2d};
    /// use nabla_core::DType;
    /// use nabla_cpu::CpuBackend;
    /// use nabla_tensor::Tensor;
    /// let pool = MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?;
    /// let y = pool.forward(&Tensor::ones([1, 3, 8, 8], DType::F32, &CpuBackend::new())?)?;
    /// assert_eq!(y.shape(), &[1, 3, 4, 4]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    MaxPool2d, "MaxPool2d", 2, {}, |m, x| max_pool("MaxPool2d", &m.window, x),
    LayerAlgebra::MaxOverWindows
);
pooling_layer!(
    /// 1-D average pooling (PyTorch's `nn.AvgPool1d`) of `[N, C, L]` or `[C, L]`. `stride` defaults
    /// to `kernel_size`; padding is zeros, counted in the divisor when `count_include_pad`.
    ///
    /// ```
    /// use nabla_nn::{AvgPool1d, Forward};
    /// use nabla_cpu::CpuBackend;
    /// use nabla_tensor::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f64, 3.0, 2.0, 6.0], [1, 1, 4], &CpuBackend::new())?;
    /// let pool = AvgPool1d::new(2, None, 0, false, true)?;
    /// assert_eq!(pool.forward(&x)?.to_vec::<f64>()?, vec![2.0, 4.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    AvgPool1d, "AvgPool1d", 1,
    {
        /// Whether zero padding counts in the divisor.
        count_include_pad: bool
    },
    |m, x| avg_pool("AvgPool1d", &m.window, x, m.count_include_pad, None)
);
pooling_layer!(
    /// 2-D average pooling (PyTorch's `nn.AvgPool2d`) of `[N, C, H, W]` or `[C, H, W]`. `stride`
    /// defaults to `kernel_size`; padding is zeros, counted in the divisor when `count_include_pad`;
    /// `divisor_override` replaces the divisor.
    ///
    /// ```
    /// use nabla_nn::{AvgPool2d, Forward};
    /// use nabla_core::DType;
    /// use nabla_cpu::CpuBackend;
    /// use nabla_tensor::Tensor;
    /// let pool = AvgPool2d::new((2, 2), None, (0, 0), false, true, None)?;
    /// let y = pool.forward(&Tensor::ones([2, 3, 4, 4], DType::F64, &CpuBackend::new())?)?;
    /// assert_eq!(y.to_vec::<f64>()?, vec![1.0; 2 * 3 * 2 * 2]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    AvgPool2d, "AvgPool2d", 2,
    {
        /// Whether zero padding counts in the divisor.
        count_include_pad: bool,
        /// A fixed divisor used instead of the window size.
        divisor_override: Option<usize>
    },
    |m, x| avg_pool("AvgPool2d", &m.window, x, m.count_include_pad, m.divisor_override)
);

/// Implements `new` for the max pooling layer `$name` with size type `$k`.
macro_rules! max_pool_new {
    ($name:ident, $k:ty) => {
        impl $name {
            /// Max pooling with PyTorch's arguments (`stride: None` means `kernel_size`).
            pub fn new(
                kernel_size: $k,
                stride: Option<$k>,
                padding: $k,
                dilation: $k,
                ceil_mode: bool,
            ) -> Result<Self> {
                let op = stringify!($name);
                let window = Window::new(op, kernel_size, stride, padding, dilation, ceil_mode)?;
                Ok($name { window })
            }
        }
    };
}

max_pool_new!(MaxPool1d, usize);
max_pool_new!(MaxPool2d, (usize, usize));

/// The window of an average pooling layer: no dilation, and padding at most half the kernel.
fn avg_window<K: SpatialSize>(
    op: &'static str,
    kernel: K,
    stride: Option<K>,
    padding: K,
    ceil_mode: bool,
) -> Result<Window> {
    // Without dilation the (dilated) kernel extent is the kernel: padding <= kernel / 2.
    Window::new(op, kernel, stride, padding, K::splat(1), ceil_mode)
}

impl AvgPool1d {
    /// Average pooling with PyTorch's arguments (`stride: None` means `kernel_size`; PyTorch's
    /// default `count_include_pad` is `true`).
    pub fn new(
        kernel_size: usize,
        stride: Option<usize>,
        padding: usize,
        ceil_mode: bool,
        count_include_pad: bool,
    ) -> Result<Self> {
        let window = avg_window("AvgPool1d", kernel_size, stride, padding, ceil_mode)?;
        Ok(AvgPool1d {
            window,
            count_include_pad,
        })
    }
}

impl AvgPool2d {
    /// Average pooling with PyTorch's arguments (`stride: None` means `kernel_size`; PyTorch's
    /// defaults are `count_include_pad = true`, `divisor_override = None`).
    pub fn new(
        kernel_size: (usize, usize),
        stride: Option<(usize, usize)>,
        padding: (usize, usize),
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Self> {
        if divisor_override == Some(0) {
            return Err(Error::invalid(
                "AvgPool2d",
                "divisor_override must be positive",
            ));
        }
        let window = avg_window("AvgPool2d", kernel_size, stride, padding, ceil_mode)?;
        Ok(AvgPool2d {
            window,
            count_include_pad,
            divisor_override,
        })
    }
}

/// 2-D adaptive average pooling (PyTorch's `nn.AdaptiveAvgPool2d`) of `[N, C, H, W]` or `[C, H, W]` to
/// `output_size`: output row `i` averages input rows `floor(i * H / OH) .. ceil((i + 1) * H / OH)`
/// (likewise for columns), computed as `A_h · x · A_wᵀ` with averaging matrices.
///
/// ```
/// use nabla_nn::{AdaptiveAvgPool2d, Forward};
/// use nabla_core::DType;
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let pool = AdaptiveAvgPool2d::new((1, 1))?;
/// let y = pool.forward(&Tensor::ones([2, 5, 7, 3], DType::F32, &CpuBackend::new())?)?;
/// assert_eq!(y.shape(), &[2, 5, 1, 1]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveAvgPool2d {
    /// `(OH, OW)`.
    pub output_size: (usize, usize),
}

impl AdaptiveAvgPool2d {
    /// Pooling to `output_size` (both positive).
    pub fn new(output_size: (usize, usize)) -> Result<Self> {
        if output_size.0 == 0 || output_size.1 == 0 {
            return Err(Error::invalid(
                "AdaptiveAvgPool2d",
                format!("output_size must be positive, got {output_size:?}"),
            ));
        }
        Ok(AdaptiveAvgPool2d { output_size })
    }
}

/// The `[out, n]` matrix whose row `i` averages entries `floor(i n / out) .. ceil((i + 1) n / out)`.
fn averaging_matrix<B: Backend>(n: usize, out: usize, x: &Tensor<B>) -> Result<Tensor<B>> {
    let mut a = vec![0.0; out * n];
    for i in 0..out {
        let (start, end) = (i * n / out, ((i + 1) * n).div_ceil(out));
        for j in start..end {
            a[i * n + j] = 1.0 / (end - start) as f64;
        }
    }
    Tensor::from_f64s(a, [out, n], x.dtype(), x.backend())
}

impl<B: Backend> Module<B> for AdaptiveAvgPool2d {
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}
    fn set_training(&mut self, _training: bool) {}
}

impl<B: Backend> Forward<B> for AdaptiveAvgPool2d {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "AdaptiveAvgPool2d";
        as_nchw(OP, x, 2, |x| {
            let (h, w) = (x.shape()[2], x.shape()[3]);
            if h == 0 || w == 0 {
                return Err(Error::invalid(
                    OP,
                    format!("input of shape {:?} has an empty spatial axis", x.shape()),
                ));
            }
            let ah = averaging_matrix(h, self.output_size.0, x)?;
            let aw = averaging_matrix(w, self.output_size.1, x)?;
            ah.matmul(x)?.matmul(&aw.t()?)
        })
    }
}
