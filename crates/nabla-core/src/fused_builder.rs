//! A small builder for [`FusedKernel`]s over one dtype, for hand-written single-pass kernels (optimizer
//! updates, say) that graph compilers would otherwise assemble from traced ops.

use crate::{BinaryOp, DType, FusedKernel, FusedOp, FusedStep, Result, Scalar, UnaryOp};

/// A value inside a kernel being built: the index of the step computing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelValue(usize);

/// Builds a [`FusedKernel`] whose inputs, constants and intermediates all have one float dtype.
///
/// ```
/// use nabla_core::{DType, FusedBuilder};
/// let mut k = FusedBuilder::new(DType::F32);
/// let (m, g) = (k.input(), k.input());
/// // m + 0.1 * (g - m): an exponential moving average.
/// let d = k.sub(g, m);
/// let d = k.scale(d, 0.1);
/// let out = k.add(m, d);
/// let kernel = k.finish(out)?;
/// assert_eq!(kernel.num_inputs(), 2);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FusedBuilder {
    dtype: DType,
    steps: Vec<FusedStep>,
    inputs: usize,
}

impl FusedBuilder {
    /// An empty kernel over `dtype`.
    pub fn new(dtype: DType) -> Self {
        FusedBuilder {
            dtype,
            steps: Vec::new(),
            inputs: 0,
        }
    }

    fn push(&mut self, op: FusedOp) -> KernelValue {
        self.steps.push(FusedStep::new(op, self.dtype));
        KernelValue(self.steps.len() - 1)
    }

    /// The next input (inputs are numbered in the order they are declared).
    pub fn input(&mut self) -> KernelValue {
        self.inputs += 1;
        self.push(FusedOp::Input(self.inputs - 1))
    }

    /// A constant.
    pub fn constant(&mut self, value: f64) -> KernelValue {
        self.push(FusedOp::Constant(Scalar::F64(value)))
    }

    /// An elementwise unary op.
    pub fn unary(&mut self, op: UnaryOp, a: KernelValue) -> KernelValue {
        self.push(FusedOp::Unary(op, a.0))
    }

    /// An elementwise binary op.
    pub fn binary(&mut self, op: BinaryOp, a: KernelValue, b: KernelValue) -> KernelValue {
        self.push(FusedOp::Binary(op, a.0, b.0))
    }

    /// `a + b`.
    pub fn add(&mut self, a: KernelValue, b: KernelValue) -> KernelValue {
        self.binary(BinaryOp::Add, a, b)
    }

    /// `a - b`.
    pub fn sub(&mut self, a: KernelValue, b: KernelValue) -> KernelValue {
        self.binary(BinaryOp::Sub, a, b)
    }

    /// `a * b`.
    pub fn mul(&mut self, a: KernelValue, b: KernelValue) -> KernelValue {
        self.binary(BinaryOp::Mul, a, b)
    }

    /// `a / b`.
    pub fn div(&mut self, a: KernelValue, b: KernelValue) -> KernelValue {
        self.binary(BinaryOp::Div, a, b)
    }

    /// `a * factor` for a constant factor.
    pub fn scale(&mut self, a: KernelValue, factor: f64) -> KernelValue {
        let c = self.constant(factor);
        self.mul(a, c)
    }

    /// `a + offset` for a constant offset.
    pub fn offset(&mut self, a: KernelValue, offset: f64) -> KernelValue {
        let c = self.constant(offset);
        self.add(a, c)
    }

    /// The kernel computing `result`; fails if it breaks a rule of [`FusedKernel::validate`] (an input
    /// declared but never read, say).
    pub fn finish(mut self, result: KernelValue) -> Result<FusedKernel> {
        if result.0 + 1 != self.steps.len() {
            // The result must be the last step: copy it there with a cast to its own dtype.
            self.push(FusedOp::Cast(self.dtype, result.0));
        }
        FusedKernel::new(self.steps)
    }

    /// The kernel computing every value of `results`, in order, in one pass (run it with
    /// [`crate::Backend::fused_many`]); fails as [`FusedBuilder::finish`] does, or if a value is listed
    /// twice.
    ///
    /// ```
    /// use nabla_core::{DType, FusedBuilder};
    /// let mut k = FusedBuilder::new(DType::F64);
    /// let (m, g) = (k.input(), k.input());
    /// let d = k.sub(g, m);
    /// let d = k.scale(d, 0.1);
    /// let m_new = k.add(m, d);
    /// let m_sq = k.mul(m_new, m_new);
    /// let kernel = k.finish_many(&[m_new, m_sq])?;
    /// assert_eq!(kernel.outputs().len(), 2);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn finish_many(self, results: &[KernelValue]) -> Result<FusedKernel> {
        FusedKernel::with_outputs(self.steps, results.iter().map(|v| v.0).collect())
    }
}
