//! The body rewrite of `#[differentiate]`: turns a function body on `f64` into the same body generic
//! over the scalar type parameter `S`, or reports the first construct outside the supported subset.
//!
//! | in the body                               | becomes                                        |
//! | ----------------------------------------- | ---------------------------------------------- |
//! | float literal `2.5`                       | `<S as Scalar>::from_f64(2.5)`                 |
//! | `f64::consts::PI`, `f64::EPSILON`, ...    | `<S as Scalar>::from_f64(f64::consts::PI)`     |
//! | `e as f64`, `f64::from(e)` (integer `e`)  | `<S as Scalar>::from_f64(e as f64)`            |
//! | `x.sin()`, `f64::sin(x)` (supported fn)   | `<S as Scalar>::sin(x)`                        |
//! | `g(a, b)` (another differentiated fn)     | `g_scalar::<S>(a, b)`                          |
//! | type `f64` in `let` (also in arrays)      | `S`                                            |
//!
//! Everything else is kept as written and must be one of: integer and boolean literals, variables,
//! arithmetic and comparison operators, unary minus and `!`, parentheses, blocks, `let` (also `let
//! mut`), assignment and compound assignment, `if`/`else`, `for` over a range, `while`, `break`,
//! `continue`, `return`, indexing, arrays, tuples, and `.len()` on arrays.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote_spanned};
use syn::spanned::Spanned;
use syn::{Block, Expr, Lit, Pat, Stmt, Type};

/// The functions of the `Scalar` trait that a body may call, as methods or as `f64::name(..)`.
pub(crate) const SCALAR_FUNCTIONS: &[&str] = &[
    "exp", "ln", "log1p", "sqrt", "powi", "powf", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "abs", "min", "max", "hypot",
];

/// What the error messages list as supported.
const SUBSET: &str = "the supported subset is f64 arithmetic, unary minus, comparisons, literals, \
    `let`/`let mut`, assignment operators, `if`/`else`, `for` loops over ranges (also reversed), `while`, indexing \
    arrays, calls to the Scalar functions (`x.sin()` or `f64::sin(x)`) and to other \
    #[differentiate] functions";

/// `true` for the type `f64`.
pub(crate) fn is_f64(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("f64"))
}

/// `ty` with every `f64` replaced by `scalar` (for parameter types that were already checked).
pub(crate) fn scalar_type(ty: &Type, scalar: &Type) -> Type {
    let mut ty = ty.clone();
    // Parameter types are `f64` or `[f64; N]`, which `Rewriter::ty` always accepts.
    let _ = retype(&mut ty, scalar);
    ty
}

/// Replaces `f64` by `scalar` inside `ty`; integer and boolean types are kept, others rejected.
fn retype(ty: &mut Type, scalar: &Type) -> syn::Result<()> {
    match ty {
        t if is_f64(t) => {
            *t = scalar.clone();
            Ok(())
        }
        Type::Path(p) if p.qself.is_none() && is_plain_type(&p.path) => Ok(()),
        Type::Array(a) => retype(&mut a.elem, scalar),
        Type::Tuple(t) => t.elems.iter_mut().try_for_each(|e| retype(e, scalar)),
        Type::Paren(p) => retype(&mut p.elem, scalar),
        Type::Infer(_) => Ok(()),
        other => Err(unsupported(other, "this type")),
    }
}

/// Integer and boolean types, which stay as they are.
fn is_plain_type(path: &syn::Path) -> bool {
    const PLAIN: &[&str] = &[
        "bool", "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64",
        "i128",
    ];
    PLAIN.iter().any(|t| path.is_ident(t))
}

/// The error for a construct outside the subset, pointing at it.
fn unsupported(node: &impl ToTokens, what: &str) -> syn::Error {
    syn::Error::new_spanned(
        node,
        format!("#[differentiate] does not support {what}; {SUBSET}"),
    )
}

/// Rewrites a body for the scalar type parameter.
pub(crate) struct Rewriter<'a> {
    krate: &'a TokenStream,
    scalar: &'a Type,
}

impl<'a> Rewriter<'a> {
    /// A rewriter emitting paths under `krate` and the type parameter `scalar`.
    pub(crate) fn new(krate: &'a TokenStream, scalar: &'a Type) -> Self {
        Rewriter { krate, scalar }
    }

    /// Rewrites every statement of a block.
    pub(crate) fn block(&self, block: &mut Block) -> syn::Result<()> {
        block.stmts.iter_mut().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&self, stmt: &mut Stmt) -> syn::Result<()> {
        match stmt {
            Stmt::Local(local) => {
                if let Some(init) = &mut local.init {
                    if let Some((_, diverge)) = &init.diverge {
                        return Err(unsupported(diverge, "`let ... else`"));
                    }
                    self.expr(&mut init.expr)?;
                }
                self.pat(&mut local.pat)
            }
            Stmt::Expr(e, _) => self.expr(e),
            Stmt::Item(item) => Err(unsupported(
                item,
                "items (fn, struct, use, const...) in the body",
            )),
            Stmt::Macro(m) => Err(unsupported(
                &m.mac.path,
                &format!("macro calls (`{}!`)", path_name(&m.mac.path)),
            )),
        }
    }

