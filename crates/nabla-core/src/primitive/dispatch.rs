//! [`Primitive::dispatch`]: runs a primitive with a backend's kernel, the one replay path of every layer.

use super::Primitive;
use crate::{Backend, Error, Layout, Result};

impl Primitive {
    /// Runs the primitive on `backend` with `inputs` (each a buffer and the view it is read through, in
    /// the backend method's argument order) and returns its output buffers: one, or two for sort, top-k
    /// and max pooling. A wrong number of inputs is an error naming the primitive.
    ///
    /// ```
    /// use nabla_core::{Backend, BinaryOp, HostData, Layout, Primitive};
    /// # fn demo<B: Backend>(b: &B) -> nabla_core::Result<()> {
    /// let x = b.upload(HostData::F32(vec![1.0, 2.0]))?;
    /// let l = Layout::contiguous(vec![2]);
    /// let out = Primitive::Binary(BinaryOp::Mul).dispatch(b, &[(&x, &l), (&x, &l)])?;
    /// assert_eq!(b.read(&out[0], &l)?, HostData::F32(vec![1.0, 4.0]));
    /// # Ok(()) }
    /// ```
    pub fn dispatch<B: Backend>(
        &self,
        backend: &B,
        inputs: &[(&B::Storage, &Layout)],
    ) -> Result<Vec<B::Storage>> {
        Ok(self.dispatch_outputs(backend, inputs)?.into_vec())
    }

