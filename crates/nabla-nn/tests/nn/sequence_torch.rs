//! LayerNorm, Dropout, RNN/LSTM/GRU, MultiheadAttention and the transformer layers against PyTorch.
//!
//! The fixture `fixtures/sequence.json` comes from `scripts/gen_torch_sequence_fixtures.py` (PyTorch,
//! float64, eval mode): parameters by state_dict name, inputs, outputs, and the gradients of
//! `sum_i sum(output_i * loss_weights_i)` with respect to the inputs and every parameter.

use crate::torch_support::{T, cpu, shape_of};
use nabla_core::{DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::{
    AttentionArgs, Dropout, Forward, GRU, LSTM, LayerNorm, Module, MultiheadAttention,
    MultiheadAttentionConfig, RNN, RnnConfig, RnnNonlinearity, Strictness, TransformerActivation,
    TransformerDecoderLayer, TransformerEncoderLayer, TransformerLayerConfig, load_state_dict,
};
use nabla_tensor::Tensor;
use serde_json::Value;
use std::collections::HashMap;

const TOL: f64 = 1e-9;

fn fixture() -> &'static Value {
    crate::torch_support::fixture("sequence.json")
}

/// A fixture tensor: `{"shape", "dtype", "data"}`; bool data is stored as 0/1.
fn tensor(v: &Value) -> T {
    let data: Vec<f64> = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| match x.as_str() {
            // The fixture writes non-finite values as strings.
            Some(s) => s.parse::<f64>().expect("inf, -inf or nan"),
            None => x.as_f64().expect("number"),
        })
        .collect();
    let t = Tensor::from_vec(data, shape_of(v), &cpu()).expect("tensor");
    if v["dtype"] == "bool" {
        t.gt(0.5).expect("bool")
    } else {
        t
    }
}

fn assert_close(what: &str, actual: &T, expected: &T) {
    crate::torch_support::assert_tensors_close(what, actual, expected, TOL, TOL);
}

/// One fixture case: its inputs, differentiable where the fixture has their gradients.
struct Case {
    value: &'static Value,
    name: &'static str,
    inputs: HashMap<String, T>,
}

impl Case {
    fn load(name: &'static str) -> Case {
        let value = &fixture()["cases"][name];
        assert!(value.is_object(), "no fixture case {name}");
        let mut inputs = HashMap::new();
        for (k, v) in value["inputs"].as_object().expect("inputs") {
            let t = tensor(v);
            let t = if value["input_grads"].get(k).is_some() {
                Tensor::var(k.clone(), t).expect("var")
            } else {
                t
            };
            inputs.insert(k.clone(), t);
        }
        Case {
            value,
            name,
            inputs,
        }
    }

    fn input(&self, name: &str) -> &T {
        &self.inputs[name]
    }

    fn cfg(&self, key: &str) -> &Value {
        &self.value["config"][key]
    }

    fn usize(&self, key: &str) -> usize {
        self.cfg(key).as_u64().expect("integer setting") as usize
    }

    fn bool(&self, key: &str) -> bool {
        self.cfg(key).as_bool().unwrap_or(false)
    }

    fn f64(&self, key: &str) -> f64 {
        self.cfg(key).as_f64().expect("float setting")
    }

    /// Loads PyTorch's parameters into `module` strictly (every name must match).
    fn load_into(&self, module: &impl Module<CpuBackend>) {
        let state: Vec<(String, T)> = self.value["params"]
            .as_object()
            .expect("params")
            .iter()
            .map(|(k, v)| (k.clone(), tensor(v)))
            .collect();
        load_state_dict(module, &state, Strictness::Strict).expect("PyTorch's state loads");
    }

