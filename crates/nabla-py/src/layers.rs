//! `nabla_rs._nabla.nn.Layer`: nabla-nn's layers run from Python, so that Python and Rust share one
//! implementation of each (its initialisation, checks and forward pass). `nabla_rs.nn` makes a
//! PyTorch-style module class of every entry of [`layer_table!`]'s table.
//!
//! The Python module owns the parameters and buffers (tensors the optimizers update in place); the
//! Rust layer is built once, with PyTorch's initialisation, and at each call its `Param`s are bound
//! to the module's current tensors (`Param::bind`), so gradients reach them. Inside `jit` or `vmap`
//! the layer is built again for the traced program and bound to the traced values.

use crate::convert::to_value;
use crate::error::IntoPyResult;
use crate::json::{Args, to_json, to_py_tuples};
use crate::layer_calls::{attention_config, nonlinearity, rnn_config, transformer_config};
use crate::ops::with_generator;
use crate::tensor::PyTensor;
use crate::value::{Group, Value, unify};
use nabla_any::AnyBackend;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_models::{Bert, BertConfig, Gpt2, Gpt2Config, ResNet, ResNetConfig, Vit, VitConfig};
use nabla_nn::activation::{
    ELU, Flatten, GELU, Identity, LeakyReLU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Softplus,
    Tanh,
};
use nabla_nn::{
    AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, BatchNorm1d, BatchNorm2d, Bilinear, Conv1d, Conv2d,
    ConvOptions, ConvTranspose2d, Dropout, Embedding, Forward, GRU, GroupNorm, LSTM, LayerNorm,
    Linear, MaxPool1d, MaxPool2d, Module, MultiheadAttention, Param, ParamKind, RMSNorm, RNN,
    TransformerDecoderLayer, TransformerEncoderLayer,
};
use nabla_tensor::Tensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::{Value as Json, json};
use std::sync::Mutex;

/// A layer's outputs: `None` for an optional one it did not compute (attention weights).
pub(crate) type Outputs<B> = Vec<Option<Tensor<B>>>;

/// A layer of any kind, on backend `B`.
type Boxed<B> = Box<dyn Layer<B>>;

/// What the binding runs: tensors in, tensors out (`None` for an optional one left out), with the
/// call's keyword flags (`need_weights`, `is_causal`, ...).
pub(crate) trait Layer<B: Backend>: Module<B> + Send + Sync {
    /// Runs the layer.
    fn call(
        &self,
        inputs: &[Option<Tensor<B>>],
        flags: &Args<'_>,
    ) -> Result<Vec<Option<Tensor<B>>>>;
}

/// A layer of one input and one output (a [`Forward`]).
pub(crate) struct Single<L>(pub L);

impl<B: Backend, L: Module<B>> Module<B> for Single<L> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        self.0.visit(prefix, visitor);
    }

    fn set_training(&mut self, training: bool) {
        self.0.set_training(training);
    }
}

impl<B: Backend, L: Forward<B> + Send + Sync> Layer<B> for Single<L> {
    fn call(&self, inputs: &[Option<Tensor<B>>], _flags: &Args<'_>) -> Result<Outputs<B>> {
        Ok(vec![Some(self.0.forward(input(inputs, 0, "input")?)?)])
    }
}

/// Input `i` (`what` in errors), which must be given.
pub(crate) fn input<'t, B: Backend>(
    inputs: &'t [Option<Tensor<B>>],
    i: usize,
    what: &str,
) -> Result<&'t Tensor<B>> {
    inputs
        .get(i)
        .and_then(Option::as_ref)
        .ok_or_else(|| Error::invalid("nn", format!("the layer needs its {what}")))
}

/// Input `i` if given.
pub(crate) fn optional<B: Backend>(inputs: &[Option<Tensor<B>>], i: usize) -> Option<&Tensor<B>> {
    inputs.get(i).and_then(Option::as_ref)
}

/// A layer that implements [`Layer`] itself (several inputs or outputs).
pub(crate) fn direct<T>(layer: T) -> T {
    layer
}

/// `None` for a required argument, the default otherwise.
macro_rules! default_of {
    () => {
        None
    };
    ($d:tt) => {
        Some(json!($d))
    };
}

