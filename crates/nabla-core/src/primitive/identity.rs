//! A primitive's identity, bit for bit: its kind and parameters written as words, so that two
//! primitives compute the same function exactly when their words are equal (and, for extension ops,
//! their ops are the same function, [`crate::ExtensionOp::same_as`]). Floats are compared by their
//! bits: `Full(0.0)` and `Full(-0.0)` differ, and two `NaN` fills with one payload are the same.
//!
//! Every parameter type writes all of its fields (destructured, so a new field does not compile
//! until it is written); [`super::Primitive::identity_words`] is generated from the catalogue's one
//! list. What the compiler's common-subexpression elimination compares and hashes.

use crate::{
    ArgReduceOp, BinaryOp, CompareOp, Conv2dParams, DType, Distribution, Element, FusedKernel,
    FusedOp, HostData, Pool2dParams, Precision, ReduceOp, RngKey, Scalar, UnaryOp, with_host_data,
};
use std::hash::Hasher;

/// A value that writes its identity as words (see the module documentation).
pub trait IdentityWords {
    /// Appends the value's identity to `out`.
    fn identity_words(&self, out: &mut Vec<u64>);
}

/// Fieldless enums: the variant's position.
macro_rules! fieldless {
    ($($t:ty),*) => {
        $(impl IdentityWords for $t {
            fn identity_words(&self, out: &mut Vec<u64>) {
                out.push(*self as u64);
            }
        })*
    };
}

fieldless!(
    DType,
    UnaryOp,
    BinaryOp,
    CompareOp,
    ReduceOp,
    ArgReduceOp,
    Precision
);

impl IdentityWords for usize {
    fn identity_words(&self, out: &mut Vec<u64>) {
        out.push(*self as u64);
    }
}

impl IdentityWords for bool {
    fn identity_words(&self, out: &mut Vec<u64>) {
        out.push(u64::from(*self));
    }
}

impl<A: IdentityWords, B: IdentityWords> IdentityWords for (A, B) {
    fn identity_words(&self, out: &mut Vec<u64>) {
        self.0.identity_words(out);
        self.1.identity_words(out);
    }
}

impl<T: IdentityWords> IdentityWords for Vec<T> {
    fn identity_words(&self, out: &mut Vec<u64>) {
        out.push(self.len() as u64);
        self.iter().for_each(|x| x.identity_words(out));
    }
}

impl IdentityWords for Scalar {
    fn identity_words(&self, out: &mut Vec<u64>) {
        match *self {
            Scalar::F64(x) => out.extend([0, x.to_bits()]),
            Scalar::C128(c) => out.extend([1, c.re.to_bits(), c.im.to_bits()]),
            Scalar::I64(i) => out.extend([2, i as u64]),
            Scalar::Bool(b) => out.extend([3, u64::from(b)]),
            Scalar::U64(u) => out.extend([4, u]),
        }
    }
}

impl IdentityWords for HostData {
    fn identity_words(&self, out: &mut Vec<u64>) {
        self.dtype().identity_words(out);
        out.push(self.len() as u64);
        with_host_data!(self, v => v.iter().for_each(|x| x.to_scalar().identity_words(out)));
    }
}

impl IdentityWords for Distribution {
    fn identity_words(&self, out: &mut Vec<u64>) {
        match *self {
            Distribution::Uniform { low, high } => out.extend([0, low.to_bits(), high.to_bits()]),
            Distribution::Normal { mean, std } => out.extend([1, mean.to_bits(), std.to_bits()]),
            Distribution::Bernoulli { p } => out.extend([2, p.to_bits()]),
        }
    }
}

impl IdentityWords for RngKey {
    fn identity_words(&self, out: &mut Vec<u64>) {
        let RngKey { seed, offset } = *self;
        out.extend([seed, offset]);
    }
}

impl IdentityWords for Conv2dParams {
    fn identity_words(&self, out: &mut Vec<u64>) {
        let Conv2dParams {
            stride,
            padding,
            dilation,
            groups,
            precision,
        } = *self;
        for pair in [stride, padding, dilation] {
            pair.identity_words(out);
        }
        groups.identity_words(out);
        precision.identity_words(out);
    }
}

impl IdentityWords for Pool2dParams {
    fn identity_words(&self, out: &mut Vec<u64>) {
        let Pool2dParams {
            kernel,
            stride,
            padding,
            dilation,
            ceil_mode,
        } = *self;
        for pair in [kernel, stride, padding, dilation] {
            pair.identity_words(out);
        }
        ceil_mode.identity_words(out);
    }
}

impl IdentityWords for FusedOp {
    fn identity_words(&self, out: &mut Vec<u64>) {
        match *self {
            FusedOp::Input(k) => out.extend([0, k as u64]),
            FusedOp::Constant(c) => {
                out.push(1);
                c.identity_words(out);
            }
            FusedOp::Unary(op, a) => out.extend([2, op as u64, a as u64]),
            FusedOp::Binary(op, a, b) => out.extend([3, op as u64, a as u64, b as u64]),
            FusedOp::Compare(op, a, b) => out.extend([4, op as u64, a as u64, b as u64]),
            FusedOp::Select(c, t, f) => out.extend([5, c as u64, t as u64, f as u64]),
            FusedOp::Cast(dtype, a) => out.extend([6, dtype as u64, a as u64]),
        }
    }
}

/// The steps, the input dtypes and the results; an attached host loop computes the same function,
/// so it is not part of the identity (as in the kernel's `PartialEq`).
impl IdentityWords for FusedKernel {
    fn identity_words(&self, out: &mut Vec<u64>) {
        out.push(self.steps().len() as u64);
        for step in self.steps() {
            step.op.identity_words(out);
            step.dtype.identity_words(out);
        }
        self.input_dtypes().to_vec().identity_words(out);
        self.outputs().to_vec().identity_words(out);
    }
}

/// The op's name and the hash of its parameters ([`crate::ExtensionOp::hash_identity`]): equal for
/// equal ops; [`super::Primitive::same_function`] also compares the ops themselves.
impl IdentityWords for super::ExtensionCall {
    fn identity_words(&self, out: &mut Vec<u64>) {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.0.hash_identity(&mut h);
        out.push(h.finish());
    }
}
