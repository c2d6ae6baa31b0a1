//! The exported models against ONNX Runtime, without Python: `scripts/gen_onnx_fixtures.py` ran
//! ONNX Runtime (after ONNX's checker) on each case's export and saved its outputs. Here each case
//! is exported again and must give the committed file's bytes, so those outputs are ONNX Runtime's
//! for this exporter; then nabla's eager outputs on the CPU must match them (floats to 2e-5 of each
//! output's scale, integers exactly). The fixtures run at batch size 4, which the dynamic-batch
//! export never traced at.

mod cases;

use cases::{Case, fixture};
use nabla_cpu::CpuBackend;
use nabla_nn::load_safetensors;
use prost::Message;
use std::collections::HashMap;

#[test]
fn exports_run_in_onnx_runtime_as_in_nabla() {
    let cpu = CpuBackend::new();
    for case in Case::ALL {
        let name = case.name();
        let bytes = case.export().unwrap().encode_to_vec();
        let committed = std::fs::read(fixture(&format!("{name}.onnx"))).unwrap();
        assert!(
            bytes == committed,
            "{name}: the export changed since the fixtures were checked with ONNX Runtime; run \
             scripts/gen_onnx_fixtures.py"
        );
        let load = |suffix: &str| -> HashMap<String, _> {
            let file = load_safetensors(fixture(&format!("{name}_{suffix}.safetensors")), &cpu);
            file.unwrap().tensors.into_iter().collect()
        };
        let (io, ort) = (load("inputs"), load("ort"));
        let inputs: Vec<_> = (0..case.inputs(1).len())
            .map(|i| io[&format!("in{i}")].clone())
            .collect();
        let outputs = case.run(&cpu, &inputs).unwrap();
        assert_eq!(outputs.len(), ort.len(), "{name}: outputs");
        for (k, got) in outputs.iter().enumerate() {
            let want = &ort[&format!("out{k}")];
            assert_eq!(got.shape(), want.shape(), "{name} output {k}");
            assert_eq!(got.dtype(), want.dtype(), "{name} output {k}");
            let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
            let scale = w.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let tolerance = if got.dtype().is_float() {
                2e-5 * scale
            } else {
                0.0
            };
            for (i, (a, b)) in g.iter().zip(&w).enumerate() {
                assert!(
                    (a - b).abs() <= tolerance,
                    "{name} output {k}, element {i}: nabla {a}, ONNX Runtime {b}"
                );
            }
        }
    }
}