/// The layers Python can build: each entry is PyTorch's class name, its arguments (PyTorch's names,
/// order and defaults; a bare name is required) and how nabla-nn builds it for any backend from
/// `args` (an [`Args`]), `dtype`, `rng` and `backend`. One entry per layer.
macro_rules! layer_table {
    ($($name:literal [$($arg:literal $(= $default:tt)?),*] => $wrap:ident |$a:ident, $d:ident, $r:ident, $b:ident| $build:expr;)*) => {
        /// The class names of the table.
        const LAYERS: &[&str] = &[$($name),*];

        /// `(name, default)` of each argument of layer `kind`, in PyTorch's order (`None`: required).
        fn layer_signature(kind: &str) -> Option<Vec<(&'static str, Option<Json>)>> {
            match kind {
                $($name => Some(vec![$(($arg, default_of!($($default)?))),*]),)*
                _ => None,
            }
        }

        /// Builds layer `kind` on `backend`.
        fn build_layer<B: Backend>(
            kind: &str,
            args: &Args<'_>,
            dtype: DType,
            rng: &mut Generator,
            backend: &B,
        ) -> Result<Boxed<B>> {
            match kind {
                $($name => {
                    #[allow(unused_variables)]
                    let ($a, $d, $r, $b) = (args, dtype, &mut *rng, backend);
                    Ok(Box::new($wrap($build?)))
                })*
                other => Err(Error::invalid("nn", format!("unknown layer {other:?}"))),
            }
        }
    };
}

/// Options of a convolution with `K`-sized windows from PyTorch's arguments.
fn conv_options<K: nabla_nn::SpatialSize>(
    a: &Args<'_>,
    size: impl Fn(&str) -> Result<K>,
) -> Result<ConvOptions<K>> {
    if a.text("padding_mode")? != "zeros" {
        return Err(a.bad("padding_mode", "'zeros' (the only padding nabla has)"));
    }
    let output_padding = if a.is_none("output_padding") {
        K::splat(0)
    } else {
        size("output_padding")?
    };
    Ok(ConvOptions {
        stride: size("stride")?,
        padding: size("padding")?,
        output_padding,
        dilation: size("dilation")?,
        groups: a.count("groups")?,
        bias: a.flag("bias")?,
    })
}

/// `stride`, where `None` means the kernel size.
fn opt_pair(a: &Args<'_>, key: &str) -> Result<Option<(usize, usize)>> {
    if a.is_none(key) {
        Ok(None)
    } else {
        a.pair(key).map(Some)
    }
}

fn opt_count(a: &Args<'_>, key: &str) -> Result<Option<usize>> {
    if a.is_none(key) {
        Ok(None)
    } else {
        a.count(key).map(Some)
    }
}

/// Refuses PyTorch options nabla lacks, naming them. (`inplace=True` is accepted everywhere: the
/// output is the same, only the input is not overwritten.)
fn refuse(a: &Args<'_>, key: &str, when: bool, why: &str) -> Result<()> {
    if when { Err(a.bad(key, why)) } else { Ok(()) }
}

