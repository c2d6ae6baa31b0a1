//! Constructors: filled, ranged, identity and random tensors.

use crate::Tensor;
use nabla_core::{
    Backend, DType, Distribution, Error, Generator, HostData, Primitive, Result, Scalar, Shape,
};

impl<B: Backend> Tensor<B> {
    /// A tensor of `shape` with every element equal to `value` converted to `dtype`.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::full([2, 2], 7, DType::F32, &CpuBackend::new())?;
    /// assert_eq!(x.to_vec::<f32>()?, vec![7.0; 4]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn full(
        shape: impl Into<Shape>,
        value: impl Into<Scalar>,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        let shape = shape.into();
        let len = nabla_core::check_allocation("full", shape.dims(), dtype)?;
        let full = Primitive::Full {
            value: value.into(),
            len,
            dtype,
        };
        Tensor::run_primitive(backend, full, &[], shape.dims())
    }

    /// A tensor of zeros.
    pub fn zeros(shape: impl Into<Shape>, dtype: DType, backend: &B) -> Result<Self> {
        Tensor::full(shape, 0i64, dtype, backend)
    }

    /// A tensor of ones.
    pub fn ones(shape: impl Into<Shape>, dtype: DType, backend: &B) -> Result<Self> {
        Tensor::full(shape, 1i64, dtype, backend)
    }

    /// Zeros with the shape, dtype and backend of `self`.
    pub fn zeros_like(&self) -> Result<Self> {
        Tensor::zeros(self.shape().to_vec(), self.dtype(), self.backend())
    }

    /// Ones with the shape, dtype and backend of `self`.
    pub fn ones_like(&self) -> Result<Self> {
        Tensor::ones(self.shape().to_vec(), self.dtype(), self.backend())
    }

    /// `value` with the shape, dtype and backend of `self`.
    pub fn full_like(&self, value: impl Into<Scalar>) -> Result<Self> {
        Tensor::full(self.shape().to_vec(), value, self.dtype(), self.backend())
    }

    /// Values `start, start + step, ...` below `end` (above it for a negative step), as in NumPy. With
    /// integer `start`, `end` and `step` the count is exact (`ceil((end − start) / step)` in integer
    /// arithmetic, as NumPy and PyTorch count), even next to `i64::MAX`; otherwise it is computed in
    /// `f64`.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::arange(0.0, 1.0, 0.25, DType::F64, &CpuBackend::new())?;
    /// assert_eq!(x.to_vec::<f64>()?, vec![0.0, 0.25, 0.5, 0.75]);
    /// let i = Tensor::arange(5, 0, -2, DType::I64, &CpuBackend::new())?;
    /// assert_eq!(i.to_vec::<i64>()?, vec![5, 3, 1]);
    /// let top = Tensor::arange(i64::MAX - 2, i64::MAX, 1, DType::I64, &CpuBackend::new())?;
    /// assert_eq!(top.to_vec::<i64>()?, vec![i64::MAX - 2, i64::MAX - 1]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let (s, st) = (start.to_f64(), step.to_f64());
        let n = arange_len(start, end, step)?;
        Self::check_host_values("arange", &[n], dtype)?;
        let data = if dtype.is_int() {
            let (s, st) = (i128::from(start.to_i64()), i128::from(step.to_i64()));
            // In i128: `i * step` may pass the i64 range where `start + i * step` does not.
            let value = |i: usize| {
                let v = s + i as i128 * st;
                v.clamp(i64::MIN.into(), i64::MAX.into()) as i64
            };
            HostData::I64((0..n).map(value).collect())
        } else {
            return Tensor::from_f64_values(
                (0..n).map(|i| s + i as f64 * st).collect(),
                &[n],
                dtype,
                backend,
            );
        };
        Tensor::from_host(data, [n], backend)?.cast(dtype)
    }

    /// `n` evenly spaced values from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, n: usize, dtype: DType, backend: &B) -> Result<Self> {
        if !start.is_finite() || !end.is_finite() {
            return Err(Error::invalid(
                "linspace",
                format!("start {start} and end {end} must be finite"),
            ));
        }
        Self::check_host_values("linspace", &[n], dtype)?;
        let data: Vec<f64> = match n {
            0 => Vec::new(),
            1 => vec![start],
            _ => {
                let step = (end - start) / (n - 1) as f64;
                (0..n)
                    .map(|i| {
                        if i == n - 1 {
                            end
                        } else {
                            start + i as f64 * step
                        }
                    })
                    .collect()
            }
        };
        Tensor::from_f64_values(data, &[n], dtype, backend)
    }

    /// The `n x n` identity matrix.
    pub fn eye(n: usize, dtype: DType, backend: &B) -> Result<Self> {
        Self::check_host_values("eye", &[n, n], dtype)?;
        let mut data = vec![0.0f64; n * n];
        for i in 0..n {
            data[i * n + i] = 1.0;
        }
        Tensor::from_f64_values(data, &[n, n], dtype, backend)
    }

    /// Refuses a creation whose values, computed in `f64` on the host and then converted to `dtype`,
    /// would exceed the allocation limit ([`nabla_core::check_allocation`]).
    fn check_host_values(op: &'static str, dims: &[usize], dtype: DType) -> Result<()> {
        nabla_core::check_allocation(op, dims, DType::F64)?;
        nabla_core::check_allocation(op, dims, dtype)?;
        Ok(())
    }

    /// Uploads values computed in `f64` as `dtype`, converted on the host (NumPy `astype` rules,
    /// [`HostData::cast`]), so that backends without `f64` receive their own dtype.
    fn from_f64_values(data: Vec<f64>, shape: &[usize], dtype: DType, backend: &B) -> Result<Self> {
        Tensor::from_host(HostData::F64(data).cast(dtype), shape.to_vec(), backend)
    }

    /// Samples from `dist` with an explicit seeded generator. Element `i` depends only on the generator's
    /// state and `i`, so every backend draws the same numbers. Inside a function being re-run for its
    /// derivative (a [`checkpoint`](crate::checkpoint)ed block), the draws of its first run are
    /// repeated and `generator` does not advance.
    pub fn random(
        shape: impl Into<Shape>,
        dist: Distribution,
        dtype: DType,
        generator: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let shape = shape.into();
        let len = nabla_core::check_allocation("random", shape.dims(), dtype)?;
        let key = crate::random_replay::next_key(generator, len)?;
        let random = Primitive::Random {
            dist,
            key,
            len,
            dtype,
        };
        Tensor::run_primitive(backend, random, &[], shape.dims())
    }

    /// The values [`Tensor::random`] would draw as `f64` on the CPU, drawn on the host (the same
    /// generator key, so the same numbers): for initialisers that transform draws on the host before
    /// uploading the result to any backend, `f64` or not.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::{DType, Distribution, Generator};
    /// let normal = Distribution::Normal { mean: 0.0, std: 1.0 };
    /// let host = Tensor::<CpuBackend>::random_f64s([3], normal, &mut Generator::new(5))?;
    /// let t = Tensor::random([3], normal, DType::F64, &mut Generator::new(5), &CpuBackend::new())?;
    /// assert_eq!(host, t.to_vec::<f64>()?);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn random_f64s(
        shape: impl Into<Shape>,
        dist: Distribution,
        generator: &mut Generator,
    ) -> Result<Vec<f64>> {
        let shape = shape.into();
        let len = nabla_core::check_allocation("random", shape.dims(), DType::F64)?;
        let key = crate::random_replay::next_key(generator, len)?;
        Ok(nabla_core::random_host(dist, len, DType::F64, key, &nabla_core::InOrder)?.to_f64_vec())
    }

    /// Uniform samples on `[0, 1)`.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::{DType, Generator};
    /// let mut g = Generator::new(0);
    /// let x = Tensor::rand([1000], DType::F32, &mut g, &CpuBackend::new())?;
    /// assert!(x.to_vec::<f32>()?.iter().all(|v| (0.0..1.0).contains(v)));
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn rand(
        shape: impl Into<Shape>,
        dtype: DType,
        generator: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Tensor::random(
            shape,
            Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
            dtype,
            generator,
            backend,
        )
    }

    /// Standard normal samples.
    pub fn randn(
        shape: impl Into<Shape>,
        dtype: DType,
        generator: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Tensor::random(
            shape,
            Distribution::Normal {
                mean: 0.0,
                std: 1.0,
            },
            dtype,
            generator,
            backend,
        )
    }

    /// Uniform samples on `[low, high)`.
    pub fn uniform(
        shape: impl Into<Shape>,
        low: f64,
        high: f64,
        dtype: DType,
        generator: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Tensor::random(
            shape,
            Distribution::Uniform { low, high },
            dtype,
            generator,
            backend,
        )
    }

    /// Normal samples with the given mean and standard deviation.
    pub fn normal(
        shape: impl Into<Shape>,
        mean: f64,
        std: f64,
        dtype: DType,
        generator: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Tensor::random(
            shape,
            Distribution::Normal { mean, std },
            dtype,
            generator,
            backend,
        )
    }

    /// Ones with probability `p`, zeros otherwise (`dtype` may be bool, an integer or a float).
    pub fn bernoulli(
        shape: impl Into<Shape>,
        p: f64,
        dtype: DType,
        generator: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Tensor::random(
            shape,
            Distribution::Bernoulli { p },
            dtype,
            generator,
            backend,
        )
    }
}