    /// [`Primitive::dispatch`] with the output buffers held inline ([`Outputs`]): eager ops take this
    /// path, which allocates nothing beyond the buffers themselves.
    pub fn dispatch_outputs<B: Backend>(
        &self,
        backend: &B,
        inputs: &[(&B::Storage, &Layout)],
    ) -> Result<Outputs<B::Storage>> {
        let b = backend;
        self.check_arity(inputs.len())?;
        // Arity was checked above; `arg` keeps the indexing panic-free all the same.
        let arg = |k: usize| {
            inputs.get(k).copied().ok_or_else(|| {
                Error::invalid("dispatch", format!("{} has no input {k}", self.name()))
            })
        };
        let one = Outputs::One;
        let two = |(s, t): (B::Storage, B::Storage)| Outputs::Two(s, t);
        Ok(match self {
            Primitive::Constant(data) => one(b.upload(data.clone())?),
            Primitive::Full { value, len, dtype } => one(b.full(*len, *value, *dtype)?),
            Primitive::Random {
                dist,
                key,
                len,
                dtype,
            } => one(b.random(*dist, *len, *dtype, *key)?),
            Primitive::Copy => {
                let (x, l) = arg(0)?;
                one(b.copy(x, l)?)
            }
            Primitive::Unary(op) => {
                let (x, l) = arg(0)?;
                one(b.unary(*op, x, l)?)
            }
            Primitive::Binary(op) => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.binary(*op, x, xl, y, yl)?)
            }
            Primitive::Compare(op) => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.compare(*op, x, xl, y, yl)?)
            }
            Primitive::Select => {
                let ((c, cl), (t, tl), (f, fl)) = (arg(0)?, arg(1)?, arg(2)?);
                one(b.select(c, cl, t, tl, f, fl)?)
            }
            Primitive::Cast(dtype) => {
                let (x, l) = arg(0)?;
                one(b.cast(x, l, *dtype)?)
            }
            Primitive::Reduce { op, axes } => {
                let (x, l) = arg(0)?;
                one(b.reduce(*op, x, l, axes)?)
            }
            Primitive::ArgReduce { op, axis } => {
                let (x, l) = arg(0)?;
                one(b.arg_reduce(*op, x, l, *axis)?)
            }
            Primitive::Cumsum { axis } => {
                let (x, l) = arg(0)?;
                one(b.cumsum(x, l, *axis)?)
            }
            Primitive::Matmul => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.matmul(x, xl, y, yl)?)
            }
            Primitive::MatmulRounded(precision) => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.matmul_rounded(x, xl, y, yl, *precision)?)
            }
            Primitive::Pad { pads, value } => {
                let (x, l) = arg(0)?;
                one(b.pad(x, l, pads, *value)?)
            }
            Primitive::Concat { axis } => one(b.concat(inputs, *axis)?),
            Primitive::Gather { axis } => {
                let ((x, xl), (i, il)) = (arg(0)?, arg(1)?);
                one(b.gather(x, xl, *axis, i, il)?)
            }
            Primitive::IndexSelect { axis } => {
                let ((x, xl), (i, il)) = (arg(0)?, arg(1)?);
                one(b.index_select(x, xl, *axis, i, il)?)
            }
            Primitive::ScatterAdd { axis } => {
                let ((d, dl), (i, il), (s, sl)) = (arg(0)?, arg(1)?, arg(2)?);
                one(b.scatter_add(d, dl, *axis, i, il, s, sl)?)
            }
            Primitive::OneHot { classes, dtype } => {
                let (x, l) = arg(0)?;
                one(b.one_hot(x, l, *classes, *dtype)?)
            }
            Primitive::Sort { axis, descending } => {
                let (x, l) = arg(0)?;
                two(b.sort(x, l, *axis, *descending)?)
            }
            Primitive::Topk { axis, k, largest } => {
                let (x, l) = arg(0)?;
                two(b.topk(x, l, *axis, *k, *largest)?)
            }
            Primitive::MaxPool2d(params) => {
                let (x, l) = arg(0)?;
                two(b.max_pool2d(x, l, params)?)
            }
            Primitive::Conv2d(params) => {
                let ((x, xl), (w, wl)) = (arg(0)?, arg(1)?);
                one(b.conv2d(x, xl, w, wl, params)?)
            }
            Primitive::Conv2dInputGrad { input_hw, params } => {
                let ((dy, dl), (w, wl)) = (arg(0)?, arg(1)?);
                one(b.conv2d_input_grad(dy, dl, w, wl, *input_hw, params)?)
            }
            Primitive::Conv2dWeightGrad { kernel_hw, params } => {
                let ((x, xl), (dy, dl)) = (arg(0)?, arg(1)?);
                one(b.conv2d_weight_grad(x, xl, dy, dl, *kernel_hw, params)?)
            }
            Primitive::Extension(call) => one(b.extension(&call.0, inputs)?),
            Primitive::Fused { kernel, shape } => {
                let owned = inputs.iter().map(|(s, l)| ((*s).clone(), *l)).collect();
                one(b.fused(kernel, owned, shape, None)?)
            }
        })
    }
}

/// The output buffers of one primitive: one, or two for sort, top-k and max pooling (values and
/// positions), held inline.
#[derive(Debug)]
pub enum Outputs<S> {
    /// The one output of most primitives.
    One(S),
    /// Values and positions.
    Two(S, S),
}

impl<S> Outputs<S> {
    /// The buffers in order.
    pub fn into_vec(self) -> Vec<S> {
        match self {
            Outputs::One(s) => vec![s],
            Outputs::Two(s, t) => vec![s, t],
        }
    }

    /// The buffer of a one-output primitive; an error naming `primitive` (the one that ran) for two.
    pub fn into_one(self, primitive: &Primitive) -> Result<S> {
        match self {
            Outputs::One(s) => Ok(s),
            Outputs::Two(..) => Err(Self::count_error(primitive, 2, 1)),
        }
    }

    /// The buffers of a two-output primitive; an error naming `primitive` (the one that ran) for one.
    pub fn into_two(self, primitive: &Primitive) -> Result<(S, S)> {
        match self {
            Outputs::Two(s, t) => Ok((s, t)),
            Outputs::One(_) => Err(Self::count_error(primitive, 1, 2)),
        }
    }

    fn count_error(primitive: &Primitive, got: usize, wanted: usize) -> Error {
        Error::invalid(
            "dispatch",
            format!("{} returned {got} outputs, not {wanted}", primitive.name()),
        )
    }
}