layer_table! {
    "Linear" ["in_features", "out_features", "bias" = true] =>
        Single |a, d, r, b| Linear::new(a.count("in_features")?, a.count("out_features")?, a.flag("bias")?, d, r, b);
    "Conv1d" ["in_channels", "out_channels", "kernel_size", "stride" = 1, "padding" = 0, "dilation" = 1,
              "groups" = 1, "bias" = true, "padding_mode" = "zeros"] =>
        Single |a, d, r, b| Conv1d::new(a.count("in_channels")?, a.count("out_channels")?, a.count("kernel_size")?,
                                    conv_options(a, |k| a.count(k))?, d, r, b);
    "Conv2d" ["in_channels", "out_channels", "kernel_size", "stride" = 1, "padding" = 0, "dilation" = 1,
              "groups" = 1, "bias" = true, "padding_mode" = "zeros"] =>
        Single |a, d, r, b| Conv2d::new(a.count("in_channels")?, a.count("out_channels")?, a.pair("kernel_size")?,
                                    conv_options(a, |k| a.pair(k))?, d, r, b);
    "ConvTranspose2d" ["in_channels", "out_channels", "kernel_size", "stride" = 1, "padding" = 0,
                       "output_padding" = 0, "groups" = 1, "bias" = true, "dilation" = 1, "padding_mode" = "zeros"] =>
        Single |a, d, r, b| ConvTranspose2d::new(a.count("in_channels")?, a.count("out_channels")?,
                                             a.pair("kernel_size")?, conv_options(a, |k| a.pair(k))?, d, r, b);
    "MaxPool1d" ["kernel_size", "stride" = null, "padding" = 0, "dilation" = 1, "return_indices" = false,
                 "ceil_mode" = false] =>
        Single |a, d, r, b| {
            refuse(a, "return_indices", a.flag("return_indices")?, "False (use F.max_pool2d's indices)")?;
            MaxPool1d::new(a.count("kernel_size")?, opt_count(a, "stride")?, a.count("padding")?,
                           a.count("dilation")?, a.flag("ceil_mode")?)
        };
    "MaxPool2d" ["kernel_size", "stride" = null, "padding" = 0, "dilation" = 1, "return_indices" = false,
                 "ceil_mode" = false] =>
        Single |a, d, r, b| {
            refuse(a, "return_indices", a.flag("return_indices")?, "False (use F.max_pool2d's indices)")?;
            MaxPool2d::new(a.pair("kernel_size")?, opt_pair(a, "stride")?, a.pair("padding")?,
                           a.pair("dilation")?, a.flag("ceil_mode")?)
        };
    "AvgPool1d" ["kernel_size", "stride" = null, "padding" = 0, "ceil_mode" = false, "count_include_pad" = true] =>
        Single |a, d, r, b| AvgPool1d::new(a.count("kernel_size")?, opt_count(a, "stride")?,
                                          a.count("padding")?, a.flag("ceil_mode")?, a.flag("count_include_pad")?);
    "AvgPool2d" ["kernel_size", "stride" = null, "padding" = 0, "ceil_mode" = false, "count_include_pad" = true,
                 "divisor_override" = null] =>
        Single |a, d, r, b| AvgPool2d::new(a.pair("kernel_size")?, opt_pair(a, "stride")?,
                                          a.pair("padding")?, a.flag("ceil_mode")?, a.flag("count_include_pad")?,
                                          opt_count(a, "divisor_override")?);
    "AdaptiveAvgPool2d" ["output_size"] =>
        Single |a, d, r, b| AdaptiveAvgPool2d::new(a.pair("output_size")?);
    "BatchNorm1d" ["num_features", "eps" = 1e-5, "momentum" = 0.1, "affine" = true, "track_running_stats" = true] =>
        Single |a, d, r, b| BatchNorm1d::new(a.count("num_features")?, a.real("eps")?,
                                          a.opt_real("momentum")?, a.flag("affine")?, a.flag("track_running_stats")?, d, b);
    "BatchNorm2d" ["num_features", "eps" = 1e-5, "momentum" = 0.1, "affine" = true, "track_running_stats" = true] =>
        Single |a, d, r, b| BatchNorm2d::new(a.count("num_features")?, a.real("eps")?,
                                          a.opt_real("momentum")?, a.flag("affine")?, a.flag("track_running_stats")?, d, b);
    "GroupNorm" ["num_groups", "num_channels", "eps" = 1e-5, "affine" = true] =>
        Single |a, d, r, b| GroupNorm::new(a.count("num_groups")?, a.count("num_channels")?,
                                        a.real("eps")?, a.flag("affine")?, d, b);
    "LayerNorm" ["normalized_shape", "eps" = 1e-5, "elementwise_affine" = true, "bias" = true] =>
        Single |a, d, r, b| LayerNorm::new(a.counts("normalized_shape")?, a.real("eps")?,
                                        a.flag("elementwise_affine")?, a.flag("bias")?, d, b);
    "RMSNorm" ["normalized_shape", "eps" = null, "elementwise_affine" = true] =>
        Single |a, d, r, b| RMSNorm::new(&a.counts("normalized_shape")?, a.opt_real("eps")?,
                                      a.flag("elementwise_affine")?, d, b);
    "Dropout" ["p" = 0.5, "inplace" = false] => Single |a, d, r, b| Dropout::new(a.real("p")?, r);
    "Embedding" ["num_embeddings", "embedding_dim", "padding_idx" = null] =>
        Single |a, d, r, b| Embedding::new(a.count("num_embeddings")?, a.count("embedding_dim")?,
                                       if a.is_none("padding_idx") { None } else { Some(a.int("padding_idx")?) }, d, r, b);
    "RNN" ["input_size", "hidden_size", "num_layers" = 1, "nonlinearity" = "tanh", "bias" = true,
           "batch_first" = false, "dropout" = 0.0, "bidirectional" = false] =>
        direct |a, d, r, b| RNN::new(rnn_config(a)?, nonlinearity(a)?, d, r, b);
    "LSTM" ["input_size", "hidden_size", "num_layers" = 1, "bias" = true, "batch_first" = false,
            "dropout" = 0.0, "bidirectional" = false, "proj_size" = 0] =>
        direct |a, d, r, b| LSTM::new(rnn_config(a)?, d, r, b);
    "GRU" ["input_size", "hidden_size", "num_layers" = 1, "bias" = true, "batch_first" = false,
           "dropout" = 0.0, "bidirectional" = false] =>
        direct |a, d, r, b| GRU::new(rnn_config(a)?, d, r, b);
    "MultiheadAttention" ["embed_dim", "num_heads", "dropout" = 0.0, "bias" = true, "add_bias_kv" = false,
                          "add_zero_attn" = false, "kdim" = null, "vdim" = null, "batch_first" = false] =>
        direct |a, d, r, b| MultiheadAttention::new(attention_config(a)?, d, r, b);
    "TransformerEncoderLayer" ["d_model", "nhead", "dim_feedforward" = 2048, "dropout" = 0.1,
                               "activation" = "relu", "layer_norm_eps" = 1e-5, "batch_first" = false,
                               "norm_first" = false, "bias" = true] =>
        direct |a, d, r, b| TransformerEncoderLayer::new(transformer_config(a)?, d, r, b);
    "TransformerDecoderLayer" ["d_model", "nhead", "dim_feedforward" = 2048, "dropout" = 0.1,
                               "activation" = "relu", "layer_norm_eps" = 1e-5, "batch_first" = false,
                               "norm_first" = false, "bias" = true] =>
        direct |a, d, r, b| TransformerDecoderLayer::new(transformer_config(a)?, d, r, b);
    "Bilinear" ["in1_features", "in2_features", "out_features", "bias" = true] =>
        direct |a, d, r, b| Bilinear::new(a.count("in1_features")?, a.count("in2_features")?,
                                          a.count("out_features")?, a.flag("bias")?, d, r, b);
    "Identity" [] => Single |a, d, r, b| Ok::<_, Error>(Identity);
    "ReLU" ["inplace" = false] => Single |a, d, r, b| Ok::<_, Error>(ReLU);
    "Tanh" [] => Single |a, d, r, b| Ok::<_, Error>(Tanh);
    "Sigmoid" [] => Single |a, d, r, b| Ok::<_, Error>(Sigmoid);
    "SiLU" ["inplace" = false] => Single |a, d, r, b| Ok::<_, Error>(SiLU);
    "GELU" ["approximate" = "none"] =>
        Single |a, d, r, b| match a.text("approximate")? {
            "none" => Ok(GELU { tanh_approximation: false }),
            "tanh" => Ok(GELU { tanh_approximation: true }),
            _ => Err(a.bad("approximate", "'none' or 'tanh'")),
        };
    "LeakyReLU" ["negative_slope" = 0.01, "inplace" = false] =>
        Single |a, d, r, b| Ok::<_, Error>(LeakyReLU { negative_slope: a.real("negative_slope")? });
    "ELU" ["alpha" = 1.0, "inplace" = false] =>
        Single |a, d, r, b| Ok::<_, Error>(ELU { alpha: a.real("alpha")? });
    "Softplus" ["beta" = 1.0, "threshold" = 20.0] =>
        Single |a, d, r, b| Ok::<_, Error>(Softplus { beta: a.real("beta")?, threshold: a.real("threshold")? });
    "Softmax" ["dim" = null] =>
        Single |a, d, r, b| Ok::<_, Error>(Softmax { dim: softmax_dim(a)? });
    "LogSoftmax" ["dim" = null] =>
        Single |a, d, r, b| Ok::<_, Error>(LogSoftmax { dim: softmax_dim(a)? });
    "Flatten" ["start_dim" = 1, "end_dim" = (-1)] =>
        Single |a, d, r, b| Ok::<_, Error>(Flatten { start_dim: a.int("start_dim")? as isize,
                                                                    end_dim: a.int("end_dim")? as isize });
    "ResNet" ["arch" = "resnet18", "num_classes" = 1000, "in_channels" = 3, "small_images" = false,
              "base_width" = 64, "layers" = null] =>
        Single |a, d, r, b| ResNet::new(resnet_config(a)?, d, r, b);
    "GPT2" ["vocab_size" = 50257, "n_positions" = 1024, "n_embd" = 768, "n_layer" = 12, "n_head" = 12,
            "layer_norm_epsilon" = 1e-5] =>
        Single |a, d, r, b| Gpt2::new(Gpt2Config {
            vocab_size: a.count("vocab_size")?, n_positions: a.count("n_positions")?, n_embd: a.count("n_embd")?,
            n_layer: a.count("n_layer")?, n_head: a.count("n_head")?, layer_norm_epsilon: a.real("layer_norm_epsilon")?,
        }, d, r, b);
    "BERT" ["vocab_size" = 30522, "hidden_size" = 768, "num_hidden_layers" = 12, "num_attention_heads" = 12,
            "intermediate_size" = 3072, "max_position_embeddings" = 512, "type_vocab_size" = 2,
            "layer_norm_eps" = 1e-12, "hidden_dropout_prob" = 0.1, "attention_probs_dropout_prob" = 0.1,
            "pad_token_id" = 0] =>
        direct |a, d, r, b| Bert::new(BertConfig {
            vocab_size: a.count("vocab_size")?, hidden_size: a.count("hidden_size")?,
            num_hidden_layers: a.count("num_hidden_layers")?, num_attention_heads: a.count("num_attention_heads")?,
            intermediate_size: a.count("intermediate_size")?,
            max_position_embeddings: a.count("max_position_embeddings")?,
            type_vocab_size: a.count("type_vocab_size")?, layer_norm_eps: a.real("layer_norm_eps")?,
            hidden_dropout_prob: a.real("hidden_dropout_prob")?,
            attention_probs_dropout_prob: a.real("attention_probs_dropout_prob")?,
            pad_token_id: a.count("pad_token_id")?,
        }, d, r, b);
    "ViT" ["image_size" = 224, "patch_size" = 16, "num_channels" = 3, "hidden_size" = 768,
           "num_hidden_layers" = 12, "num_attention_heads" = 12, "intermediate_size" = 3072,
           "layer_norm_eps" = 1e-12, "hidden_dropout_prob" = 0.0, "attention_probs_dropout_prob" = 0.0,
           "num_labels" = 2] =>
        Single |a, d, r, b| Vit::new(VitConfig {
            image_size: a.count("image_size")?, patch_size: a.count("patch_size")?,
            num_channels: a.count("num_channels")?, hidden_size: a.count("hidden_size")?,
            num_hidden_layers: a.count("num_hidden_layers")?, num_attention_heads: a.count("num_attention_heads")?,
            intermediate_size: a.count("intermediate_size")?, layer_norm_eps: a.real("layer_norm_eps")?,
            hidden_dropout_prob: a.real("hidden_dropout_prob")?,
            attention_probs_dropout_prob: a.real("attention_probs_dropout_prob")?,
            num_labels: a.count("num_labels")?,
        }, d, r, b);
}

