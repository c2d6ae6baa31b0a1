//! `Linear`, `Sequential` and every activation module against PyTorch (fixture
//! `tests/fixtures/activations.json`, written by `scripts/gen_torch_activation_fixtures.py`): forward
//! values and the gradients of `sum(output * cotangent)` with respect to the input and every
//! parameter, in float64, with PyTorch's parameters loaded strictly by their state-dict names. The
//! activation inputs hold kinks, Softplus thresholds and large magnitudes (±30, ±1e3). Plus the shape
//! errors of `Linear`, and a model moved to another backend with `transfer_state` (checked against
//! the same PyTorch values there).

use crate::torch_support::{T, cpu, shape_of, state_dict, tensor};
use nabla_core::{Backend, DType, Error, Generator, MemoryTracked};
use nabla_cpu::CpuBackend;
use nabla_nn::activation::{
    ELU, Flatten, GELU, Identity, LeakyReLU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Softplus,
    Tanh,
};
use nabla_nn::{Forward, Linear, Module, Sequential, Strictness, load_state_dict, transfer_state};
use nabla_tensor::Tensor;
use serde_json::Value;

type Boxed = Box<dyn Forward<CpuBackend> + Send + Sync>;

fn fixture() -> &'static Value {
    crate::torch_support::fixture("activations.json")
}

fn all_cases() -> &'static [Value] {
    fixture()["cases"].as_array().expect("cases")
}

/// Every case of `module`, at least one.
fn cases(module: &str) -> Vec<&'static Value> {
    crate::torch_support::cases(fixture(), "module", module)
}

fn assert_close<B: Backend>(what: &str, got: &Tensor<B>, want: &Value) {
    crate::torch_support::assert_close(what, got, want, 1e-12, 1e-9);
}

fn cfg_f64(c: &Value, key: &str, default: f64) -> f64 {
    c["config"]
        .get(key)
        .map_or(default, |v| v.as_f64().expect("float"))
}

fn cfg_isize(c: &Value, key: &str, default: isize) -> isize {
    c["config"]
        .get(key)
        .map_or(default, |v| v.as_i64().expect("int") as isize)
}

fn linear(c: &Value) -> Linear<CpuBackend> {
    let size = |key| c["config"][key].as_u64().expect("size") as usize;
    let bias = c["config"]["bias"].as_bool().expect("bias flag");
    Linear::new(
        size("in_features"),
        size("out_features"),
        bias,
        DType::F64,
        &mut Generator::new(7),
        &cpu(),
    )
    .expect("Linear::new")
}

/// `Sequential(Linear(s0, s1), Tanh, Linear(s1, s2))` on `backend`, with nabla's initialisation.
fn mlp<B: Backend>(sizes: &[usize], backend: &B) -> Sequential<B> {
    let mut rng = Generator::new(7);
    let mut layer = |i: usize, o: usize| {
        Linear::new(i, o, true, DType::F64, &mut rng, backend).expect("Linear::new")
    };
    let first = layer(sizes[0], sizes[1]);
    let second = layer(sizes[1], sizes[2]);
    Sequential::new().push(first).push(Tanh).push(second)
}

/// The nabla module of a case, built with the case's PyTorch arguments (defaults where PyTorch's are
/// used); its parameters still hold nabla's own initialisation.
fn build(c: &Value) -> Boxed {
    match c["module"].as_str().expect("module name") {
        "Linear" => Box::new(linear(c)),
        "Sequential" => {
            let sizes: Vec<usize> = c["config"]["sizes"]
                .as_array()
                .expect("sizes")
                .iter()
                .map(|s| s.as_u64().expect("size") as usize)
                .collect();
            Box::new(mlp(&sizes, &cpu()))
        }
        "Identity" => Box::new(Identity),
        "ReLU" => Box::new(ReLU),
        "Tanh" => Box::new(Tanh),
        "Sigmoid" => Box::new(Sigmoid),
        "SiLU" => Box::new(SiLU),
        "GELU" => Box::new(GELU {
            tanh_approximation: c["config"]["approximate"] == "tanh",
        }),
        "LeakyReLU" => Box::new(LeakyReLU {
            negative_slope: cfg_f64(c, "negative_slope", LeakyReLU::default().negative_slope),
        }),
        "ELU" => Box::new(ELU {
            alpha: cfg_f64(c, "alpha", ELU::default().alpha),
        }),
        "Softplus" => {
            let d = Softplus::default();
            Box::new(Softplus {
                beta: cfg_f64(c, "beta", d.beta),
                threshold: cfg_f64(c, "threshold", d.threshold),
            })
        }
        "Softmax" => Box::new(Softmax {
            dim: cfg_isize(c, "dim", 0),
        }),
        "LogSoftmax" => Box::new(LogSoftmax {
            dim: cfg_isize(c, "dim", 0),
        }),
        "Flatten" => {
            let d = Flatten::default();
            Box::new(Flatten {
                start_dim: cfg_isize(c, "start_dim", d.start_dim),
                end_dim: cfg_isize(c, "end_dim", d.end_dim),
            })
        }
        other => panic!("the fixture names a module this test does not know: {other}"),
    }
}

