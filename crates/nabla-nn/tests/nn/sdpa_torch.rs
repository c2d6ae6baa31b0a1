//! `scaled_dot_product_attention` against PyTorch's (`tests/fixtures/sdpa.json`, written by
//! `scripts/gen_torch_sdpa_fixtures.py`): outputs and the gradients of `sum(out * w)` in float64,
//! through the fused op (no mask) and the composite (masks), and the fused op in float32.

use crate::torch_support::{T, assert_close, fixture, tensor};
use nabla_core::{DType, Result};
use nabla_nn::{SdpaArgs, scaled_dot_product_attention};
use nabla_tensor::vjp_n;
use serde_json::Value;

fn run(c: &Value, dtype: DType) -> Result<(T, Vec<T>)> {
    let inputs: Vec<T> = ["q", "k", "v"]
        .iter()
        .map(|n| tensor(&c[*n]).cast(dtype))
        .collect::<Result<_>>()?;
    let mask = match c["mask_kind"].as_str() {
        Some("bool") => Some(tensor(&c["mask"]).gt(0.5)?),
        Some(_) => Some(tensor(&c["mask"]).cast(dtype)?),
        None => None,
    };
    let w = tensor(&c["w"]).cast(dtype)?;
    let one = T::ones([], dtype, inputs[0].backend())?;
    let attend = |x: &[T]| {
        let args = SdpaArgs {
            attn_mask: mask.as_ref(),
            is_causal: c["is_causal"].as_bool().unwrap_or(false),
            scale: c["scale"].as_f64(),
            enable_gqa: c["enable_gqa"].as_bool().unwrap_or(false),
            ..SdpaArgs::default()
        };
        scaled_dot_product_attention(&x[0], &x[1], &x[2], args)
    };
    let (_, grads) = vjp_n(|x| attend(x)?.mul(&w)?.sum_all(), &inputs, &one)?;
    Ok((attend(&inputs)?, grads))
}

#[test]
fn scaled_dot_product_attention_matches_torch() -> Result<()> {
    let cases = fixture("sdpa.json")["cases"].as_array().expect("cases");
    assert!(cases.len() >= 10);
    for c in cases {
        let name = c["name"].as_str().expect("name");
        for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
            let (out, grads) = run(c, dtype)?;
            let out = out.cast(DType::F64)?;
            assert_close(
                &format!("{name} {dtype:?} output"),
                &out,
                &c["out"],
                tol,
                tol,
            );
            for (g, key) in grads.iter().zip(["grad_q", "grad_k", "grad_v"]) {
                let g = g.cast(DType::F64)?;
                assert_close(
                    &format!("{name} {dtype:?} {key}"),
                    &g,
                    &c[key],
                    tol,
                    10.0 * tol,
                );
            }
        }
    }
    Ok(())
}