/// The zoo's ResNet configuration of `arch` (`resnet18` ... `resnet152`), with the stage depths
/// `layers` when given (four counts) and the other arguments.
fn resnet_config(a: &Args<'_>) -> Result<ResNetConfig> {
    let names = ResNetConfig::NAMES.join(", ");
    let mut config = ResNetConfig::from_name(a.text("arch")?, a.count("num_classes")?)
        .ok_or_else(|| a.bad("arch", &format!("one of {names}")))?;
    if !a.is_none("layers") {
        config.layers = a
            .counts("layers")?
            .try_into()
            .map_err(|_| a.bad("layers", "four block counts"))?;
    }
    config.in_channels = a.count("in_channels")?;
    config.small_images = a.flag("small_images")?;
    config.base_width = a.count("base_width")?;
    Ok(config)
}

/// `dim` of `Softmax`/`LogSoftmax`: PyTorch's `dim=None` is deprecated guesswork, so nabla asks.
fn softmax_dim(a: &Args<'_>) -> Result<isize> {
    if a.is_none("dim") {
        return Err(a.bad("dim", "given (the axis to normalise over)"));
    }
    Ok(a.int("dim")? as isize)
}

/// `[(name, required, default)]` of layer `kind`'s arguments, in PyTorch's order.
#[pyfunction]
fn layer_arguments<'py>(py: Python<'py>, kind: &str) -> PyResult<Bound<'py, PyList>> {
    let spec = layer_signature(kind).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown layer {kind:?}; nabla has {}",
            LAYERS.join(", ")
        ))
    })?;
    let rows = spec
        .into_iter()
        .map(|(name, default)| {
            let value = match &default {
                Some(v) => to_py_tuples(py, v)?,
                None => py.None().into_bound(py),
            };
            PyTuple::new(
                py,
                [
                    name.into_pyobject(py)?.into_any(),
                    default.is_none().into_pyobject(py)?.to_owned().into_any(),
                    value,
                ],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}

/// The `Param`s of `layer`, in declaration order, with their names.
fn params_of<B: Backend>(layer: &dyn Layer<B>) -> Vec<(String, Param<B>)> {
    let mut out = Vec::new();
    layer.visit("", &mut |name, p| out.push((name.to_string(), p.clone())));
    out
}

/// Binds `layer`'s parameters and buffers to `values` (in declaration order, as `named_tensors`
/// gave them) and calls it; returns the outputs and the buffers' values afterwards.
fn run<B: Backend>(
    layer: &mut dyn Layer<B>,
    inputs: &[Option<Tensor<B>>],
    flags: &Args<'_>,
    values: &[Tensor<B>],
    training: bool,
) -> Result<(Outputs<B>, Vec<Tensor<B>>)> {
    let params = params_of(layer);
    if params.len() != values.len() {
        return Err(Error::invalid(
            "nn",
            format!(
                "the layer has {} parameters and buffers, the module gave {}",
                params.len(),
                values.len()
            ),
        ));
    }
    for ((name, p), v) in params.iter().zip(values) {
        p.bind(v.clone())
            .map_err(|e| Error::invalid("nn", format!("{name}: {e}")))?;
    }
    layer.set_training(training);
    let outputs = layer.call(inputs, flags)?;
    let buffers = params
        .iter()
        .filter(|(_, p)| p.kind() == ParamKind::Buffer)
        .map(|(_, p)| p.data())
        .collect();
    Ok((outputs, buffers))
}

/// The call's operands as they arrive: the given inputs, then the module's tensors.
struct Operands<'a, B: Backend> {
    /// Which inputs were given (the others are `None`).
    given: &'a [bool],
    /// The given inputs, then the parameters and buffers.
    values: &'a [Tensor<B>],
    /// Number of given inputs.
    n: usize,
}

/// [`run`] on operands as they arrive.
fn call<B: Backend>(
    layer: &mut dyn Layer<B>,
    ops: Operands<'_, B>,
    flags: &Args<'_>,
    training: bool,
) -> Result<(Outputs<B>, Vec<Tensor<B>>)> {
    let inputs = lay_out(ops.given, &ops.values[..ops.n]);
    run(layer, &inputs, flags, &ops.values[ops.n..], training)
}

/// `present` values laid back out as `Option`s where `given` says an input was given.
fn lay_out<T: Clone>(given: &[bool], present: &[T]) -> Vec<Option<T>> {
    let mut next = present.iter();
    given
        .iter()
        .map(|&g| if g { next.next().cloned() } else { None })
        .collect()
}

/// A nabla-nn layer behind a `nabla_rs.nn` module.
#[pyclass(name = "Layer", module = "nabla_rs._nabla.nn")]
pub struct PyLayer {
    kind: String,
    args: Json,
    dtype: DType,
    /// The random stream a layer built again for a traced program starts from (a copy each time).
    traced_rng: Generator,
    eager: Mutex<Boxed<AnyBackend>>,
}

impl PyLayer {
    fn args(&self) -> Args<'_> {
        Args {
            op: "nn",
            kind: &self.kind,
            json: self.args.clone(),
        }
    }
}