    /// Binding patterns: names, `mut` names, `_`, tuples of them, with optional type annotations.
    fn pat(&self, pat: &mut Pat) -> syn::Result<()> {
        match pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Ok(()),
            Pat::Wild(_) => Ok(()),
            Pat::Tuple(t) => t.elems.iter_mut().try_for_each(|p| self.pat(p)),
            Pat::Type(t) => {
                retype(&mut t.ty, self.scalar)?;
                self.pat(&mut t.pat)
            }
            other => Err(unsupported(other, "this pattern (use a plain name)")),
        }
    }

    fn expr(&self, e: &mut Expr) -> syn::Result<()> {
        let span = e.span();
        let krate = self.krate;
        let s = self.scalar;
        match e {
            Expr::Lit(lit) => match &lit.lit {
                Lit::Float(f) if matches!(f.suffix(), "" | "f64") => {
                    *e = syn::parse_quote_spanned!(span=> <#s as #krate::Scalar>::from_f64(#lit));
                    Ok(())
                }
                Lit::Float(_) => Err(unsupported(lit, "float literals other than f64")),
                Lit::Int(_) | Lit::Bool(_) => Ok(()),
                _ => Err(unsupported(lit, "this literal")),
            },
            Expr::Path(p) => {
                if p.qself.is_none() && p.path.segments.len() == 1 {
                    Ok(())
                } else if p.qself.is_none() && is_f64_constant(&p.path) {
                    *e = syn::parse_quote_spanned!(span=> <#s as #krate::Scalar>::from_f64(#p));
                    Ok(())
                } else {
                    Err(unsupported(
                        p,
                        "paths other than local variables and `f64` constants",
                    ))
                }
            }
            Expr::Binary(b) => {
                self.expr(&mut b.left)?;
                self.expr(&mut b.right)
            }
            Expr::Unary(u) => match u.op {
                syn::UnOp::Neg(_) | syn::UnOp::Not(_) => self.expr(&mut u.expr),
                _ => Err(unsupported(u, "dereferencing")),
            },
            Expr::Paren(p) => self.expr(&mut p.expr),
            Expr::Group(g) => self.expr(&mut g.expr),
            Expr::Block(b) if b.label.is_none() => self.block(&mut b.block),
            Expr::If(i) => {
                self.expr(&mut i.cond)?;
                self.block(&mut i.then_branch)?;
                match &mut i.else_branch {
                    Some((_, els)) => self.expr(els),
                    None => Ok(()),
                }
            }
            Expr::ForLoop(f) => {
                let iterated = f.expr.to_token_stream();
                let range = loop_range(&mut f.expr).ok_or_else(|| {
                    unsupported(
                        &iterated,
                        "`for` loops over anything but a range `a..b` or `(a..b).rev()`",
                    )
                })?;
                let (Some(start), Some(end)) = (&mut range.start, &mut range.end) else {
                    return Err(unsupported(range, "open ranges in `for` loops"));
                };
                self.expr(start)?;
                self.expr(end)?;
                self.pat(&mut f.pat)?;
                self.block(&mut f.body)
            }
            Expr::While(w) => {
                self.expr(&mut w.cond)?;
                self.block(&mut w.body)
            }
            Expr::Assign(a) => {
                self.expr(&mut a.left)?;
                self.expr(&mut a.right)
            }
            Expr::Index(i) => {
                self.expr(&mut i.expr)?;
                self.expr(&mut i.index)
            }
            Expr::Array(a) => a.elems.iter_mut().try_for_each(|x| self.expr(x)),
            Expr::Tuple(t) => t.elems.iter_mut().try_for_each(|x| self.expr(x)),
            Expr::Repeat(r) => self.expr(&mut r.expr),
            Expr::Return(r) => match &mut r.expr {
                Some(x) => self.expr(x),
                None => Ok(()),
            },
            Expr::Break(b) if b.expr.is_none() => Ok(()),
            Expr::Continue(_) => Ok(()),
            Expr::Cast(c) => {
                // The operand is an integer expression, kept as written; check it is in the subset.
                self.expr(&mut (*c.expr).clone())?;
                if !is_f64(&c.ty) {
                    return Ok(());
                }
                *e = syn::parse_quote_spanned!(span=> <#s as #krate::Scalar>::from_f64(#c));
                Ok(())
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                if name == "len" && m.args.is_empty() && m.turbofish.is_none() {
                    return Ok(());
                }
                if !SCALAR_FUNCTIONS.contains(&name.as_str()) || m.turbofish.is_some() {
                    return Err(unsupported(
                        &m.method,
                        &format!("the method `{name}` (not a Scalar function)"),
                    ));
                }
                self.expr(&mut m.receiver)?;
                m.args.iter_mut().try_for_each(|a| self.expr(a))?;
                let method = &m.method;
                let receiver = &m.receiver;
                let args = m.args.iter();
                *e = syn::parse_quote_spanned!(span=>
                    <#s as #krate::Scalar>::#method(#receiver #(, #args)*)
                );
                Ok(())
            }
            Expr::Macro(m) => Err(unsupported(
                &m.mac.path,
                &format!("macro calls (`{}!`)", path_name(&m.mac.path)),
            )),
            Expr::Call(c) => self.call(c).map(|new| {
                if let Some(new) = new {
                    *e = new;
                }
            }),
            other => Err(unsupported(
                other,
                &format!("{} expressions", expr_kind(other)),
            )),
        }
    }

    /// A call: `f64::name(..)` for a Scalar function, `f64::from(int)`, or a call to another
    /// differentiated function `g(..)`, which becomes `g_scalar::<S>(..)`. Returns the replacement.
    fn call(&self, c: &mut syn::ExprCall) -> syn::Result<Option<Expr>> {
        let krate = self.krate;
        let s = self.scalar;
        let Expr::Path(p) = &*c.func else {
            return Err(unsupported(
                &c.func,
                "calls through anything but a function name",
            ));
        };
        let span = c.span();
        let segments: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let has_args = p.path.segments.iter().any(|s| !s.arguments.is_none());
        if p.qself.is_some() || has_args {
            return Err(unsupported(p, "qualified or generic function paths"));
        }
        match segments.as_slice() {
            [ty, f] if ty == "f64" && f == "from" => {
                // The argument is an integer expression, kept as written; check it is in the subset.
                c.args.iter().try_for_each(|a| self.expr(&mut a.clone()))?;
                Ok(Some(syn::parse_quote_spanned!(span=>
                    <#s as #krate::Scalar>::from_f64(#c)
                )))
            }
            [ty, f] if ty == "f64" && SCALAR_FUNCTIONS.contains(&f.as_str()) => {
                c.args.iter_mut().try_for_each(|a| self.expr(a))?;
                let f = &p.path.segments[1].ident;
                let args = c.args.iter();
                Ok(Some(syn::parse_quote_spanned!(span=>
                    <#s as #krate::Scalar>::#f(#(#args),*)
                )))
            }
            [ty, f] if ty == "f64" => Err(unsupported(
                p,
                &format!("`f64::{f}` (not a Scalar function)"),
            )),
            [_] => {
                c.args.iter_mut().try_for_each(|a| self.expr(a))?;
                let name = &p.path.segments[0].ident;
                let generic = format_ident!("{}_scalar", name, span = name.span());
                let args = c.args.iter();
                let call = quote_spanned!(span=> #generic::<#s>(#(#args),*));
                Ok(Some(syn::parse2(call)?))
            }
            _ => Err(unsupported(
                p,
                "calls to this path (only Scalar functions and other #[differentiate] functions)",
            )),
        }
    }
}

/// The range of a `for` loop: `a..b`, `a..=b`, or either in parentheses followed by `.rev()`.
fn loop_range(e: &mut Expr) -> Option<&mut syn::ExprRange> {
    match e {
        Expr::Range(r) => Some(r),
        Expr::Paren(p) => loop_range(&mut p.expr),
        Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() && m.turbofish.is_none() => {
            match &mut *m.receiver {
                Expr::Paren(p) => match &mut *p.expr {
                    Expr::Range(r) => Some(r),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// `f64::NAME` and `f64::consts::NAME`, optionally under `std::` or `core::`.
fn is_f64_constant(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let rest = match segs.first().map(String::as_str) {
        Some("std" | "core") => &segs[1..],
        _ => &segs[..],
    };
    match rest {
        [f, _] => f == "f64",
        [f, c, _] => f == "f64" && c == "consts",
        _ => false,
    }
}

/// A path as written, for messages.
fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// The name of an expression kind, for messages.
fn expr_kind(e: &Expr) -> &'static str {
    match e {
        Expr::Match(_) => "`match`",
        Expr::Closure(_) => "closure",
        Expr::Loop(_) => "`loop`",
        Expr::Reference(_) => "reference (`&`)",
        Expr::Field(_) => "field access",
        Expr::Struct(_) => "struct literal",
        Expr::Range(_) => "range (outside a `for` loop)",
        Expr::Try(_) => "`?`",
        Expr::Async(_) | Expr::Await(_) => "async",
        Expr::Unsafe(_) => "`unsafe` block",
        Expr::Let(_) => "`if let`/`while let`",
        Expr::Block(_) => "labeled block",
        Expr::Break(_) => "`break` with a value",
        _ => "these",
    }
}
