//! The layers of several inputs or outputs behind `nabla_rs.nn` (recurrent layers, attention,
//! Transformer layers, `Bilinear`, the zoo's BERT): their configs from PyTorch's arguments, and how the binding
//! calls each (inputs in PyTorch's order, `None` for optional ones left out).

use crate::json::Args;
use crate::layers::{Layer, input, optional};
use nabla_core::{Backend, Error, Result};
use nabla_models::Bert;
use nabla_nn::{
    AttentionArgs, Bilinear, GRU, LSTM, MultiheadAttention, MultiheadAttentionConfig, RNN,
    RnnConfig, RnnNonlinearity, TransformerActivation, TransformerDecoderLayer,
    TransformerEncoderLayer, TransformerLayerConfig,
};
use nabla_tensor::Tensor;

type Outputs<B> = Result<crate::layers::Outputs<B>>;

/// A call flag (`need_weights`, ...): `default` when not given.
fn flag(flags: &Args<'_>, key: &str, default: bool) -> Result<bool> {
    if flags.is_none(key) {
        Ok(default)
    } else {
        flags.flag(key)
    }
}

/// Refuses a PyTorch argument that nabla lacks unless it has its default.
fn default_only(a: &Args<'_>, key: &str, default: &serde_json::Value) -> Result<()> {
    let v = &a.json[key];
    if v.is_null() || v == default {
        Ok(())
    } else {
        Err(a.bad(key, &format!("{default} (nabla has no other)")))
    }
}

/// The settings of `RNN`, `LSTM` and `GRU` from PyTorch's arguments.
pub fn rnn_config(a: &Args<'_>) -> Result<RnnConfig> {
    default_only(a, "proj_size", &serde_json::json!(0))?;
    Ok(RnnConfig {
        input_size: a.count("input_size")?,
        hidden_size: a.count("hidden_size")?,
        num_layers: a.count("num_layers")?,
        bias: a.flag("bias")?,
        batch_first: a.flag("batch_first")?,
        dropout: a.real("dropout")?,
        bidirectional: a.flag("bidirectional")?,
    })
}

/// `RNN`'s `nonlinearity`.
pub fn nonlinearity(a: &Args<'_>) -> Result<RnnNonlinearity> {
    match a.text("nonlinearity")? {
        "tanh" => Ok(RnnNonlinearity::Tanh),
        "relu" => Ok(RnnNonlinearity::Relu),
        _ => Err(a.bad("nonlinearity", "'tanh' or 'relu'")),
    }
}

/// The settings of `MultiheadAttention` from PyTorch's arguments.
pub fn attention_config(a: &Args<'_>) -> Result<MultiheadAttentionConfig> {
    for key in ["add_bias_kv", "add_zero_attn"] {
        default_only(a, key, &serde_json::json!(false))?;
    }
    let e = a.count("embed_dim")?;
    for key in ["kdim", "vdim"] {
        if !a.is_none(key) && a.count(key)? != e {
            return Err(a.bad(
                key,
                "None or embed_dim (nabla's keys and values have width embed_dim)",
            ));
        }
    }
    Ok(MultiheadAttentionConfig {
        embed_dim: e,
        num_heads: a.count("num_heads")?,
        dropout: a.real("dropout")?,
        bias: a.flag("bias")?,
        batch_first: a.flag("batch_first")?,
    })
}

/// The settings of the Transformer layers from PyTorch's arguments.
pub fn transformer_config(a: &Args<'_>) -> Result<TransformerLayerConfig> {
    let activation = match a.text("activation")? {
        "relu" => TransformerActivation::Relu,
        "gelu" => TransformerActivation::Gelu,
        _ => return Err(a.bad("activation", "'relu' or 'gelu'")),
    };
    Ok(TransformerLayerConfig {
        d_model: a.count("d_model")?,
        nhead: a.count("nhead")?,
        dim_feedforward: a.count("dim_feedforward")?,
        dropout: a.real("dropout")?,
        activation,
        layer_norm_eps: a.real("layer_norm_eps")?,
        batch_first: a.flag("batch_first")?,
        norm_first: a.flag("norm_first")?,
        bias: a.flag("bias")?,
    })
}

