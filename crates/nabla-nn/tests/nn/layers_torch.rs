//! The convolution, pooling, normalisation, embedding, bilinear and positional layers against PyTorch
//! (fixture `tests/fixtures/layers.json`, written by `scripts/gen_torch_layer_fixtures.py`): forward
//! values and the gradients of `sum(output * cotangent)` with respect to the input and every
//! parameter, in float64, with PyTorch's parameters loaded strictly by their state-dict names. Plus
//! argument and shape errors, default initialisation and train/eval switching.

use crate::torch_support::{T, cpu, index_tensor, state_dict, tensor};
use nabla_core::{DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::{
    AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, BatchNorm1d, BatchNorm2d, Bilinear, Conv1d, Conv2d,
    ConvOptions, ConvTranspose2d, Embedding, Forward, GroupNorm, LearnedPositionalEmbedding,
    MaxPool1d, MaxPool2d, Module, RMSNorm, Sequential, SinusoidalPositionalEmbedding, Strictness,
    load_state_dict,
};
use nabla_tensor::Tensor;
use serde_json::Value;

fn fixture() -> &'static Value {
    crate::torch_support::fixture("layers.json")
}

/// Every case of `layer`, at least one.
fn cases(layer: &str) -> Vec<&'static Value> {
    crate::torch_support::cases(fixture(), "layer", layer)
}

fn assert_close(what: &str, got: &T, want: &Value) {
    let got = got.cast(DType::F64).unwrap();
    crate::torch_support::assert_close(what, &got, want, 1e-10, 1e-9);
}

fn state(c: &Value) -> Vec<(String, T)> {
    state_dict(&c["state"])
}

// Config readers: PyTorch's `int | tuple` arguments and optional ones.
fn cfg_usize(c: &Value, key: &str, default: usize) -> usize {
    c["config"]
        .get(key)
        .map_or(default, |v| v.as_u64().expect("int") as usize)
}
fn cfg_pair(c: &Value, key: &str, default: usize) -> (usize, usize) {
    match c["config"].get(key) {
        None => (default, default),
        Some(Value::Array(a)) => (
            a[0].as_u64().unwrap() as usize,
            a[1].as_u64().unwrap() as usize,
        ),
        Some(v) => (v.as_u64().unwrap() as usize, v.as_u64().unwrap() as usize),
    }
}
fn cfg_bool(c: &Value, key: &str, default: bool) -> bool {
    c["config"]
        .get(key)
        .map_or(default, |v| v.as_bool().expect("bool"))
}
fn cfg_f64(c: &Value, key: &str) -> Option<f64> {
    c["config"].get(key).and_then(Value::as_f64)
}

/// Loads the PyTorch state strictly, applies the module to the case's input(s), and compares the
/// output and the gradients of `sum(output * cotangent)` for the input(s) and every parameter.
fn check<M: Module<CpuBackend>>(c: &Value, module: &M, apply: impl Fn(&[T]) -> Result<T>) {
    let name = c["name"].as_str().unwrap();
    load_state_dict(module, &state(c), Strictness::Strict).expect("PyTorch state loads by name");
    check_step(name, c, module, apply);
}

fn check_step<M: Module<CpuBackend>>(
    name: &str,
    c: &Value,
    module: &M,
    apply: impl Fn(&[T]) -> Result<T>,
) {
    let integer_input = c["input"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(Value::is_i64);
    let mut inputs = Vec::new();
    for key in ["input", "input2"] {
        if let Some(v) = c.get(key) {
            let x = if integer_input {
                index_tensor(v)
            } else {
                Tensor::var(key, tensor(v)).unwrap()
            };
            inputs.push(x);
        }
    }
    let y = apply(&inputs).unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
    assert_close(&format!("{name}: output"), &y, &c["output"]);
    let grads = y
        .mul(tensor(&c["cotangent"]))
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let want = c["grads"].as_object().unwrap();
    let params = module.named_parameters();
    assert_eq!(
        want.len(),
        params.len() + if integer_input { 0 } else { inputs.len() },
        "{name}: gradients"
    );
    for (i, key) in ["input", "input2"]
        .iter()
        .enumerate()
        .take(if integer_input { 0 } else { inputs.len() })
    {
        let g = grads
            .get(&inputs[i])
            .unwrap_or_else(|| panic!("{name}: no gradient for {key}"));
        assert_close(&format!("{name}: d{key}"), g, &want[*key]);
    }
    for (pname, p) in params {
        let g = p
            .grad(&grads)
            .unwrap_or_else(|| panic!("{name}: no gradient for {pname}"));
        assert_close(&format!("{name}: d{pname}"), &g, &want[&pname]);
    }
}

fn forward1<'a, M: Forward<CpuBackend>>(m: &'a M) -> impl Fn(&[T]) -> Result<T> + 'a {
    move |x| m.forward(&x[0])
}