    /// Compares the outputs, then the gradients of the weighted-sum loss with respect to the inputs
    /// and every parameter.
    fn check(&self, module: &impl Module<CpuBackend>, outputs: &[T]) {
        let expected = self.value["outputs"].as_array().expect("outputs");
        let weights = self.value["loss_weights"].as_array().expect("weights");
        assert_eq!(outputs.len(), expected.len(), "{}: outputs", self.name);
        let mut loss: Option<T> = None;
        for (i, (o, (e, w))) in outputs.iter().zip(expected.iter().zip(weights)).enumerate() {
            assert_close(&format!("{} output {i}", self.name), o, &tensor(e));
            let term = o.mul(tensor(w)).and_then(|t| t.sum_all()).expect("loss");
            loss = Some(match loss {
                Some(l) => l.add(&term).expect("loss"),
                None => term,
            });
        }
        let grads = loss.expect("an output").backward().expect("backward");
        for (k, g) in self.value["input_grads"].as_object().expect("input grads") {
            let actual = grads.get(self.input(k)).expect("input gradient");
            assert_close(&format!("{} d/d{k}", self.name), actual, &tensor(g));
        }
        let param_grads = self.value["param_grads"].as_object().expect("param grads");
        let params = module.named_parameters();
        assert_eq!(
            params.len(),
            param_grads.len(),
            "{}: parameter count",
            self.name
        );
        for (name, p) in params {
            let actual = p.grad(&grads).expect("parameter gradient");
            assert_close(
                &format!("{} d/d{name}", self.name),
                &actual,
                &tensor(&param_grads[&name]),
            );
        }
    }
}

#[test]
fn layer_norm_matches_torch() -> Result<()> {
    for name in ["layer_norm", "layer_norm_nobias"] {
        let c = Case::load(name);
        let shape: Vec<usize> = c
            .cfg("normalized_shape")
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("dim") as usize)
            .collect();
        let norm = LayerNorm::new(
            shape,
            c.f64("eps"),
            true,
            c.bool("bias"),
            DType::F64,
            &cpu(),
        )?;
        c.load_into(&norm);
        let y = norm.forward(c.input("x"))?;
        c.check(&norm, &[y]);
    }
    Ok(())
}

fn rnn_config(c: &Case) -> RnnConfig {
    RnnConfig {
        num_layers: c.usize("num_layers"),
        bias: c.bool("bias"),
        batch_first: c.bool("batch_first"),
        bidirectional: c.bool("bidirectional"),
        ..RnnConfig::new(c.usize("input_size"), c.usize("hidden_size"))
    }
}

#[test]
fn rnn_matches_torch() -> Result<()> {
    for name in ["rnn_tanh", "rnn_relu"] {
        let c = Case::load(name);
        let nonlinearity = match c.cfg("nonlinearity").as_str() {
            Some("relu") => RnnNonlinearity::Relu,
            _ => RnnNonlinearity::Tanh,
        };
        let mut rnn = RNN::new(
            rnn_config(&c),
            nonlinearity,
            DType::F64,
            &mut Generator::new(1),
            &cpu(),
        )?;
        rnn.eval();
        c.load_into(&rnn);
        let (out, h) = rnn.forward(c.input("x"), c.inputs.get("h0"))?;
        c.check(&rnn, &[out, h]);
    }
    Ok(())
}

#[test]
fn lstm_matches_torch() -> Result<()> {
    for name in ["lstm", "lstm_unbatched"] {
        let c = Case::load(name);
        let mut lstm = LSTM::new(rnn_config(&c), DType::F64, &mut Generator::new(2), &cpu())?;
        lstm.eval();
        c.load_into(&lstm);
        let state = c.inputs.get("h0").zip(c.inputs.get("c0"));
        let (out, (h, cell)) = lstm.forward(c.input("x"), state)?;
        c.check(&lstm, &[out, h, cell]);
    }
    Ok(())
}

#[test]
fn gru_matches_torch() -> Result<()> {
    for name in ["gru", "gru_unbatched"] {
        let c = Case::load(name);
        let mut gru = GRU::new(rnn_config(&c), DType::F64, &mut Generator::new(3), &cpu())?;
        gru.eval();
        c.load_into(&gru);
        let (out, h) = gru.forward(c.input("x"), c.inputs.get("h0"))?;
        c.check(&gru, &[out, h]);
    }
    Ok(())
}

fn mha(c: &Case) -> Result<MultiheadAttention<CpuBackend>> {
    let config = MultiheadAttentionConfig {
        batch_first: c.bool("batch_first"),
        ..MultiheadAttentionConfig::new(c.usize("embed_dim"), c.usize("num_heads"))
    };
    let m = MultiheadAttention::new(config, DType::F64, &mut Generator::new(4), &cpu())?;
    c.load_into(&m);
    Ok(m)
}