/// `v` when it is an integer (`true` and `false` as 1 and 0).
fn as_integer(v: Scalar) -> Option<i64> {
    // Beyond `i64`, counting goes through `f64` like a float range.
    i64::try_from(v.as_integer()?).ok()
}

/// The number of values [`Tensor::arange`] gives: exact for integers, else `ceil((end − start) /
/// step)` in `f64`; an error for a zero or non-finite step or bound, or more than 2⁴⁰ values.
fn arange_len(start: Scalar, end: Scalar, step: Scalar) -> Result<usize> {
    let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
    if st == 0.0 || !s.is_finite() || !e.is_finite() || !st.is_finite() {
        return Err(Error::invalid(
            "arange",
            format!("start {start}, end {end} and step {step} must be finite with a non-zero step"),
        ));
    }
    let n = match (as_integer(start), as_integer(end), as_integer(step)) {
        (Some(s), Some(e), Some(st)) => {
            let (s, e, st) = (i128::from(s), i128::from(e), i128::from(st));
            // ceil((e − s) / st) for either sign of the step, as PyTorch counts int64 ranges.
            ((e - s + st - st.signum()) / st).max(0) as f64
        }
        _ => ((e - s) / st).ceil().max(0.0),
    };
    if n > (1u64 << 40) as f64 {
        return Err(Error::invalid(
            "arange",
            format!("{n} elements is too many"),
        ));
    }
    Ok(n as usize)
}