fn conv_options<K: nabla_nn::SpatialSize>(
    c: &Value,
    get: impl Fn(&str, usize) -> K,
) -> ConvOptions<K> {
    ConvOptions {
        stride: get("stride", 1),
        padding: get("padding", 0),
        output_padding: get("output_padding", 0),
        dilation: get("dilation", 1),
        groups: cfg_usize(c, "groups", 1),
        bias: cfg_bool(c, "bias", true),
    }
}

fn rng() -> Generator {
    Generator::new(7)
}

#[test]
fn conv2d_matches_torch() {
    for c in cases("Conv2d") {
        let opts = conv_options(c, |k, d| cfg_pair(c, k, d));
        let (i, o, k) = (
            cfg_usize(c, "in_channels", 0),
            cfg_usize(c, "out_channels", 0),
            cfg_pair(c, "kernel_size", 0),
        );
        let m = Conv2d::new(i, o, k, opts, DType::F64, &mut rng(), &cpu()).unwrap();
        check(c, &m, forward1(&m));
    }
}

#[test]
fn conv1d_matches_torch() {
    for c in cases("Conv1d") {
        let opts = conv_options(c, |k, d| cfg_usize(c, k, d));
        let (i, o, k) = (
            cfg_usize(c, "in_channels", 0),
            cfg_usize(c, "out_channels", 0),
            cfg_usize(c, "kernel_size", 0),
        );
        let m = Conv1d::new(i, o, k, opts, DType::F64, &mut rng(), &cpu()).unwrap();
        check(c, &m, forward1(&m));
    }
}

#[test]
fn conv_transpose2d_matches_torch() {
    for c in cases("ConvTranspose2d") {
        let opts = conv_options(c, |k, d| cfg_pair(c, k, d));
        let (i, o, k) = (
            cfg_usize(c, "in_channels", 0),
            cfg_usize(c, "out_channels", 0),
            cfg_pair(c, "kernel_size", 0),
        );
        let m = ConvTranspose2d::new(i, o, k, opts, DType::F64, &mut rng(), &cpu()).unwrap();
        check(c, &m, forward1(&m));
    }
}

fn opt_stride_pair(c: &Value) -> Option<(usize, usize)> {
    c["config"].get("stride").map(|_| cfg_pair(c, "stride", 0))
}
fn opt_stride(c: &Value) -> Option<usize> {
    c["config"].get("stride").map(|_| cfg_usize(c, "stride", 0))
}