#[test]
fn multihead_self_attention_with_causal_and_padding_masks_matches_torch() -> Result<()> {
    let c = Case::load("mha_self");
    let m = mha(&c)?;
    let x = c.input("x");
    let args = AttentionArgs {
        key_padding_mask: Some(c.input("key_padding_mask")),
        attn_mask: Some(c.input("attn_mask")),
        ..AttentionArgs::default()
    };
    let (y, w) = m.forward(x, x, x, args)?;
    c.check(&m, &[y.clone(), w.expect("weights")]);

    // is_causal without a mask builds the same causal mask.
    let causal = AttentionArgs {
        key_padding_mask: Some(c.input("key_padding_mask")),
        is_causal: true,
        ..AttentionArgs::default()
    };
    assert_close("is_causal", &m.forward(x, x, x, causal)?.0, &y);
    Ok(())
}

#[test]
fn multihead_cross_attention_with_float_mask_and_per_head_weights_matches_torch() -> Result<()> {
    let c = Case::load("mha_cross");
    let m = mha(&c)?;
    let args = AttentionArgs {
        key_padding_mask: Some(c.input("key_padding_mask")),
        attn_mask: Some(c.input("attn_mask")),
        average_attn_weights: false,
        ..AttentionArgs::default()
    };
    let (y, w) = m.forward(c.input("q"), c.input("k"), c.input("v"), args)?;
    c.check(&m, &[y, w.expect("weights")]);
    Ok(())
}

fn transformer_config(c: &Case) -> TransformerLayerConfig {
    TransformerLayerConfig {
        dim_feedforward: c.usize("dim_feedforward"),
        dropout: c.f64("dropout"),
        activation: match c.cfg("activation").as_str() {
            Some("gelu") => TransformerActivation::Gelu,
            _ => TransformerActivation::Relu,
        },
        layer_norm_eps: c.f64("layer_norm_eps"),
        batch_first: c.bool("batch_first"),
        norm_first: c.bool("norm_first"),
        ..TransformerLayerConfig::new(c.usize("d_model"), c.usize("nhead"))
    }
}

#[test]
fn transformer_encoder_layers_match_torch() -> Result<()> {
    for name in ["encoder_post", "encoder_pre"] {
        let c = Case::load(name);
        let mut layer = TransformerEncoderLayer::new(
            transformer_config(&c),
            DType::F64,
            &mut Generator::new(5),
            &cpu(),
        )?;
        layer.eval();
        c.load_into(&layer);
        let y = layer.forward(
            c.input("src"),
            Some(c.input("src_mask")),
            Some(c.input("src_key_padding_mask")),
            false,
        )?;
        c.check(&layer, std::slice::from_ref(&y));
        let causal = layer.forward(
            c.input("src"),
            None,
            Some(c.input("src_key_padding_mask")),
            true,
        )?;
        assert_close("encoder is_causal", &causal, &y);
    }
    Ok(())
}

#[test]
fn transformer_decoder_layers_match_torch() -> Result<()> {
    for name in ["decoder_post", "decoder_pre"] {
        let c = Case::load(name);
        let mut layer = TransformerDecoderLayer::new(
            transformer_config(&c),
            DType::F64,
            &mut Generator::new(6),
            &cpu(),
        )?;
        layer.eval();
        c.load_into(&layer);
        let y = layer.forward(
            c.input("tgt"),
            c.input("memory"),
            Some(c.input("tgt_mask")),
            Some(c.input("memory_mask")),
            Some(c.input("tgt_key_padding_mask")),
            Some(c.input("memory_key_padding_mask")),
        )?;
        c.check(&layer, &[y]);
    }
    Ok(())
}

#[test]
fn recurrent_parameter_names_and_init_follow_torch() -> Result<()> {
    let config = RnnConfig {
        num_layers: 2,
        bidirectional: true,
        ..RnnConfig::new(3, 16)
    };
    let lstm = LSTM::new(config, DType::F64, &mut Generator::new(7), &cpu())?;
    let names: Vec<String> = lstm
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut expected = Vec::new();
    for suffix in ["l0", "l0_reverse", "l1", "l1_reverse"] {
        for kind in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"] {
            expected.push(format!("{kind}_{suffix}"));
        }
    }
    assert_eq!(names, expected);
    let w = lstm.param("weight_ih_l1").expect("weight_ih_l1");
    assert_eq!(w.shape(), vec![64, 32]);
    let bound = 1.0 / 4.0;
    for (_, p) in lstm.named_parameters() {
        assert!(p.data().to_vec::<f64>()?.iter().all(|v| v.abs() <= bound));
    }
    let gru = GRU::new(
        RnnConfig {
            bias: false,
            ..RnnConfig::new(3, 4)
        },
        DType::F32,
        &mut Generator::new(7),
        &cpu(),
    )?;
    assert_eq!(
        gru.param("weight_hh_l0").expect("weight").shape(),
        vec![12, 4]
    );
    assert_eq!(gru.named_parameters().len(), 2);
    Ok(())
}