#[pymethods]
impl PyLayer {
    /// `Layer(kind, args, dtype)`: nabla-nn's layer `kind` with PyTorch's arguments `args` (a dict),
    /// initialised from the global generator (`manual_seed`).
    #[new]
    fn new(kind: String, args: &Bound<'_, PyDict>, dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        let dtype = crate::dtype::parse_dtype(dtype)?;
        let args = to_json(args, &kind)?;
        let a = Args {
            op: "nn",
            kind: &kind,
            json: args.clone(),
        };
        let (traced_rng, eager) = with_generator(|rng| {
            let traced_rng = rng.fork();
            build_layer(&kind, &a, dtype, rng, &AnyBackend::cpu()).map(|l| (traced_rng, l))
        })
        .py()?;
        Ok(PyLayer {
            kind,
            args,
            dtype,
            traced_rng,
            eager: Mutex::new(eager),
        })
    }

    /// `[(name, is_buffer, tensor)]`: the initial parameters (leaves that require gradients) and
    /// buffers, in declaration order.
    fn named_tensors(&self) -> PyResult<Vec<(String, bool, PyTensor)>> {
        let layer = self.eager.lock().unwrap_or_else(|e| e.into_inner());
        params_of(layer.as_ref())
            .into_iter()
            .map(|(name, p)| {
                let buffer = p.kind() == ParamKind::Buffer;
                let t = if buffer {
                    p.data()
                } else {
                    p.data().leaf().py()?
                };
                Ok((name, buffer, PyTensor::eager(t)))
            })
            .collect()
    }