#[test]
fn pooling_matches_torch() {
    for c in cases("MaxPool2d") {
        let m = MaxPool2d::new(
            cfg_pair(c, "kernel_size", 0),
            opt_stride_pair(c),
            cfg_pair(c, "padding", 0),
            cfg_pair(c, "dilation", 1),
            cfg_bool(c, "ceil_mode", false),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
    for c in cases("MaxPool1d") {
        let m = MaxPool1d::new(
            cfg_usize(c, "kernel_size", 0),
            opt_stride(c),
            cfg_usize(c, "padding", 0),
            cfg_usize(c, "dilation", 1),
            cfg_bool(c, "ceil_mode", false),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
    for c in cases("AvgPool2d") {
        let divisor = c["config"]
            .get("divisor_override")
            .map(|v| v.as_u64().unwrap() as usize);
        let m = AvgPool2d::new(
            cfg_pair(c, "kernel_size", 0),
            opt_stride_pair(c),
            cfg_pair(c, "padding", 0),
            cfg_bool(c, "ceil_mode", false),
            cfg_bool(c, "count_include_pad", true),
            divisor,
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
    for c in cases("AvgPool1d") {
        let m = AvgPool1d::new(
            cfg_usize(c, "kernel_size", 0),
            opt_stride(c),
            cfg_usize(c, "padding", 0),
            cfg_bool(c, "ceil_mode", false),
            cfg_bool(c, "count_include_pad", true),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
    for c in cases("AdaptiveAvgPool2d") {
        let m = AdaptiveAvgPool2d::new(cfg_pair(c, "output_size", 0)).unwrap();
        check(c, &m, forward1(&m));
    }
}

/// Training steps (outputs, gradients, running statistics after each step) and then eval mode.
fn check_batchnorm<M: Forward<CpuBackend>>(c: &Value, mut m: M) {
    let name = c["name"].as_str().unwrap();
    load_state_dict(&m, &state(c), Strictness::Strict).expect("PyTorch state loads by name");
    for (k, step) in c["steps"].as_array().unwrap().iter().enumerate() {
        check_step(&format!("{name} step {k}"), step, &m, forward1(&m));
        for (bname, b) in m.named_buffers() {
            assert_close(
                &format!("{name} step {k}: {bname}"),
                &b.data(),
                &step["state"][&bname],
            );
        }
    }
    m.eval();
    let y = m.forward(&tensor(&c["eval"]["input"])).unwrap();
    assert_close(&format!("{name}: eval output"), &y, &c["eval"]["output"]);
}

#[test]
fn batchnorm_matches_torch() {
    let args = |c: &Value| {
        let momentum = match c["config"].get("momentum") {
            Some(Value::Null) => None,
            Some(v) => v.as_f64(),
            None => Some(0.1),
        };
        (
            cfg_usize(c, "num_features", 0),
            cfg_f64(c, "eps").unwrap_or(1e-5),
            momentum,
            cfg_bool(c, "affine", true),
            cfg_bool(c, "track_running_stats", true),
        )
    };
    for c in cases("BatchNorm1d") {
        let (n, eps, mom, affine, track) = args(c);
        check_batchnorm(
            c,
            BatchNorm1d::new(n, eps, mom, affine, track, DType::F64, &cpu()).unwrap(),
        );
    }
    for c in cases("BatchNorm2d") {
        let (n, eps, mom, affine, track) = args(c);
        check_batchnorm(
            c,
            BatchNorm2d::new(n, eps, mom, affine, track, DType::F64, &cpu()).unwrap(),
        );
    }
}

#[test]
fn group_and_rms_norm_match_torch() {
    for c in cases("GroupNorm") {
        let m = GroupNorm::new(
            cfg_usize(c, "num_groups", 0),
            cfg_usize(c, "num_channels", 0),
            cfg_f64(c, "eps").unwrap_or(1e-5),
            cfg_bool(c, "affine", true),
            DType::F64,
            &cpu(),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
    for c in cases("RMSNorm") {
        let shape: Vec<usize> = c["config"]["normalized_shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let m = RMSNorm::new(
            &shape,
            cfg_f64(c, "eps"),
            cfg_bool(c, "elementwise_affine", true),
            DType::F64,
            &cpu(),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
}

#[test]
fn embedding_matches_torch() {
    for c in cases("Embedding") {
        let padding_idx = c["config"].get("padding_idx").map(|v| v.as_i64().unwrap());
        let m = Embedding::new(
            cfg_usize(c, "num_embeddings", 0),
            cfg_usize(c, "embedding_dim", 0),
            padding_idx,
            DType::F64,
            &mut rng(),
            &cpu(),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
}

#[test]
fn bilinear_matches_torch() {
    for c in cases("Bilinear") {
        let m = Bilinear::new(
            cfg_usize(c, "in1_features", 0),
            cfg_usize(c, "in2_features", 0),
            cfg_usize(c, "out_features", 0),
            cfg_bool(c, "bias", true),
            DType::F64,
            &mut rng(),
            &cpu(),
        )
        .unwrap();
        check(c, &m, |x| m.forward2(&x[0], &x[1]));
    }
}

#[test]
fn positional_embeddings_match_torch() {
    for c in cases("SinusoidalPositionalEmbedding") {
        let m = SinusoidalPositionalEmbedding::new(
            cfg_usize(c, "max_len", 0),
            cfg_usize(c, "dim", 0),
            cfg_bool(c, "batch_first", false),
            DType::F64,
            &cpu(),
        )
        .unwrap();
        assert!(m.named_parameters().is_empty() && m.named_buffers().is_empty());
        check(c, &m, forward1(&m));
    }
    for c in cases("LearnedPositionalEmbedding") {
        let m = LearnedPositionalEmbedding::new(
            cfg_usize(c, "max_len", 0),
            cfg_usize(c, "dim", 0),
            cfg_bool(c, "batch_first", false),
            DType::F64,
            &mut rng(),
            &cpu(),
        )
        .unwrap();
        check(c, &m, forward1(&m));
    }
}

fn err_text(r: Result<impl std::fmt::Debug>) -> String {
    r.expect_err("expected an error").to_string()
}

fn ones(shape: &[usize]) -> T {
    Tensor::ones(shape.to_vec(), DType::F64, &cpu()).unwrap()
}

#[test]
fn conv_errors() {
    let d = ConvOptions::default;
    let conv = Conv2d::new(3, 4, (3, 3), d(), DType::F64, &mut rng(), &cpu()).unwrap();
    let e = err_text(conv.forward(&ones(&[1, 2, 5, 5])));
    assert!(e.contains("Conv2d") && e.contains("2 channels"), "{e}");
    assert!(err_text(conv.forward(&ones(&[5, 5]))).contains("4-D"));
    assert!(
        conv.forward(&ones(&[1, 3, 2, 2])).is_err(),
        "kernel larger than the input"
    );
    let bad_stride = ConvOptions {
        stride: (0, 1),
        ..d()
    };
    assert!(
        err_text(Conv2d::new(
            3,
            4,
            (3, 3),
            bad_stride,
            DType::F64,
            &mut rng(),
            &cpu()
        ))
        .contains("positive")
    );
    let groups = ConvOptions { groups: 2, ..d() };
    assert!(
        err_text(Conv2d::new(
            3,
            4,
            (3, 3),
            groups,
            DType::F64,
            &mut rng(),
            &cpu()
        ))
        .contains("divisible by groups 2")
    );
    let op = ConvOptions {
        output_padding: (1, 0),
        ..d()
    };
    assert!(
        err_text(Conv2d::new(
            3,
            4,
            (3, 3),
            op,
            DType::F64,
            &mut rng(),
            &cpu()
        ))
        .contains("output_padding")
    );
    let c1 = Conv1d::new(
        2,
        2,
        3,
        ConvOptions::default(),
        DType::F64,
        &mut rng(),
        &cpu(),
    )
    .unwrap();
    assert!(err_text(c1.forward(&ones(&[1, 3, 8]))).contains("Conv1d"));
    let big_op = ConvOptions {
        stride: (2, 2),
        output_padding: (2, 0),
        ..d()
    };
    assert!(
        err_text(ConvTranspose2d::new(
            2,
            2,
            (3, 3),
            big_op,
            DType::F64,
            &mut rng(),
            &cpu()
        ))
        .contains("smaller than either stride")
    );
    let ct = ConvTranspose2d::new(2, 4, (3, 3), d(), DType::F64, &mut rng(), &cpu()).unwrap();
    assert!(err_text(ct.forward(&ones(&[1, 4, 3, 3]))).contains("ConvTranspose2d"));
    let ct = ConvTranspose2d::new(
        2,
        4,
        (1, 1),
        ConvOptions {
            padding: (1, 1),
            ..d()
        },
        DType::F64,
        &mut rng(),
        &cpu(),
    )
    .unwrap();
    assert!(ct.forward(&ones(&[1, 2, 2, 2])).is_err(), "empty output");
}

#[test]
fn conv_default_init_and_layout() {
    let opts = ConvOptions {
        groups: 2,
        ..ConvOptions::default()
    };
    let conv = Conv2d::new(4, 6, (3, 2), opts, DType::F64, &mut rng(), &cpu()).unwrap();
    let names: Vec<_> = conv
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape()))
        .collect();
    assert_eq!(
        names,
        [
            ("weight".to_string(), vec![6, 2, 3, 2]),
            ("bias".to_string(), vec![6])
        ]
    );
    // kaiming_uniform(a=√5) gives the bound 1/√fan_in, as does the bias; fan_in = 2 * 3 * 2.
    let bound = 1.0 / 12f64.sqrt();
    for p in conv.parameters() {
        let v = p.data().to_vec::<f64>().unwrap();
        assert!(v.iter().all(|x| x.abs() <= bound) && v.iter().any(|x| x.abs() > bound / 2.0));
    }
    let ct = ConvTranspose2d::new(4, 6, (3, 3), opts, DType::F64, &mut rng(), &cpu()).unwrap();
    assert_eq!(ct.weight.shape(), [4, 3, 3, 3]);
    let c1 = Conv1d::new(
        4,
        6,
        5,
        ConvOptions {
            bias: false,
            ..ConvOptions::default()
        },
        DType::F32,
        &mut rng(),
        &cpu(),
    )
    .unwrap();
    assert_eq!(c1.named_parameters().len(), 1);
    assert_eq!(c1.weight.shape(), [6, 4, 5]);
}

#[test]
fn pooling_errors() {
    assert!(
        err_text(MaxPool2d::new((2, 2), Some((0, 1)), (0, 0), (1, 1), false)).contains("positive")
    );
    assert!(err_text(MaxPool1d::new(2, None, 2, 1, false)).contains("half"));
    assert!(err_text(AvgPool2d::new((2, 2), None, (2, 0), false, true, None)).contains("half"));
    assert!(AvgPool2d::new((2, 2), None, (0, 0), false, true, Some(0)).is_err());
    assert!(AdaptiveAvgPool2d::new((0, 2)).is_err());
    let pool = MaxPool2d::new((3, 3), None, (0, 0), (1, 1), false).unwrap();
    assert!(err_text(pool.forward(&ones(&[1, 1, 2, 5]))).contains("too small"));
    assert!(err_text(pool.forward(&ones(&[5, 5]))).contains("MaxPool2d"));
    let pool1 = AvgPool1d::new(2, None, 0, false, true).unwrap();
    assert!(pool1.forward(&ones(&[1, 1, 2, 5])).is_err());
    assert_eq!(pool1.forward(&ones(&[3, 6])).unwrap().shape(), &[3, 3]);
}

#[test]
fn norm_errors() {
    let bn = BatchNorm2d::new(3, 1e-5, Some(0.1), true, true, DType::F64, &cpu()).unwrap();
    assert!(err_text(bn.forward(&ones(&[2, 4, 3, 3]))).contains("num_features = 3"));
    assert!(err_text(bn.forward(&ones(&[2, 3, 3]))).contains("BatchNorm2d"));
    assert!(err_text(bn.forward(&ones(&[1, 3, 1, 1]))).contains("more than 1 value per channel"));
    let bn1 = BatchNorm1d::new(3, 1e-5, Some(0.1), true, true, DType::F64, &cpu()).unwrap();
    assert!(bn1.forward(&ones(&[2, 3, 4, 4])).is_err());
    assert!(BatchNorm1d::<CpuBackend>::new(3, 1e-5, None, true, true, DType::I64, &cpu()).is_err());
    assert!(err_text(GroupNorm::new(4, 6, 1e-5, true, DType::F64, &cpu())).contains("divisible"));
    let gn = GroupNorm::new(2, 4, 1e-5, true, DType::F64, &cpu()).unwrap();
    assert!(gn.forward(&ones(&[2, 3, 5])).is_err());
    let rms = RMSNorm::new(&[3, 4], None, true, DType::F64, &cpu()).unwrap();
    assert!(err_text(rms.forward(&ones(&[2, 4, 3]))).contains("normalized_shape"));
    assert!(RMSNorm::<CpuBackend>::new(&[], None, true, DType::F64, &cpu()).is_err());
}

#[test]
fn batchnorm_set_training_switches_statistics() -> Result<()> {
    let mut model = Sequential::new().push(BatchNorm2d::new(
        2,
        0.0,
        Some(0.5),
        true,
        true,
        DType::F64,
        &cpu(),
    )?);
    let x = Tensor::from_vec(
        (0..16).map(f64::from).collect::<Vec<_>>(),
        [2, 2, 2, 2],
        &cpu(),
    )?;
    let buffers: Vec<String> = model.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        buffers,
        ["0.running_mean", "0.running_var", "0.num_batches_tracked"]
    );
    // Training: batch statistics, so each channel comes out standardised; running stats move.
    let y = model.forward(&x)?;
    let mean = y.mean(&[0, 2, 3], false)?.to_vec::<f64>()?;
    assert!(mean.iter().all(|m| m.abs() < 1e-12));
    let running = |m: &Sequential<CpuBackend>| -> Result<Vec<f64>> {
        m.named_buffers()[0].1.data().to_vec::<f64>()
    };
    let after_train = running(&model)?;
    assert!(
        (after_train[0] - 0.5 * 5.5).abs() < 1e-12,
        "{after_train:?}"
    );
    assert_eq!(model.named_buffers()[2].1.data().item::<i64>()?, 1);
    // Eval: running statistics, nothing updated.
    model.eval();
    let y = model.forward(&x)?.to_vec::<f64>()?;
    assert_eq!(running(&model)?, after_train);
    assert_eq!(model.named_buffers()[2].1.data().item::<i64>()?, 1);
    let var = model.named_buffers()[1].1.data().to_vec::<f64>()?;
    assert!((y[0] - (0.0 - after_train[0]) / var[0].sqrt()).abs() < 1e-12);
    // Back to training.
    model.train();
    model.forward(&x)?;
    assert_eq!(model.named_buffers()[2].1.data().item::<i64>()?, 2);
    let mut bn = BatchNorm1d::<CpuBackend>::new(2, 1e-5, None, false, false, DType::F64, &cpu())?;
    assert!(bn.is_training() && bn.named_buffers().is_empty() && bn.named_parameters().is_empty());
    bn.eval();
    assert!(!bn.is_training());
    Ok(())
}

#[test]
fn embedding_bilinear_positional_errors_and_init() -> Result<()> {
    let emb = Embedding::new(5, 3, Some(-1), DType::F64, &mut rng(), &cpu())?;
    assert_eq!(emb.padding_idx, Some(4));
    assert_eq!(emb.weight.data().to_vec::<f64>()?[12..], [0.0; 3]);
    let idx = Tensor::from_vec(vec![0i64, 7, 1], [3], &cpu())?;
    let e = err_text(emb.forward(&idx));
    assert!(e.contains('7') && e.contains("Embedding"), "{e}");
    assert!(
        emb.forward(&Tensor::from_vec(vec![-1i64], [1], &cpu())?)
            .is_err()
    );
    assert!(emb.forward(&ones(&[2])).is_err(), "float indices");
    assert!(
        err_text(Embedding::new(
            5,
            3,
            Some(5),
            DType::F64,
            &mut rng(),
            &cpu()
        ))
        .contains("padding_idx")
    );
    let bil = Bilinear::new(2, 3, 4, true, DType::F64, &mut rng(), &cpu())?;
    let bound = 1.0 / 2f64.sqrt();
    assert!(
        bil.weight
            .data()
            .to_vec::<f64>()?
            .iter()
            .all(|w| w.abs() <= bound)
    );
    assert!(bil.forward2(&ones(&[5, 2]), &ones(&[4, 3])).is_err());
    assert!(bil.forward2(&ones(&[5, 3]), &ones(&[5, 3])).is_err());
    let pe = SinusoidalPositionalEmbedding::new(4, 6, true, DType::F64, &cpu())?;
    assert!(err_text(pe.forward(&ones(&[2, 5, 6]))).contains("max_len 4"));
    assert!(pe.forward(&ones(&[2, 3, 5])).is_err());
    let lpe = LearnedPositionalEmbedding::new(4, 6, false, DType::F64, &mut rng(), &cpu())?;
    assert!(err_text(lpe.forward(&ones(&[5, 2, 6]))).contains("exceeds max_len"));
    assert_eq!(lpe.forward(&ones(&[4, 6]))?.shape(), &[4, 6]);
    Ok(())
}

#[test]
fn max_pool_propagates_nan() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, f64::NAN, 3.0, 2.0], [1, 1, 4], &cpu())?;
    let y = MaxPool1d::new(2, None, 0, 1, false)?
        .forward(&x)?
        .to_vec::<f64>()?;
    assert!(y[0].is_nan() && y[1] == 3.0, "{y:?}");
    Ok(())
}