#[test]
fn attention_and_norm_init_follow_torch() -> Result<()> {
    let m = MultiheadAttention::new(
        MultiheadAttentionConfig::new(8, 4),
        DType::F64,
        &mut Generator::new(8),
        &cpu(),
    )?;
    let zero = |t: T| t.to_vec::<f64>().expect("f64").iter().all(|&v| v == 0.0);
    assert!(zero(m.in_proj_bias.as_ref().expect("bias").data()));
    assert!(zero(m.out_proj.bias.as_ref().expect("bias").data()));
    // Xavier-uniform bound for [24, 8]: sqrt(6 / 32).
    let bound = (6.0f64 / 32.0).sqrt();
    assert!(
        m.in_proj_weight
            .data()
            .to_vec::<f64>()?
            .iter()
            .all(|v| v.abs() <= bound)
    );
    let norm = LayerNorm::new(vec![2, 3], 1e-5, true, true, DType::F64, &cpu())?;
    assert_eq!(
        norm.weight
            .as_ref()
            .expect("weight")
            .data()
            .to_vec::<f64>()?,
        vec![1.0; 6]
    );
    assert!(zero(norm.bias.as_ref().expect("bias").data()));
    let plain = LayerNorm::<CpuBackend>::new(vec![3], 1e-5, false, true, DType::F64, &cpu())?;
    assert_eq!(plain.named_parameters().len(), 0);
    Ok(())
}

#[test]
fn attention_unbatched_input_and_per_head_masks_agree_with_the_batched_forms() -> Result<()> {
    let c = Case::load("mha_self");
    let m = mha(&c)?;
    let x = c.input("x").detach();
    let mask = c.input("attn_mask");
    // Unbatched [L, E] is batch 0 of [L, N, E].
    let x0 = x.select_index(1, 0)?;
    let args = AttentionArgs {
        attn_mask: Some(mask),
        ..AttentionArgs::default()
    };
    let (y, w) = m.forward(&x, &x, &x, args)?;
    let args = AttentionArgs {
        attn_mask: Some(mask),
        ..AttentionArgs::default()
    };
    let (y0, w0) = m.forward(&x0, &x0, &x0, args)?;
    assert_close("unbatched output", &y0, &y.select_index(1, 0)?);
    assert_close(
        "unbatched weights",
        &w0.expect("weights"),
        &w.expect("weights").select_index(0, 0)?,
    );
    // A [N * num_heads, L, S] mask repeating the [L, S] one gives the same result.
    let per_head = mask.unsqueeze(0)?.broadcast_to([4, 4, 4])?;
    let args = AttentionArgs {
        attn_mask: Some(&per_head),
        ..AttentionArgs::default()
    };
    assert_close("per-head mask", &m.forward(&x, &x, &x, args)?.0, &y);
    Ok(())
}

#[test]
fn fully_masked_query_rows_give_nan_as_torch() -> Result<()> {
    let m = MultiheadAttention::new(
        MultiheadAttentionConfig::new(4, 2),
        DType::F64,
        &mut Generator::new(9),
        &cpu(),
    )?;
    let x = Tensor::randn([3, 1, 4], DType::F64, &mut Generator::new(10), &cpu())?;
    let all = Tensor::ones([1, 3], DType::F64, &cpu())?.gt(0.5)?;
    let args = AttentionArgs {
        key_padding_mask: Some(&all),
        ..AttentionArgs::default()
    };
    let (y, _) = m.forward(&x, &x, &x, args)?;
    assert!(y.to_vec::<f64>()?.iter().all(|v| v.is_nan()));
    Ok(())
}

