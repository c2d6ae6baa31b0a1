//! The user functions, named and shaped as `numpy.fft` / `torch.fft`: the length and axis
//! arguments, zero-padding or cropping, default axes and dtype conversions happen here, in
//! differentiable tensor ops, before one of the family's three ops runs.

use crate::ops::{Fft, Irfft, Norm, Rfft};
use crate::rules::apply;
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;

/// `x` as a complex tensor: complex types as they are, real ones as the complex type of
/// [`DType::real_float`] (`f64` as `complex128`, other types as `complex64`, like PyTorch).
fn complex_input<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    match x.dtype().real_float().and_then(DType::complex) {
        Some(dtype) => x.cast(dtype),
        None => Ok(x.clone()),
    }
}

/// `x` as a real float tensor for the real transforms ([`DType::real_float`]); complex input is an
/// error naming `op` (use the complex transform).
fn real_input<B: Backend>(op: &'static str, x: &Tensor<B>) -> Result<Tensor<B>> {
    match x.dtype().real_float() {
        Some(dtype) if dtype == x.dtype() => Ok(x.clone()),
        Some(dtype) => x.cast(dtype),
        None => Err(Error::UnsupportedDType {
            op,
            dtype: x.dtype(),
            hint: Some(format!(
                "{op} transforms real input; use the complex transform (fft) instead"
            )),
        }),
    }
}

/// The axes counted from the end (`-1` the last) of `axes` (any sign) in a tensor of `rank`
/// dimensions; out of range is an error naming `op`.
fn from_end(op: &'static str, axes: &[isize], rank: usize) -> Result<Vec<isize>> {
    let r = rank as isize;
    axes.iter()
        .map(|&a| match a {
            a if (0..r).contains(&a) => Ok(a - r),
            a if (-r..0).contains(&a) => Ok(a),
            a => Err(Error::invalid(
                op,
                format!("axis {a} is out of range for a tensor of rank {rank}"),
            )),
        })
        .collect()
}

/// The transformed axes and lengths of an n-dimensional transform, NumPy's way: `axes` defaults to
/// the last `s.len()` axes when `s` is given, else to every axis; `s` defaults to the input's lengths
/// along `axes`.
fn axes_and_lengths<B: Backend>(
    op: &'static str,
    x: &Tensor<B>,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
) -> Result<(Vec<isize>, Option<Vec<usize>>)> {
    let rank = x.rank();
    let axes = match (axes, s) {
        (Some(a), _) => from_end(op, a, rank)?,
        (None, Some(s)) if s.len() <= rank => (-(s.len() as isize)..0).collect(),
        (None, Some(s)) => {
            return Err(Error::invalid(
                op,
                format!("{} lengths given for a tensor of rank {rank}", s.len()),
            ));
        }
        (None, None) => (-(rank as isize)..0).collect(),
    };
    if axes.is_empty() {
        return Err(Error::invalid(
            op,
            format!(
                "needs at least one axis to transform; the input has shape {:?}",
                x.shape()
            ),
        ));
    }
    if let Some(s) = s
        && s.len() != axes.len()
    {
        return Err(Error::invalid(
            op,
            format!("got {} lengths for {} axes {axes:?}", s.len(), axes.len()),
        ));
    }
    Ok((axes, s.map(<[usize]>::to_vec)))
}

/// `x` cut or zero-padded at the end of axis `axis` (counted from the end) to `len` elements.
fn resize<B: Backend>(x: &Tensor<B>, axis: isize, len: usize) -> Result<Tensor<B>> {
    let at = (x.rank() as isize + axis) as usize;
    let have = x.shape()[at];
    if len < have {
        x.narrow(axis, 0, len)
    } else if len > have {
        let mut pads = vec![(0, 0); x.rank()];
        pads[at] = (0, len - have);
        x.pad(&pads, 0.0)
    } else {
        Ok(x.clone())
    }
}

/// `x` resized along each of `axes` to the matching entry of `lengths` (none when absent).
fn resize_all<B: Backend>(
    x: Tensor<B>,
    axes: &[isize],
    lengths: Option<&[usize]>,
) -> Result<Tensor<B>> {
    match lengths {
        Some(lengths) => axes
            .iter()
            .zip(lengths)
            .try_fold(x, |x, (&a, &n)| resize(&x, a, n)),
        None => Ok(x),
    }
}