fn torch_state(c: &Value) -> Vec<(String, T)> {
    state_dict(&c["state"])
}

/// Loads the PyTorch state strictly into the case's module and checks it on the CPU backend.
fn check(c: &Value) {
    let name = c["name"].as_str().expect("case name");
    let module = build(c);
    load_state_dict(&module, &torch_state(c), Strictness::Strict)
        .unwrap_or_else(|e| panic!("{name}: PyTorch state does not load by name: {e}"));
    check_values(c, &module, &cpu());
}

/// Runs `module` on the case's input (moved to `backend`), and compares the output and the gradients
/// of `sum(output * cotangent)` for the input and every parameter.
fn check_values<B: Backend, M: Forward<B> + ?Sized>(c: &Value, module: &M, backend: &B) {
    let name = c["name"].as_str().expect("case name");
    let on_backend = |v: &Value| tensor(v).to_backend(backend).expect("to_backend");
    let x = Tensor::var("input", on_backend(&c["input"])).expect("input variable");
    let y = module
        .forward(&x)
        .unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
    assert_close(&format!("{name}: output"), &y, &c["output"]);

    let grads = y
        .mul(on_backend(&c["cotangent"]))
        .and_then(|p| p.sum_all())
        .and_then(|l| l.backward())
        .unwrap_or_else(|e| panic!("{name}: backward failed: {e}"));
    let want = c["grads"].as_object().expect("grads");
    let params = module.named_parameters();
    assert_eq!(want.len(), params.len() + 1, "{name}: number of gradients");
    let dx = grads
        .get(&x)
        .unwrap_or_else(|| panic!("{name}: no gradient for the input"));
    assert_close(&format!("{name}: dinput"), dx, &want["input"]);
    for (pname, p) in params {
        let g = p
            .grad(&grads)
            .unwrap_or_else(|| panic!("{name}: no gradient for {pname}"));
        assert_close(&format!("{name}: d{pname}"), &g, &want[&pname]);
    }
}

/// One test per module type, each checking every fixture case of that type.
macro_rules! torch_tests {
    ($($test:ident => $module:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                for c in cases($module) {
                    check(c);
                }
            }
        )*

        #[test]
        fn every_fixture_case_is_checked() {
            let known = [$($module),*];
            for c in all_cases() {
                assert!(known.contains(&c["module"].as_str().expect("module")), "{c}");
            }
        }
    };
}

torch_tests!(
    linear_matches_torch => "Linear",
    sequential_matches_torch => "Sequential",
    identity_matches_torch => "Identity",
    relu_matches_torch => "ReLU",
    tanh_matches_torch => "Tanh",
    sigmoid_matches_torch => "Sigmoid",
    silu_matches_torch => "SiLU",
    gelu_matches_torch => "GELU",
    leaky_relu_matches_torch => "LeakyReLU",
    elu_matches_torch => "ELU",
    softplus_matches_torch => "Softplus",
    softmax_matches_torch => "Softmax",
    log_softmax_matches_torch => "LogSoftmax",
    flatten_matches_torch => "Flatten",
);

#[test]
fn linear_covers_ranks_one_to_three_with_and_without_bias() {
    let mut seen = Vec::new();
    for c in cases("Linear") {
        let rank = shape_of(&c["input"]).len();
        seen.push((rank, c["config"]["bias"].as_bool().expect("bias flag")));
    }
    for rank in 1..=3 {
        for bias in [true, false] {
            assert!(seen.contains(&(rank, bias)), "rank {rank}, bias {bias}");
        }
    }
}

