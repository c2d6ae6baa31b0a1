//! What the writers must never produce: a file the reader refuses (a header over the format's
//! limit), a checkpoint of non-finite weights, a write through a symbolic link (the destination or a
//! temporary file planted under a predictable name); and what the checkpoint reader refuses: weights
//! that hold NaN or infinity.

use crate::{check_message, linear, temp_dir};
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::{
    CheckpointLoad, TrainingState, load_checkpoint, load_checkpoint_with, load_safetensors,
    save_checkpoint, save_safetensors, write_atomic,
};
use nabla_tensor::Tensor;
use std::collections::HashMap;
use std::path::Path;

/// Whether `path` is a symbolic link.
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn the_writer_refuses_a_header_the_reader_would_refuse() {
    let dir = temp_dir("big-header");
    let path = dir.join("big.safetensors");
    let t = Tensor::ones([1], DType::F32, &CpuBackend::new()).unwrap();
    let metadata = HashMap::from([("big".to_string(), "x".repeat(100_000_001))]);
    let err = save_safetensors(&path, &[("t".to_string(), t)], &metadata)
        .unwrap_err()
        .to_string();
    check_message(&err, "big.safetensors");
    assert!(err.contains("100 MB"), "{err}");
    assert!(!path.exists(), "a file the reader refuses was written");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_keeps_any_amount_of_training_state_loadable() -> Result<()> {
    let dir = temp_dir("big-extra");
    let path = dir.join("long-run.ckpt");
    let m = linear(3);
    // More than the 100 MB a header may hold, as a long run's history grows to.
    let history: Vec<u64> = (0..14_000_000).collect();
    let training = TrainingState {
        epoch: 1_000_000,
        extra: serde_json::json!({ "history": history }),
        ..TrainingState::default()
    };
    save_checkpoint(&path, &m, None, &training)?;
    let back = load_checkpoint(&path, &m, None, &CpuBackend::new())?;
    assert_eq!(back, training);
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

#[test]
fn non_finite_weights_are_never_saved_and_refused_on_load() -> Result<()> {
    let cpu = CpuBackend::new();
    let dir = temp_dir("non-finite");
    let path = dir.join("model.ckpt");
    let good = linear(3);
    save_checkpoint(&path, &good, None, &TrainingState::default())?;
    let before = std::fs::read(&path).unwrap();

    // Saving NaN weights is refused, naming the tensor, and the good file is kept.
    let bad = linear(3);
    let nan = Tensor::full([2], f32::NAN, DType::F32, &cpu)?;
    bad.bias.as_ref().unwrap().set(nan)?;
    let err = save_checkpoint(&path, &bad, None, &TrainingState::default())
        .unwrap_err()
        .to_string();
    check_message(&err, "model.ckpt");
    assert!(err.contains("model.bias"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the good file changed"
    );

    // A file whose weights hold an infinity (written by another tool) is refused on load, naming
    // the tensor, unless the caller asks to inspect it.
    let file = load_safetensors(&path, &cpu)?;
    let tensors: Vec<(String, Tensor<CpuBackend>)> = file
        .tensors
        .into_iter()
        .map(|(name, t)| {
            if name == "model.weight" {
                let inf = Tensor::full([2, 3], f32::INFINITY, DType::F32, &cpu).unwrap();
                (name, inf)
            } else {
                (name, t)
            }
        })
        .collect();
    save_safetensors(&path, &tensors, &file.metadata)?;
    let target = linear(3);
    let err = load_checkpoint(&path, &target, None, &cpu)
        .unwrap_err()
        .to_string();
    check_message(&err, "model.ckpt");
    assert!(
        err.contains("model.weight") && err.contains("--allow-non-finite"),
        "{err}"
    );
    let options = CheckpointLoad {
        allow_non_finite: true,
    };
    load_checkpoint_with(&path, &target, None, &cpu, options)?;
    assert!(target.weight.data().to_vec::<f32>()?[0].is_infinite());
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_temporary_file_planted_as_a_link_is_never_written_through() {
    let dir = temp_dir("planted-temp");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"precious").unwrap();
    let target = dir.join("model.safetensors");
    // The name a save of this process would have used for its temporary file.
    let planted = dir.join(format!(".model.safetensors.tmp-{}", std::process::id()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    write_atomic(&target, b"checkpoint bytes").unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!is_link(&target), "the destination became a link");
    assert_eq!(std::fs::read(&target).unwrap(), b"checkpoint bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_destination_that_is_a_link_is_refused() {
    let dir = temp_dir("link-destination");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.join("model.safetensors");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let err = write_atomic(&link, b"checkpoint bytes")
        .unwrap_err()
        .to_string();
    check_message(&err, "model.safetensors");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(is_link(&link), "the link was replaced");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    std::fs::remove_dir_all(&dir).unwrap();
}