    /// Calls the layer on `inputs` (tensors, or `None` for optional ones left out) with the
    /// module's `tensors` (parameters and buffers, in the order of `named_tensors`) and the call's
    /// keyword `flags`; returns the outputs and the buffers' new values (none for a traced call).
    #[pyo3(signature = (inputs, tensors, training, flags = None))]
    fn forward(
        &self,
        py: Python<'_>,
        inputs: Vec<Option<Bound<'_, PyAny>>>,
        tensors: Vec<PyRef<'_, PyTensor>>,
        training: bool,
        flags: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(Vec<Option<PyTensor>>, Vec<PyTensor>)> {
        let flags = Args {
            op: "nn",
            kind: &self.kind,
            json: flags.map_or(Ok(Json::Null), |f| to_json(f, &self.kind))?,
        };
        let given: Vec<bool> = inputs.iter().map(Option::is_some).collect();
        let mut values = inputs
            .iter()
            .flatten()
            .map(|x| to_value(x, None))
            .collect::<PyResult<Vec<_>>>()?;
        let n = values.len();
        values.extend(tensors.iter().map(|t| t.value.clone()));
        drop(tensors);
        match unify(&values).py()? {
            Group::Eager(v) => {
                let (outputs, buffers) = py
                    .detach(|| {
                        let mut layer = self.eager.lock().unwrap_or_else(|e| e.into_inner());
                        let ops = Operands {
                            given: &given,
                            values: &v,
                            n,
                        };
                        call(layer.as_mut(), ops, &flags, training)
                    })
                    .py()?;
                Ok((
                    outputs
                        .into_iter()
                        .map(|o| o.map(PyTensor::eager))
                        .collect(),
                    buffers.into_iter().map(PyTensor::eager).collect(),
                ))
            }
            Group::Traced(v) => {
                let Some(backend) = v.first().map(|t| t.backend().clone()) else {
                    return Err(PyValueError::new_err("a traced call with no tensors"));
                };
                let mut rng = self.traced_rng.clone();
                let args = self.args();
                let mut layer =
                    build_layer(&self.kind, &args, self.dtype, &mut rng, &backend).py()?;
                let ops = Operands {
                    given: &given,
                    values: &v,
                    n,
                };
                // A traced call leaves the module's buffers as they are (as `jax.jit` of a pure
                // function would).
                let (outputs, _) = call(layer.as_mut(), ops, &flags, training).py()?;
                let wrap = |t| PyTensor::new(Value::Traced(t));
                Ok((
                    outputs.into_iter().map(|o| o.map(wrap)).collect(),
                    Vec::new(),
                ))
            }
        }
    }

    /// The layer's arguments, for `repr`.
    #[getter]
    fn args_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py_tuples(py, &self.args)
    }
}

/// Adds the layer class and its table to `nabla_rs._nabla.nn`.
pub fn add_layers(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLayer>()?;
    m.add_function(wrap_pyfunction!(layer_arguments, m)?)?;
    m.add("LAYERS", LAYERS.to_vec())?;
    Ok(())
}