#[test]
fn sequential_names_follow_torch() {
    let c = cases("Sequential")[0];
    let names: Vec<String> = build(c)
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
}

fn ones(shape: &[usize]) -> T {
    Tensor::ones(shape, DType::F64, &cpu()).expect("ones")
}

#[test]
fn linear_rejects_a_wrong_input_width_naming_both_shapes() {
    let layer = Linear::from_tensors(ones(&[4, 3]), Some(ones(&[4]))).expect("layer");
    for shape in [&[5, 2][..], &[2, 5, 4], &[2]] {
        let err = layer.forward(&ones(shape)).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("Linear"), "{text}");
        assert!(text.contains(&format!("{shape:?}")), "{text}");
        assert!(text.contains("[4, 3]"), "{text}");
        assert!(text.contains("in_features = 3"), "{text}");
    }
    let scalar = Tensor::from_vec(vec![1.0f64], Vec::<usize>::new(), &cpu()).expect("scalar");
    let err = layer.forward(&scalar).unwrap_err();
    assert!(err.to_string().contains("Linear"), "{err}");
}

#[test]
fn linear_from_tensors_rejects_bad_shapes() {
    for bias in [&[3][..], &[1, 4], &[5]] {
        let err = Linear::from_tensors(ones(&[4, 3]), Some(ones(bias))).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("Linear"), "{text}");
        assert!(text.contains("[4, 3]"), "{text}");
        assert!(text.contains(&format!("{bias:?}")), "{text}");
        assert!(text.contains("out_features"), "{text}");
    }
    let err = Linear::from_tensors(ones(&[4]), None).unwrap_err();
    assert!(err.to_string().contains("[4]"), "{err}");
    let ok = Linear::from_tensors(ones(&[4, 3]), None).expect("no bias");
    assert_eq!((ok.in_features(), ok.out_features()), (3, 4));
    assert!(ok.bias.is_none());
}

#[test]
fn transferred_model_matches_torch_on_another_backend() {
    let c = cases("Sequential")[0];
    let src = mlp(&[3, 5, 2], &cpu());
    load_state_dict(&src, &torch_state(c), Strictness::Strict).expect("PyTorch state");
    let tracked = MemoryTracked::new(CpuBackend::new());
    let dst = mlp(&[3, 5, 2], &tracked);
    assert_ne!(
        dst.state_dict()[0].1.to_vec::<f64>().unwrap(),
        src.state_dict()[0].1.to_vec::<f64>().unwrap(),
        "the target starts from its own initialisation"
    );
    let allocations = tracked.stats().allocations;
    transfer_state(&src, &dst, &tracked).expect("transfer");
    assert!(
        tracked.stats().allocations >= allocations + 4,
        "the four parameters are copied into the target backend"
    );
    check_values(c, &dst, &tracked);
    // The source is untouched and still matches on the CPU.
    check_values(c, &src, &cpu());
}

#[test]
fn transfer_to_a_different_architecture_fails_and_changes_nothing() {
    let c = cases("Sequential")[0];
    let src = mlp(&[3, 5, 2], &cpu());
    load_state_dict(&src, &torch_state(c), Strictness::Strict).expect("PyTorch state");
    let tracked = MemoryTracked::new(CpuBackend::new());
    let wider = mlp(&[3, 6, 2], &tracked);
    let before: Vec<Vec<f64>> = wider
        .state_dict()
        .iter()
        .map(|(_, t)| t.to_vec::<f64>().unwrap())
        .collect();
    let err = transfer_state(&src, &wider, &tracked).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("0.weight") && text.contains("[6, 3]"),
        "{text}"
    );
    let after: Vec<Vec<f64>> = wider
        .state_dict()
        .iter()
        .map(|(_, t)| t.to_vec::<f64>().unwrap())
        .collect();
    assert_eq!(before, after, "a failed transfer changes nothing");

    let single = Linear::<MemoryTracked<CpuBackend>>::new(
        3,
        5,
        true,
        DType::F64,
        &mut Generator::new(1),
        &tracked,
    )
    .expect("Linear::new");
    let err = transfer_state(&src, &single, &tracked).unwrap_err();
    assert!(err.to_string().contains("unexpected: 0.weight"), "{err}");
}
