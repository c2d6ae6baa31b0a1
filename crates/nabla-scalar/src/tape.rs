//! Reverse mode: an arena [`Tape`] of nodes and [`Var`] handles that borrow it.
//!
//! Every operation on variables appends one node to a flat `Vec`: the indices of at most two parents
//! and the local partial derivatives with respect to them (from the same rules as forward mode). No
//! node is reference-counted or separately allocated; [`Tape::backward`] is one reverse sweep over the
//! array. A `Var<'t>` holds `&'t Tape`, so it cannot outlive its tape, and [`Tape::clear`] takes
//! `&mut self`, so no variable survives a reuse either:
//!
//! ```compile_fail,E0597
//! use nabla_scalar::Tape;
//!
//! let x;
//! {
//!     let tape = Tape::new();
//!     x = tape.var(1.0);
//! } // `tape` dropped here while still borrowed by `x`
//! println!("{}", x.value());
//! ```
//!
//! ```compile_fail,E0502
//! use nabla_scalar::Tape;
//!
//! let mut tape = Tape::new();
//! let x = tape.var(1.0);
//! tape.clear(); // cannot clear while `x` borrows the tape
//! println!("{}", x.value());
//! ```

use core::cell::UnsafeCell;
use core::ops::{Add, Div, Index, Mul, Neg, Sub};

use crate::Scalar;
use crate::mixed::mixed_and_assign_ops;
use crate::rules::{self, Binary, Unary, scalar_functions_from_rules};

/// One recorded operation: up to two parents and the partial derivatives with respect to them. A
/// leaf, or a unary node's missing second parent, points at itself with partial 0.
#[derive(Clone, Copy, Debug)]
struct Node {
    parents: [u32; 2],
    partials: [f64; 2],
}

/// An arena of recorded operations for reverse-mode differentiation.
///
/// ```
/// use nabla_scalar::{Scalar, Tape};
///
/// let tape = Tape::new();
/// let x = tape.var(2.0);
/// let y = tape.var(3.0);
/// let z = x * y + x.sin();
/// let grads = tape.backward(z);
/// assert_eq!(grads[x], 3.0 + 2.0_f64.cos());
/// assert_eq!(grads[y], 2.0);
/// ```
#[derive(Default)]
pub struct Tape {
    /// The nodes, reached only through [`Tape::with_nodes`].
    nodes: UnsafeCell<Vec<Node>>,
}

impl core::fmt::Debug for Tape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tape").field("len", &self.len()).finish()
    }
}

/// A real variable recorded on a [`Tape`] (or a constant, recorded nowhere).
///
/// `Copy`, 24 bytes: the tape reference, the node index and the value. Operations between variables
/// of two different tapes panic; operations with constants (from [`Scalar::from_f64`] or plain `f64`)
/// record a single unary node.
#[derive(Clone, Copy)]
pub struct Var<'t> {
    tape: Option<&'t Tape>,
    index: u32,
    value: f64,
}

/// The adjoints of one [`Tape::backward`] sweep: `grads[x]` is the derivative of the output with
/// respect to the variable `x` (0 for constants and for variables the output does not depend on).
#[derive(Clone, Debug, PartialEq)]
pub struct Gradients {
    adjoints: Vec<f64>,
}

impl Tape {
    /// An empty tape.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty tape with room for `nodes` operations before it reallocates.
    pub fn with_capacity(nodes: usize) -> Self {
        Tape {
            nodes: UnsafeCell::new(Vec::with_capacity(nodes)),
        }
    }

    /// The number of recorded nodes (inputs and operations).
    pub fn len(&self) -> usize {
        self.with_nodes(|nodes| nodes.len())
    }

    /// `true` when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every node, keeping the allocation, so the tape can record the next evaluation. Takes
    /// `&mut self`: no [`Var`] of the previous evaluation can still be alive.
    pub fn clear(&mut self) {
        self.nodes.get_mut().clear();
    }