/// The complex transform (forward or inverse) over n axes.
fn complex_nd<B: Backend>(
    op: &'static str,
    x: &Tensor<B>,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    norm: Norm,
    inverse: bool,
) -> Result<Tensor<B>> {
    let (axes, lengths) = axes_and_lengths(op, x, s, axes)?;
    let x = resize_all(complex_input(x)?, &axes, lengths.as_deref())?;
    apply(
        Fft {
            axes,
            inverse,
            norm,
        },
        &x,
    )
}

/// The one-axis form of a transform: `n` (optional) and `axis` as one-element lists.
fn one_axis(n: Option<usize>, axis: isize) -> (Option<[usize; 1]>, [isize; 1]) {
    (n.map(|n| [n]), [axis])
}

/// The discrete Fourier transform of `x` along `axis`: `X[k] = Σⱼ x[j] e^{-2πi jk/n}` (scaled per
/// `norm`), complex. `n` crops or zero-pads the axis first (as NumPy). Real input is converted
/// (`f64` to `complex128`, other types to `complex64`).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_fft::Norm;
/// use nabla_core::num_complex::Complex64;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [4], &CpuBackend::new())?;
/// let y = nabla_fft::fft(&x, None, -1, Norm::Backward)?.to_vec::<Complex64>()?;
/// let want = [Complex64::new(10.0, 0.0), Complex64::new(-2.0, 2.0), Complex64::new(-2.0, 0.0), Complex64::new(-2.0, -2.0)];
/// assert!(y.iter().zip(want).all(|(a, b)| (a - b).norm() < 1e-12));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn fft<B: Backend>(
    x: &Tensor<B>,
    n: Option<usize>,
    axis: isize,
    norm: Norm,
) -> Result<Tensor<B>> {
    let (n, axes) = one_axis(n, axis);
    complex_nd(
        "fft.fft",
        x,
        n.as_ref().map(|n| &n[..]),
        Some(&axes),
        norm,
        false,
    )
}

/// The inverse of [`fft`] along `axis`: `x[j] = (1/n) Σₖ X[k] e^{2πi jk/n}` with the default norm.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_fft::{Norm, fft, ifft};
/// let x = Tensor::from_vec(vec![1.0f64, -2.0, 0.5], [3], &CpuBackend::new())?;
/// let back = ifft(&fft(&x, None, -1, Norm::Ortho)?, None, -1, Norm::Ortho)?.real()?;
/// let v = back.to_vec::<f64>()?;
/// assert!((v[0] - 1.0).abs() < 1e-12 && (v[1] + 2.0).abs() < 1e-12 && (v[2] - 0.5).abs() < 1e-12);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn ifft<B: Backend>(
    x: &Tensor<B>,
    n: Option<usize>,
    axis: isize,
    norm: Norm,
) -> Result<Tensor<B>> {
    let (n, axes) = one_axis(n, axis);
    complex_nd(
        "fft.ifft",
        x,
        n.as_ref().map(|n| &n[..]),
        Some(&axes),
        norm,
        true,
    )
}

/// The transform of real `x` along `axis`, keeping the `n/2 + 1` non-negative frequencies (the others
/// are their conjugates). `n` crops or zero-pads the axis first. Complex input is an error.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_fft::Norm;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [4], &CpuBackend::new())?;
/// let y = nabla_fft::rfft(&x, None, -1, Norm::Backward)?;
/// assert_eq!((y.shape(), y.dtype()), (&[3usize][..], nabla_core::DType::C64));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn rfft<B: Backend>(
    x: &Tensor<B>,
    n: Option<usize>,
    axis: isize,
    norm: Norm,
) -> Result<Tensor<B>> {
    let (n, axes) = one_axis(n, axis);
    rfftn(x, n.as_ref().map(|n| &n[..]), Some(&axes), norm)
}

/// The inverse of [`rfft`]: real output of length `n` along `axis` (default `2·(m − 1)` for `m`
/// input frequencies) from the non-negative frequencies of a Hermitian spectrum; the input is cropped
/// or zero-padded to `n/2 + 1` frequencies first.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_fft::{Norm, irfft, rfft};
/// let x = Tensor::from_vec(vec![0.5f64, 1.0, -1.5, 2.0, 3.0], [5], &CpuBackend::new())?;
/// let back = irfft(&rfft(&x, None, -1, Norm::Backward)?, Some(5), -1, Norm::Backward)?;
/// let (a, b) = (x.to_vec::<f64>()?, back.to_vec::<f64>()?);
/// assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-12));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn irfft<B: Backend>(
    x: &Tensor<B>,
    n: Option<usize>,
    axis: isize,
    norm: Norm,
) -> Result<Tensor<B>> {
    let (n, axes) = one_axis(n, axis);
    irfftn(x, n.as_ref().map(|n| &n[..]), Some(&axes), norm)
}

