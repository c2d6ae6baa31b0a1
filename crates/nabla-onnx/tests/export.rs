//! What the exporter writes for small programs (names, shapes, the symbolic batch axis) and what
//! it refuses, each with an error naming the cause: random draws, complex numbers, fused kernels,
//! ops without an ONNX counterpart, sizes that do not follow the batch, bad names, and links.

use nabla_core::{DType, Generator};
use nabla_nn::{Dropout, Forward};
use nabla_onnx::proto::{DimensionValue, ModelProto};
use nabla_onnx::{ExportOptions, InputSpec, OPSET, export, program_to_model, traced_to_model};
use nabla_tensor::{GraphCompiler, Tensor, TracingBackend};

/// The symbolic or fixed sizes of a graph input or output.
fn dims(model: &ModelProto, output: bool, i: usize) -> Vec<String> {
    let graph = model.graph.as_ref().unwrap();
    let port = if output {
        &graph.output[i]
    } else {
        &graph.input[i]
    };
    let shape = port
        .r#type
        .as_ref()
        .unwrap()
        .tensor_type
        .as_ref()
        .unwrap()
        .shape
        .as_ref()
        .unwrap();
    shape
        .dim
        .iter()
        .map(|d| match &d.value {
            Some(DimensionValue::DimValue(v)) => v.to_string(),
            Some(DimensionValue::DimParam(p)) => p.clone(),
            None => "?".into(),
        })
        .collect()
}

#[test]
fn programs_export_with_their_names_and_shapes() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([4, 3], DType::F32).unwrap();
    let y = x.matmul(&x.t().unwrap()).unwrap().tanh().unwrap();
    let program = tb.program(&[&y, &y.t().unwrap()]).unwrap();
    let options = ExportOptions {
        input_names: vec!["x".into()],
        output_names: vec!["gram".into(), "gram_t".into()],
        ..Default::default()
    };
    let model = program_to_model(&program, &options).unwrap();
    assert_eq!(model.opset_import[0].version, OPSET);
    let graph = model.graph.as_ref().unwrap();
    assert_eq!(graph.input[0].name, "x");
    assert_eq!(graph.output[1].name, "gram_t");
    assert_eq!(dims(&model, false, 0), ["4", "3"]);
    assert_eq!(dims(&model, true, 0), ["4", "4"]);
    let ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
    assert!(
        ops.contains(&"MatMul") && ops.contains(&"Tanh") && ops.contains(&"Transpose"),
        "{ops:?}"
    );
}

#[test]
fn a_dynamic_batch_makes_axis_zero_symbolic() {
    let tb = TracingBackend::new();
    let f = |x: &[Tensor<TracingBackend>]| {
        // A reshape whose sizes follow the batch, and a sum over it.
        let flat = x[0].reshape([x[0].shape()[0] * 3, 2])?;
        Ok(vec![flat.exp()?, x[0].sum(&[0], false)?])
    };
    let options = ExportOptions {
        dynamic_batch: true,
        ..Default::default()
    };
    let model =
        traced_to_model(&tb, &[InputSpec::new([7, 3, 2], DType::F32)], f, &options).unwrap();
    assert_eq!(dims(&model, false, 0), ["batch", "3", "2"]);
    // 3·batch rows: a size that changes with the batch, but is not the batch size.
    assert_eq!(dims(&model, true, 0), ["?", "2"]);
    assert_eq!(dims(&model, true, 1), ["3", "2"]);
    let ops: Vec<&str> = model
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .map(|n| n.op_type.as_str())
        .collect();
    assert_eq!(ops[0], "Shape", "{ops:?}");

    // A constant as long as the batch cannot follow it.
    let f = |x: &[Tensor<TracingBackend>]| {
        let n = x[0].shape()[0] as i64;
        let steps = Tensor::arange(0i64, n, 1i64, DType::F32, x[0].backend())?;
        Ok(vec![x[0].add(&steps.reshape([n as usize, 1])?)?])
    };
    let err = traced_to_model(&tb, &[InputSpec::new([4, 2], DType::F32)], f, &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("changes with the batch size"), "{err}");
}

#[test]
fn what_onnx_cannot_express_is_refused_by_name() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F32).unwrap();
    let defaults = ExportOptions::default();
    let refused = |outputs: &[&Tensor<TracingBackend>]| {
        program_to_model(&tb.program(outputs).unwrap(), &defaults)
            .unwrap_err()
            .to_string()
    };
    // Dropout in training mode draws random numbers.
    let drop = Dropout::new(0.5, &mut Generator::new(0)).unwrap();
    let err = refused(&[&drop.forward(&x).unwrap()]);
    assert!(err.contains("`random`") && err.contains("eval()"), "{err}");
    let err = refused(&[&x.atan2(&x).unwrap()]);
    assert!(err.contains("`atan2`"), "{err}");
    // A compiled program's fused kernels.
    let program = tb.program(&[&x.exp().unwrap().mul(2.0).unwrap()]).unwrap();
    let compiled = GraphCompiler::new().compile(program).unwrap();
    let err = program_to_model(&compiled, &defaults)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("fused") && err.contains("before GraphCompiler"),
        "{err}"
    );
    let tb = TracingBackend::new();
    let z = tb.placeholder([2], DType::C64).unwrap();
    let err = program_to_model(&tb.program(&[&z.mul(&z).unwrap()]).unwrap(), &defaults)
        .unwrap_err()
        .to_string();
    assert!(err.contains("complex"), "{err}");
}

#[test]
fn bad_names_options_and_links_are_refused() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F32).unwrap();
    let program = tb.program(&[&x.exp().unwrap()]).unwrap();
    for (inputs, outputs, why) in [
        (vec!["a", "b"], vec![], "2 input names given for 1 inputs"),
        (vec!["_nabla_x"], vec![], "must be non-empty"),
        (vec!["x"], vec!["x"], "names an input and an output"),
    ] {
        let options = ExportOptions {
            input_names: inputs.into_iter().map(String::from).collect(),
            output_names: outputs.into_iter().map(String::from).collect(),
            ..Default::default()
        };
        let err = program_to_model(&program, &options)
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{err}");
    }
    let dynamic = ExportOptions {
        dynamic_batch: true,
        ..Default::default()
    };
    let err = program_to_model(&program, &dynamic)
        .unwrap_err()
        .to_string();
    assert!(err.contains("export_traced"), "{err}");
    #[cfg(unix)]
    {
        let dir = std::env::temp_dir().join(format!("nabla-onnx-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("precious.txt");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.join("model.onnx");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(export(&program, &link, &Default::default()).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
