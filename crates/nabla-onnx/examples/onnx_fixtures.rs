//! Writes the ONNX export fixtures (crates/nabla-onnx/tests/fixtures): for each case of
//! `tests/cases`, the exported model `<case>.onnx` and `<case>_inputs.safetensors` with its inputs
//! (`in0`, `in1`, ...) and nabla's eager outputs (`out0`, ...) at the run batch size.
//! `scripts/gen_onnx_fixtures.py` runs this, then ONNX Runtime on each model, and saves ONNX
//! Runtime's outputs beside them.

#[path = "../tests/cases/mod.rs"]
mod cases;

use cases::{Case, fixture};
use nabla_cpu::CpuBackend;
use nabla_nn::save_safetensors;
use prost::Message;

fn main() -> nabla_core::Result<()> {
    let cpu = CpuBackend::new();
    std::fs::create_dir_all(fixture(""))
        .map_err(|e| nabla_core::Error::invalid("onnx_fixtures", e.to_string()))?;
    for case in Case::ALL {
        let model = case.export()?;
        nabla_nn::write_atomic(
            &fixture(&format!("{}.onnx", case.name())),
            &model.encode_to_vec(),
        )?;
        let inputs = case.example_inputs(&cpu)?;
        let outputs = case.run(&cpu, &inputs)?;
        let named: Vec<(String, _)> = inputs
            .into_iter()
            .enumerate()
            .map(|(i, t)| (format!("in{i}"), t))
            .chain(
                outputs
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (format!("out{i}"), t)),
            )
            .collect();
        save_safetensors(
            fixture(&format!("{}_inputs.safetensors", case.name())),
            &named,
            &Default::default(),
        )?;
        println!("wrote {}", case.name());
    }
    Ok(())
}