/// The n-dimensional transform over `axes` (default: the last `s.len()` axes when `s` is given, else
/// all), each cropped or zero-padded to the matching length of `s` first (NumPy's `fftn`).
pub fn fftn<B: Backend>(
    x: &Tensor<B>,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    norm: Norm,
) -> Result<Tensor<B>> {
    complex_nd("fft.fftn", x, s, axes, norm, false)
}

/// The inverse of [`fftn`].
pub fn ifftn<B: Backend>(
    x: &Tensor<B>,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    norm: Norm,
) -> Result<Tensor<B>> {
    complex_nd("fft.ifftn", x, s, axes, norm, true)
}

/// The two-dimensional transform over the last two axes ([`fftn`] with `axes = [-2, -1]`).
pub fn fft2<B: Backend>(x: &Tensor<B>, s: Option<&[usize]>, norm: Norm) -> Result<Tensor<B>> {
    fftn(x, s, Some(&[-2, -1]), norm)
}

/// The inverse of [`fft2`].
pub fn ifft2<B: Backend>(x: &Tensor<B>, s: Option<&[usize]>, norm: Norm) -> Result<Tensor<B>> {
    ifftn(x, s, Some(&[-2, -1]), norm)
}

/// The n-dimensional transform of real `x`: the real transform along the last of `axes` (keeping
/// `n/2 + 1` frequencies), the complex one along the others (NumPy's `rfftn`; defaults as [`fftn`]).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_fft::{Norm, irfftn, rfftn};
/// let x = Tensor::from_vec((0..12).map(f64::from).collect(), [3, 4], &CpuBackend::new())?;
/// let y = rfftn(&x, None, None, Norm::Backward)?;
/// assert_eq!(y.shape(), &[3, 3]);
/// let back = irfftn(&y, Some(&[3, 4]), None, Norm::Backward)?.to_vec::<f64>()?;
/// assert!(back.iter().enumerate().all(|(i, v)| (v - i as f64).abs() < 1e-12));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn rfftn<B: Backend>(
    x: &Tensor<B>,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    norm: Norm,
) -> Result<Tensor<B>> {
    const OP: &str = "fft.rfftn";
    let (axes, lengths) = axes_and_lengths(OP, x, s, axes)?;
    let x = resize_all(real_input(OP, x)?, &axes, lengths.as_deref())?;
    apply(Rfft { axes, norm }, &x)
}

/// The inverse of [`rfftn`]: real output with lengths `s` along `axes` (default: the input's, and
/// `2·(m − 1)` along the last axis); the last axis is cropped or zero-padded to `s[-1]/2 + 1`
/// frequencies first, the others to their `s`.
pub fn irfftn<B: Backend>(
    x: &Tensor<B>,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    norm: Norm,
) -> Result<Tensor<B>> {
    const OP: &str = "fft.irfftn";
    let (axes, lengths) = axes_and_lengths(OP, x, s, axes)?;
    let x = complex_input(x)?;
    let last = axes.len() - 1;
    let lengths = match lengths {
        Some(l) => l,
        None => {
            let mut l: Vec<usize> = axes
                .iter()
                .map(|&a| x.shape()[(x.rank() as isize + a) as usize])
                .collect();
            l[last] = 2 * l[last].saturating_sub(1);
            l
        }
    };
    let len = lengths[last];
    if len == 0 {
        return Err(Error::invalid(
            OP,
            format!(
                "invalid number of data points (0) along axis {}; pass the output length",
                axes[last]
            ),
        ));
    }
    let mut sizes = lengths.clone();
    sizes[last] = len / 2 + 1;
    let x = resize_all(x, &axes, Some(&sizes))?;
    apply(Irfft { axes, len, norm }, &x)
}

/// The two-dimensional real transform over the last two axes ([`rfftn`] with `axes = [-2, -1]`).
pub fn rfft2<B: Backend>(x: &Tensor<B>, s: Option<&[usize]>, norm: Norm) -> Result<Tensor<B>> {
    rfftn(x, s, Some(&[-2, -1]), norm)
}