/// `[input, h_0?]` to `[output, h_n]`.
impl<B: Backend> Layer<B> for RNN<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], _: &Args<'_>) -> Outputs<B> {
        let (out, h) = self.forward(input(inputs, 0, "input")?, optional(inputs, 1))?;
        Ok(vec![Some(out), Some(h)])
    }
}

/// `[input, h_0?]` to `[output, h_n]`.
impl<B: Backend> Layer<B> for GRU<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], _: &Args<'_>) -> Outputs<B> {
        let (out, h) = self.forward(input(inputs, 0, "input")?, optional(inputs, 1))?;
        Ok(vec![Some(out), Some(h)])
    }
}

/// `[input, h_0?, c_0?]` (both states or neither) to `[output, h_n, c_n]`.
impl<B: Backend> Layer<B> for LSTM<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], _: &Args<'_>) -> Outputs<B> {
        let state = match (optional(inputs, 1), optional(inputs, 2)) {
            (Some(h), Some(c)) => Some((h, c)),
            (None, None) => None,
            _ => {
                return Err(Error::invalid(
                    "LSTM",
                    "the initial state is a pair (h_0, c_0): give both or neither",
                ));
            }
        };
        let (out, (h, c)) = self.forward(input(inputs, 0, "input")?, state)?;
        Ok(vec![Some(out), Some(h), Some(c)])
    }
}

/// `[query, key, value, key_padding_mask?, attn_mask?]` with the flags `need_weights`,
/// `average_attn_weights` and `is_causal`, to `[output, weights?]`.
impl<B: Backend> Layer<B> for MultiheadAttention<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], flags: &Args<'_>) -> Outputs<B> {
        let args = AttentionArgs {
            key_padding_mask: optional(inputs, 3),
            need_weights: flag(flags, "need_weights", true)?,
            attn_mask: optional(inputs, 4),
            average_attn_weights: flag(flags, "average_attn_weights", true)?,
            is_causal: flag(flags, "is_causal", false)?,
        };
        let (out, weights) = self.forward(
            input(inputs, 0, "query")?,
            input(inputs, 1, "key")?,
            input(inputs, 2, "value")?,
            args,
        )?;
        Ok(vec![Some(out), weights])
    }
}

/// `[src, src_mask?, src_key_padding_mask?]` with the flag `is_causal`, to `[output]`.
impl<B: Backend> Layer<B> for TransformerEncoderLayer<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], flags: &Args<'_>) -> Outputs<B> {
        let out = self.forward(
            input(inputs, 0, "src")?,
            optional(inputs, 1),
            optional(inputs, 2),
            flag(flags, "is_causal", false)?,
        )?;
        Ok(vec![Some(out)])
    }
}

/// `[tgt, memory, tgt_mask?, memory_mask?, tgt_key_padding_mask?, memory_key_padding_mask?]` to
/// `[output]`.
impl<B: Backend> Layer<B> for TransformerDecoderLayer<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], flags: &Args<'_>) -> Outputs<B> {
        for key in ["tgt_is_causal", "memory_is_causal"] {
            if flag(flags, key, false)? {
                return Err(Error::invalid(
                    "TransformerDecoderLayer",
                    format!("{key}=True: pass the causal mask as a mask instead"),
                ));
            }
        }
        let out = self.forward(
            input(inputs, 0, "tgt")?,
            input(inputs, 1, "memory")?,
            optional(inputs, 2),
            optional(inputs, 3),
            optional(inputs, 4),
            optional(inputs, 5),
        )?;
        Ok(vec![Some(out)])
    }
}

/// `[input1, input2]` to `[output]`.
impl<B: Backend> Layer<B> for Bilinear<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], _: &Args<'_>) -> Outputs<B> {
        let out = self.forward2(input(inputs, 0, "input1")?, input(inputs, 1, "input2")?)?;
        Ok(vec![Some(out)])
    }
}

/// `[input_ids, attention_mask?, token_type_ids?]` (`transformers`' order) to
/// `[last_hidden_state, pooler_output]`.
impl<B: Backend> Layer<B> for Bert<B> {
    fn call(&self, inputs: &[Option<Tensor<B>>], _: &Args<'_>) -> Outputs<B> {
        let ids = input(inputs, 0, "input_ids")?;
        let out = self.run(ids, optional(inputs, 2), optional(inputs, 1))?;
        Ok(vec![Some(out.last_hidden_state), Some(out.pooler_output)])
    }
}