    /// A new independent variable with value `value`.
    pub fn var(&self, value: f64) -> Var<'_> {
        let index = self.with_nodes(|nodes| {
            let index = node_index(nodes.len());
            nodes.push(Node {
                parents: [index, index],
                partials: [0.0, 0.0],
            });
            index
        });
        Var {
            tape: Some(self),
            index,
            value,
        }
    }

    /// `N` new independent variables.
    pub fn vars<const N: usize>(&self, values: [f64; N]) -> [Var<'_>; N] {
        values.map(|v| self.var(v))
    }

    /// One new independent variable per value.
    pub fn var_slice(&self, values: &[f64]) -> Vec<Var<'_>> {
        values.iter().map(|&v| self.var(v)).collect()
    }

    /// Reverse sweep from `output`: the derivative of `output` with respect to every recorded node.
    ///
    /// # Panics
    /// If `output` belongs to another tape.
    pub fn backward(&self, output: Var<'_>) -> Gradients {
        let mut adjoints = vec![0.0; self.len()];
        let Some(tape) = output.tape else {
            return Gradients { adjoints };
        };
        assert!(
            core::ptr::eq(tape, self),
            "Tape::backward: the output variable was recorded on another tape"
        );
        let out = output.index as usize;
        adjoints[out] = 1.0;
        self.with_nodes(|nodes| {
            for (i, node) in nodes[..=out].iter().enumerate().rev() {
                let a = adjoints[i];
                if a == 0.0 {
                    continue;
                }
                adjoints[node.parents[0] as usize] += node.partials[0] * a;
                adjoints[node.parents[1] as usize] += node.partials[1] * a;
            }
        });
        Gradients { adjoints }
    }

    /// Runs `f` with exclusive access to the node list.
    #[inline]
    fn with_nodes<R>(&self, f: impl FnOnce(&mut Vec<Node>) -> R) -> R {
        // SAFETY: `Tape` holds an `UnsafeCell`, so it is not `Sync` and only the owning thread
        // reaches the cell. Every access goes through this function, and every closure passed to it
        // (in this module only) just reads or pushes nodes without calling back into the tape, so
        // the `&mut` is the only reference to the vector while it lives. `clear` needs `&mut self`.
        f(unsafe { &mut *self.nodes.get() })
    }

    #[inline]
    fn push(&self, value: f64, parents: [u32; 2], partials: [f64; 2]) -> Var<'_> {
        let index = self.with_nodes(|nodes| {
            let index = node_index(nodes.len());
            nodes.push(Node { parents, partials });
            index
        });
        Var {
            tape: Some(self),
            index,
            value,
        }
    }
}

/// The index of the node at position `len`.
///
/// # Panics
/// Past `u32::MAX` nodes (about 100 GB of tape).
#[inline]
fn node_index(len: usize) -> u32 {
    u32::try_from(len).unwrap_or_else(|_| panic!("Tape: more than {} nodes", u32::MAX))
}

/// The value and gradient of `f` at `x` by one recording and one reverse sweep.
///
/// ```
/// use nabla_scalar::{Scalar, Var, reverse_gradient};
///
/// let (value, grad) = reverse_gradient(|x: &[Var<'_>]| x[0] * x[1].exp(), &[3.0, 0.0]);
/// assert_eq!(value, 3.0);
/// assert_eq!(grad, vec![1.0, 3.0]);
/// ```
pub fn reverse_gradient<F>(f: F, x: &[f64]) -> (f64, Vec<f64>)
where
    F: for<'t> Fn(&[Var<'t>]) -> Var<'t>,
{
    let tape = Tape::with_capacity(x.len() * 8);
    let vars = tape.var_slice(x);
    let out = f(&vars);
    let grads = tape.backward(out);
    (out.value, grads.wrt_all(&vars))
}