#[test]
fn dropout_statistics() -> Result<()> {
    let cpu = cpu();
    let x = Tensor::ones([20_000], DType::F64, &cpu)?;
    let mut drop = Dropout::new(0.3, &mut Generator::new(11))?;
    assert!(drop.is_training());
    let y = drop.forward(&x)?.to_vec::<f64>()?;
    let kept: Vec<f64> = y.iter().copied().filter(|&v| v != 0.0).collect();
    let fraction = kept.len() as f64 / y.len() as f64;
    assert!((fraction - 0.7).abs() < 0.015, "kept fraction {fraction}");
    assert!(kept.iter().all(|v| (v - 1.0 / 0.7).abs() < 1e-12));
    // The mean is preserved in expectation; a second call draws a fresh mask.
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    assert!((mean - 1.0).abs() < 0.03, "mean {mean}");
    assert_ne!(drop.forward(&x)?.to_vec::<f64>()?, y);
    // The gradient is the same mask and scale.
    let v = Tensor::var("v", Tensor::ones([1000], DType::F64, &cpu)?)?;
    let out = drop.forward(&v)?;
    let grads = out.sum_all()?.backward()?;
    assert_eq!(
        grads.get(&v).expect("grad").to_vec::<f64>()?,
        out.to_vec::<f64>()?
    );
    Module::<CpuBackend>::eval(&mut drop);
    assert_eq!(drop.forward(&x)?.to_vec::<f64>()?, vec![1.0; 20_000]);
    let zero = Dropout::new(0.0, &mut Generator::new(12))?;
    assert_eq!(zero.forward(&x)?.to_vec::<f64>()?, vec![1.0; 20_000]);
    let all = Dropout::new(1.0, &mut Generator::new(13))?;
    assert_eq!(all.forward(&x)?.to_vec::<f64>()?, vec![0.0; 20_000]);
    for p in [-0.1, 1.5, f64::NAN] {
        assert!(Dropout::new(p, &mut Generator::new(14)).is_err(), "p = {p}");
    }
    Ok(())
}

#[test]
fn training_mode_turns_dropout_on_in_recurrent_and_transformer_layers() -> Result<()> {
    let cpu = cpu();
    let config = RnnConfig {
        num_layers: 2,
        dropout: 0.5,
        ..RnnConfig::new(3, 8)
    };
    let mut gru = GRU::new(config, DType::F64, &mut Generator::new(15), &cpu)?;
    let x = Tensor::randn([6, 2, 3], DType::F64, &mut Generator::new(16), &cpu)?;
    let train = gru.forward(&x, None)?.0.to_vec::<f64>()?;
    gru.eval();
    let eval_a = gru.forward(&x, None)?.0.to_vec::<f64>()?;
    assert_ne!(train, eval_a);
    assert_eq!(eval_a, gru.forward(&x, None)?.0.to_vec::<f64>()?);

    let config = TransformerLayerConfig {
        dim_feedforward: 8,
        dropout: 0.5,
        ..TransformerLayerConfig::new(4, 2)
    };
    let mut layer =
        TransformerEncoderLayer::new(config, DType::F64, &mut Generator::new(17), &cpu)?;
    let src = Tensor::randn([3, 2, 4], DType::F64, &mut Generator::new(18), &cpu)?;
    let train = layer.forward(&src, None, None, false)?.to_vec::<f64>()?;
    layer.eval();
    assert_ne!(
        train,
        layer.forward(&src, None, None, false)?.to_vec::<f64>()?
    );
    Ok(())
}