/// The inverse of [`rfft2`].
pub fn irfft2<B: Backend>(x: &Tensor<B>, s: Option<&[usize]>, norm: Norm) -> Result<Tensor<B>> {
    irfftn(x, s, Some(&[-2, -1]), norm)
}

/// The sample frequencies of an `n`-point transform with sample spacing `d`:
/// `[0, 1, ..., ⌈n/2⌉ − 1, −⌊n/2⌋, ..., −1] / (d·n)`, of `dtype` (a float type).
///
/// ```
/// # use nabla_cpu::CpuBackend;
/// let f = nabla_fft::fftfreq(4, 0.5, nabla_core::DType::F64, &CpuBackend::new())?;
/// assert_eq!(f.to_vec::<f64>()?, vec![0.0, 0.5, -1.0, -0.5]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn fftfreq<B: Backend>(n: usize, d: f64, dtype: DType, backend: &B) -> Result<Tensor<B>> {
    let scale = spacing("fft.fftfreq", n, d)?;
    let v: Vec<f64> = (0..n)
        .map(|k| {
            let k = if k < n.div_ceil(2) {
                k as f64
            } else {
                k as f64 - n as f64
            };
            k * scale
        })
        .collect();
    Tensor::from_vec(v, [n], backend)?.cast(dtype)
}

/// The non-negative sample frequencies of an `n`-point [`rfft`]: `[0, 1, ..., ⌊n/2⌋] / (d·n)`.
///
/// ```
/// # use nabla_cpu::CpuBackend;
/// let f = nabla_fft::rfftfreq(5, 0.1, nabla_core::DType::F64, &CpuBackend::new())?;
/// assert_eq!(f.shape(), &[3]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn rfftfreq<B: Backend>(n: usize, d: f64, dtype: DType, backend: &B) -> Result<Tensor<B>> {
    let scale = spacing("fft.rfftfreq", n, d)?;
    let v: Vec<f64> = (0..n / 2 + usize::from(n > 0))
        .map(|k| k as f64 * scale)
        .collect();
    let len = v.len();
    Tensor::from_vec(v, [len], backend)?.cast(dtype)
}

/// `1 / (d·n)`, checking that `d` is finite and non-zero and the dtype's name in errors.
fn spacing(op: &'static str, n: usize, d: f64) -> Result<f64> {
    if !(d.is_finite() && d != 0.0) {
        return Err(Error::invalid(
            op,
            format!("the sample spacing d must be finite and non-zero, got {d}"),
        ));
    }
    Ok(1.0 / (d * n.max(1) as f64))
}

/// `x` rotated along each of `axes` (default: all) so that element `(n − shift) mod n` comes first.
fn roll_halves<B: Backend>(
    op: &'static str,
    x: &Tensor<B>,
    axes: Option<&[isize]>,
    inverse: bool,
) -> Result<Tensor<B>> {
    let axes = match axes {
        Some(a) => from_end(op, a, x.rank())?,
        None => (-(x.rank() as isize)..0).collect(),
    };
    axes.iter().try_fold(x.clone(), |x, &a| {
        let n = x.shape()[(x.rank() as isize + a) as usize];
        // fftshift moves the second half (the negative frequencies, ⌊n/2⌋ of them) to the front.
        let first = if inverse { n / 2 } else { n - n / 2 };
        if n < 2 {
            return Ok(x);
        }
        let (head, tail) = (x.narrow(a, 0, first)?, x.narrow(a, first, n - first)?);
        Tensor::cat(&[&tail, &head], a)
    })
}

/// Moves the zero frequency to the centre along `axes` (default: all): NumPy's `fftshift`.
///
/// ```
/// # use nabla_cpu::CpuBackend;
/// let f = nabla_fft::fftfreq(5, 1.0, nabla_core::DType::F64, &CpuBackend::new())?;
/// let v = nabla_fft::fftshift(&f, None)?.mul(5.0)?.to_vec::<f64>()?;
/// assert_eq!(v, vec![-2.0, -1.0, 0.0, 1.0, 2.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn fftshift<B: Backend>(x: &Tensor<B>, axes: Option<&[isize]>) -> Result<Tensor<B>> {
    roll_halves("fft.fftshift", x, axes, false)
}

/// The inverse of [`fftshift`] (they differ for odd lengths).
pub fn ifftshift<B: Backend>(x: &Tensor<B>, axes: Option<&[isize]>) -> Result<Tensor<B>> {
    roll_halves("fft.ifftshift", x, axes, true)
}