impl<'t> Var<'t> {
    /// A constant: not recorded on any tape, derivative 0.
    #[inline]
    pub fn constant(value: f64) -> Self {
        Var {
            tape: None,
            index: 0,
            value,
        }
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> f64 {
        self.value
    }

    /// `true` for a constant (a variable recorded on no tape).
    #[inline]
    pub fn is_constant(&self) -> bool {
        self.tape.is_none()
    }

    /// The primal, for the derivative rules.
    #[inline]
    fn primal(self) -> f64 {
        self.value
    }

    /// Records a unary rule.
    #[inline]
    fn chain1(self, (f, df): Unary<f64>) -> Self {
        match self.tape {
            None => Var::constant(f),
            Some(t) => t.push(f, [self.index, self.index], [df, 0.0]),
        }
    }

    /// Records a binary rule (a unary node when one side is a constant).
    ///
    /// # Panics
    /// If the two variables live on different tapes.
    #[inline]
    fn chain2(self, other: Self, (f, da, db): Binary<f64>) -> Self {
        match (self.tape, other.tape) {
            (None, None) => Var::constant(f),
            (Some(t), None) => t.push(f, [self.index, self.index], [da, 0.0]),
            (None, Some(t)) => t.push(f, [other.index, other.index], [db, 0.0]),
            (Some(t), Some(u)) => {
                assert!(
                    core::ptr::eq(t, u),
                    "Var: operands recorded on two different tapes"
                );
                t.push(f, [self.index, other.index], [da, db])
            }
        }
    }
}

/// `Var(#3: 1.5)` for node 3 with value 1.5, `Var(const 1.5)` for a constant.
impl core::fmt::Debug for Var<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.tape {
            Some(_) => write!(f, "Var(#{}: {:?})", self.index, self.value),
            None => write!(f, "Var(const {:?})", self.value),
        }
    }
}

impl Gradients {
    /// The derivative with respect to `x` (0 for a constant or a variable outside this sweep).
    #[inline]
    pub fn wrt(&self, x: Var<'_>) -> f64 {
        self[x]
    }

    /// The derivatives with respect to each of `xs`.
    pub fn wrt_all(&self, xs: &[Var<'_>]) -> Vec<f64> {
        xs.iter().map(|&x| self[x]).collect()
    }

    /// The adjoint of every node, in recording order.
    pub fn as_slice(&self) -> &[f64] {
        &self.adjoints
    }
}

impl Index<Var<'_>> for Gradients {
    type Output = f64;
    #[inline]
    fn index(&self, x: Var<'_>) -> &f64 {
        const ZERO: &f64 = &0.0;
        match x.tape {
            None => ZERO,
            Some(_) => self.adjoints.get(x.index as usize).unwrap_or(ZERO),
        }
    }
}

impl Scalar for Var<'_> {
    #[inline]
    fn from_f64(c: f64) -> Self {
        Var::constant(c)
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self.value
    }
    #[inline]
    fn add_f64(self, c: f64) -> Self {
        self.chain1((self.value + c, 1.0))
    }
    #[inline]
    fn mul_f64(self, c: f64) -> Self {
        self.chain1((self.value * c, c))
    }
    #[inline]
    fn div_f64(self, c: f64) -> Self {
        self.chain1((self.value / c, 1.0 / c))
    }
    scalar_functions_from_rules!();
}

impl Add for Var<'_> {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        self.chain2(o, (self.value + o.value, 1.0, 1.0))
    }
}

impl Sub for Var<'_> {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        self.chain2(o, (self.value - o.value, 1.0, -1.0))
    }
}

impl Mul for Var<'_> {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        self.chain2(o, rules::mul(self.value, o.value))
    }
}

impl Div for Var<'_> {
    type Output = Self;
    #[inline]
    fn div(self, o: Self) -> Self {
        self.chain2(o, rules::div(self.value, o.value))
    }
}

impl Neg for Var<'_> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        self.chain1((-self.value, -1.0))
    }
}

/// Equality of values only.
impl PartialEq for Var<'_> {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        self.value == o.value
    }
}

/// Order of values only.
impl PartialOrd for Var<'_> {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<core::cmp::Ordering> {
        self.value.partial_cmp(&o.value)
    }
}

mixed_and_assign_ops!(['t] Var<'t>);