#[test]
fn bad_arguments_and_shapes_are_errors() -> Result<()> {
    let cpu = cpu();
    let mut rng = Generator::new(19);
    let message = |r: Result<T>| r.err().map(|e| e.to_string()).unwrap_or_default();

    let err = MultiheadAttention::<CpuBackend>::new(
        MultiheadAttentionConfig::new(6, 4),
        DType::F64,
        &mut rng,
        &cpu,
    )
    .expect_err("6 heads / 4")
    .to_string();
    assert!(
        err.contains("divisible") && err.contains("6") && err.contains("4"),
        "{err}"
    );
    let bad_layer = TransformerLayerConfig::new(6, 4);
    assert!(
        TransformerEncoderLayer::<CpuBackend>::new(bad_layer, DType::F64, &mut rng, &cpu).is_err()
    );
    let bad_dropout = MultiheadAttentionConfig {
        dropout: 2.0,
        ..MultiheadAttentionConfig::new(4, 2)
    };
    assert!(
        MultiheadAttention::<CpuBackend>::new(bad_dropout, DType::F64, &mut rng, &cpu).is_err()
    );

    let m = MultiheadAttention::new(
        MultiheadAttentionConfig::new(4, 2),
        DType::F64,
        &mut rng,
        &cpu,
    )?;
    let q = Tensor::zeros([3, 2, 4], DType::F64, &cpu)?;
    let wide = Tensor::zeros([3, 2, 5], DType::F64, &cpu)?;
    let err = message(
        m.forward(&wide, &q, &q, AttentionArgs::default())
            .map(|r| r.0),
    );
    assert!(
        err.contains("embed_dim = 4") && err.contains("[3, 2, 5]"),
        "{err}"
    );
    let short_batch = Tensor::zeros([3, 1, 4], DType::F64, &cpu)?;
    assert!(
        m.forward(&q, &short_batch, &short_batch, AttentionArgs::default())
            .is_err()
    );
    let kpm = Tensor::zeros([3, 3], DType::F64, &cpu)?.gt(0.5)?;
    let args = AttentionArgs {
        key_padding_mask: Some(&kpm),
        ..AttentionArgs::default()
    };
    let err = message(m.forward(&q, &q, &q, args).map(|r| r.0));
    assert!(
        err.contains("key_padding_mask") && err.contains("[3, 3]"),
        "{err}"
    );
    let mask = Tensor::zeros([3, 4], DType::F64, &cpu)?;
    let args = AttentionArgs {
        attn_mask: Some(&mask),
        ..AttentionArgs::default()
    };
    let err = message(m.forward(&q, &q, &q, args).map(|r| r.0));
    assert!(err.contains("attn_mask") && err.contains("[3, 4]"), "{err}");
    let int_mask = Tensor::zeros([3, 3], DType::I64, &cpu)?;
    let args = AttentionArgs {
        attn_mask: Some(&int_mask),
        ..AttentionArgs::default()
    };
    assert!(m.forward(&q, &q, &q, args).is_err());

    let rnn = RNN::new(
        RnnConfig {
            num_layers: 2,
            ..RnnConfig::new(3, 4)
        },
        RnnNonlinearity::Tanh,
        DType::F64,
        &mut rng,
        &cpu,
    )?;
    let err = message(
        rnn.forward(&Tensor::zeros([5, 2, 7], DType::F64, &cpu)?, None)
            .map(|r| r.0),
    );
    assert!(
        err.contains("input_size = 3") && err.contains("[5, 2, 7]"),
        "{err}"
    );
    let x = Tensor::zeros([5, 2, 3], DType::F64, &cpu)?;
    let h0 = Tensor::zeros([1, 2, 4], DType::F64, &cpu)?;
    let err = message(rnn.forward(&x, Some(&h0)).map(|r| r.0));
    assert!(
        err.contains("h_0") && err.contains("[2, 2, 4]") && err.contains("[1, 2, 4]"),
        "{err}"
    );
    assert!(
        rnn.forward(&Tensor::zeros([1, 5, 2, 3], DType::F64, &cpu)?, None)
            .is_err()
    );
    assert!(
        rnn.forward(&Tensor::zeros([0, 2, 3], DType::F64, &cpu)?, None)
            .is_err()
    );
    let lstm = LSTM::new(RnnConfig::new(3, 4), DType::F64, &mut rng, &cpu)?;
    let h = Tensor::zeros([1, 2, 4], DType::F64, &cpu)?;
    let c_bad = Tensor::zeros([1, 2, 5], DType::F64, &cpu)?;
    let err = message(lstm.forward(&x, Some((&h, &c_bad))).map(|r| r.0));
    assert!(err.contains("c_0"), "{err}");
    for config in [
        RnnConfig {
            dropout: 1.5,
            ..RnnConfig::new(3, 4)
        },
        RnnConfig {
            num_layers: 0,
            ..RnnConfig::new(3, 4)
        },
        RnnConfig::new(3, 0),
    ] {
        assert!(GRU::<CpuBackend>::new(config, DType::F64, &mut rng, &cpu).is_err());
    }

    let norm = LayerNorm::new(vec![2, 3], 1e-5, true, true, DType::F64, &cpu)?;
    let err = message(norm.forward(&Tensor::zeros([4, 3, 2], DType::F64, &cpu)?));
    assert!(
        err.contains("normalized_shape [2, 3]") && err.contains("[4, 3, 2]"),
        "{err}"
    );
    assert!(LayerNorm::<CpuBackend>::new(vec![], 1e-5, true, true, DType::F64, &cpu).is_err());
    assert!(LayerNorm::<CpuBackend>::new(vec![3], -1.0, true, true, DType::F64, &cpu).is_err());
    Ok(())
}
