//! Expansion tests: the error messages and spans for constructs outside the subset, and the shape of
//! the generated signatures.

use proc_macro2::TokenStream;
use quote::quote;

use super::expand;

/// The message of the expansion error of `item`.
fn error_of(item: TokenStream) -> String {
    match expand(quote!(crate = nabla_scalar), item) {
        Ok(tokens) => panic!("expected an error, got {tokens}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn unsupported_constructs_are_named() {
    let cases: Vec<(TokenStream, &str)> = vec![
        (
            quote!(
                fn f(x: f64) -> f64 {
                    match x {
                        _ => x,
                    }
                }
            ),
            "does not support `match` expressions",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    let g = |y: f64| y;
                    g(x)
                }
            ),
            "does not support closure expressions",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    println!("{}", x);
                    x
                }
            ),
            "does not support macro calls (`println!`)",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    x.exp_m1()
                }
            ),
            "does not support the method `exp_m1`",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    f64::exp_m1(x)
                }
            ),
            "does not support `f64::exp_m1`",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    std::process::abort()
                }
            ),
            "does not support calls to this path",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    loop {}
                }
            ),
            "does not support `loop` expressions",
        ),
        (
            quote!(
                fn f(x: [f64; 2]) -> f64 {
                    let mut s = 0.0;
                    for v in x {
                        s += v;
                    }
                    s
                }
            ),
            "does not support `for` loops over anything but a range",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    let r = &x;
                    x
                }
            ),
            "does not support reference (`&`) expressions",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    fn g() {}
                    x
                }
            ),
            "does not support items",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    let y: String = x;
                    y
                }
            ),
            "does not support this type",
        ),
        (
            quote!(
                fn f(x: f32) -> f64 {
                    x
                }
            ),
            "parameters of type `f64` and `[f64; N]` only",
        ),
        (
            quote!(
                fn f(x: f64) -> f32 {
                    x
                }
            ),
            "needs a function returning `f64`",
        ),
        (
            quote!(
                fn f(x: f64) {}
            ),
            "needs a function returning `f64`",
        ),
        (
            quote!(
                fn f<T>(x: f64) -> f64 {
                    x
                }
            ),
            "does not support generic functions",
        ),
        (
            quote!(
                fn f((a, b): (f64, f64)) -> f64 {
                    a
                }
            ),
            "each parameter to be a plain name",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    x * (vec![1][0] as f64)
                }
            ),
            "does not support macro calls (`vec!`)",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    x * f64::from(vec![1][0])
                }
            ),
            "does not support macro calls (`vec!`)",
        ),
        (
            quote!(
                fn f(x: f64) -> f64 {
                    x * 2.0f32
                }
            ),
            "float literals other than f64",
        ),
    ];
    for (item, expected) in cases {
        let message = error_of(item.clone());
        assert!(
            message.contains(expected) && message.contains("#[differentiate]"),
            "for `{item}`: expected a message containing {expected:?}, got {message:?}"
        );
    }
}

#[test]
fn bad_attribute_argument_is_reported() {
    let err = expand(
        quote!(krate = x),
        quote!(
            fn f(x: f64) -> f64 {
                x
            }
        ),
    )
    .unwrap_err();
    assert!(err.to_string().contains("expected `crate = path`"));
}

#[test]
fn generated_signatures() {
    let out = expand(
        quote!(crate = nabla_scalar),
        quote!(
            pub fn f(a: f64, v: [f64; 3], w: [f64; K]) -> f64 {
                a
            }
        ),
    )
    .unwrap()
    .to_string();
    assert!(out.contains("pub fn f_scalar < __NablaScalar : nabla_scalar :: Scalar >"));
    assert!(out.contains(
        "pub fn f_grad (a : f64 , v : [f64 ; 3] , w : [f64 ; K]) -> (f64 , [f64 ; 4usize + (K)])"
    ));
}

#[test]
fn literals_and_calls_are_rewritten() {
    let out = expand(
        quote!(crate = nabla_scalar),
        quote!(
            fn f(x: f64) -> f64 {
                f64::sin(x) + g(x.cos()) * 2.0 + f64::consts::PI + (3 as f64)
            }
        ),
    )
    .unwrap()
    .to_string();
    assert!(out.contains("< __NablaScalar as nabla_scalar :: Scalar > :: sin (x)"));
    assert!(out.contains(
        "g_scalar :: < __NablaScalar > (< __NablaScalar as nabla_scalar :: Scalar > :: cos (x))"
    ));
    assert!(out.contains("< __NablaScalar as nabla_scalar :: Scalar > :: from_f64 (2.0)"));
    assert!(
        out.contains(
            "< __NablaScalar as nabla_scalar :: Scalar > :: from_f64 (f64 :: consts :: PI)"
        )
    );
    assert!(out.contains("< __NablaScalar as nabla_scalar :: Scalar > :: from_f64 (3 as f64)"));
}
