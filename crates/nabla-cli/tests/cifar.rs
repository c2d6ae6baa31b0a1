//! `nabla train --dataset cifar10 --model resnet18` (and `vit-tiny`) on a tiny CIFAR-10 directory
//! this test writes in the binary format (a label byte, then the red, green and blue 32x32 planes),
//! then `nabla eval` on its checkpoint; starting from published weights (`--pretrained`,
//! torchvision's and transformers' names, here written from the zoo's ResNet-18 and ViT-Tiny in
//! ImageNet's layout); and the refusals of bad CIFAR files.

mod support;

use nabla_core::{DType, Generator};
use nabla_cpu::CpuBackend;
use nabla_models::{ResNet, ResNetConfig, Vit, VitConfig};
use nabla_nn::{Module, save_safetensors};
use std::path::{Path, PathBuf};
use support::{assert_one_line_error, nabla, stderr, stdout, temp};

/// A record of class `label`: the channel `label % 3` at a level set by `label / 3`, the others
/// dark, with a little deterministic noise.
fn record(label: u8, seed: usize) -> Vec<u8> {
    let mut r = vec![label];
    for c in 0..3 {
        for i in 0..1024 {
            let noise = ((seed * 7919 + c * 131 + i * 17) % 23) as u8;
            let level = if c == usize::from(label % 3) {
                60 + 50 * u16::from(label / 3).min(3)
            } else {
                10
            };
            r.push(level as u8 + noise);
        }
    }
    r
}

/// A CIFAR-10 directory: five training batches of `per_batch` records and a test batch of 20.
fn cifar_dir(name: &str, per_batch: usize) -> PathBuf {
    let dir = temp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let batch = |offset: usize, n: usize| -> Vec<u8> {
        (0..n)
            .flat_map(|i| record(((offset + i) % 10) as u8, offset + i))
            .collect()
    };
    for b in 1..=5 {
        std::fs::write(
            dir.join(format!("data_batch_{b}.bin")),
            batch(b * 1000, per_batch),
        )
        .unwrap();
    }
    std::fs::write(dir.join("test_batch.bin"), batch(0, 20)).unwrap();
    dir
}

fn train(dir: &Path, ckpt: &Path, extra: &[&str]) -> std::process::Output {
    train_model("resnet18", dir, ckpt, extra)
}

fn train_model(model: &str, dir: &Path, ckpt: &Path, extra: &[&str]) -> std::process::Output {
    let (d, c) = (dir.to_string_lossy(), ckpt.to_string_lossy());
    let mut args = vec![
        "train",
        "--dataset",
        "cifar10",
        "--data-dir",
        &d,
        "--model",
        model,
        "--checkpoint",
        &c,
        "--no-plot",
        "--batch-size",
        "8",
    ];
    args.extend_from_slice(extra);
    nabla(&args)
}

#[test]
fn resnet18_trains_on_cifar_files_and_evaluates() {
    let dir = cifar_dir("cifar-train", 8);
    let ckpt = dir.join("ckpt.safetensors");
    let o = train(
        &dir,
        &ckpt,
        &[
            "--epochs",
            "1",
            "--max-steps",
            "3",
            "--optimizer",
            "sgd",
            "--lr",
            "0.05",
        ],
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("training resnet18 (11173962 parameters) on cifar10"),
        "{err}"
    );
    assert!(out.contains("test accuracy"), "{out}");
    let e = nabla(&[
        "eval",
        "--checkpoint",
        &ckpt.to_string_lossy(),
        "--data-dir",
        &dir.to_string_lossy(),
    ]);
    assert!(e.status.success(), "{}", stderr(&e));
    assert!(stdout(&e).contains("accuracy"), "{}", stdout(&e));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pretrained_weights_load_by_torchvision_names() {
    let dir = cifar_dir("cifar-pretrained", 2);
    let cpu = CpuBackend::new();
    let config = ResNetConfig::from_name("resnet18", 1000).unwrap();
    let published = ResNet::new(config, DType::F32, &mut Generator::new(3), &cpu).unwrap();
    let weights = dir.join("resnet18.safetensors");
    save_safetensors(&weights, &published.state_dict(), &Default::default()).unwrap();
    let w = weights.to_string_lossy().into_owned();
    let ckpt = dir.join("ckpt.safetensors");
    let o = train(
        &dir,
        &ckpt,
        &["--epochs", "1", "--max-steps", "1", "--pretrained", &w],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // ImageNet's 7x7 stem and 1,000-class classifier do not fit CIFAR's 32x32 images and 10 classes.
    let note = "(conv1.weight, fc.weight, fc.bias start fresh: the data's shape differs)";
    assert!(stderr(&o).contains(note), "{}", stderr(&o));

    // ResNet-34's weights do not fit ResNet-18; an MLP has no published weights.
    let config = ResNetConfig::from_name("resnet34", 10).unwrap();
    let other = ResNet::new(config, DType::F32, &mut Generator::new(3), &cpu).unwrap();
    save_safetensors(&weights, &other.state_dict(), &Default::default()).unwrap();
    assert_one_line_error(&train(&dir, &ckpt, &["--pretrained", &w]), "unexpected");
    assert_one_line_error(
        &nabla(&["train", "--model", "mlp", "--pretrained", &w]),
        "no published weights",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn vit_tiny_trains_from_published_weights() {
    let dir = cifar_dir("cifar-vit", 4);
    let cpu = CpuBackend::new();
    // DeiT-Tiny's layout: 224x224 images in 16x16 patches, 1,000 classes.
    let config = VitConfig::from_name("vit-tiny", 1000).unwrap();
    let published = Vit::new(config, DType::F32, &mut Generator::new(3), &cpu).unwrap();
    let weights = dir.join("vit-tiny.safetensors");
    save_safetensors(&weights, &published.state_dict(), &Default::default()).unwrap();
    let w = weights.to_string_lossy().into_owned();
    let ckpt = dir.join("ckpt.safetensors");
    let extra = ["--epochs", "1", "--max-steps", "2", "--pretrained", &w];
    let o = train_model("vit-tiny", &dir, &ckpt, &extra);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    // CIFAR's 32x32 images take 4x4 patches (64 tokens): the patch projection, the positions and
    // the classifier start fresh, every block comes from the file.
    let note = "(vit.embeddings.position_embeddings, \
                vit.embeddings.patch_embeddings.projection.weight, classifier.weight, \
                classifier.bias start fresh";
    assert!(err.contains(note), "{err}");
    assert!(err.contains("training vit-tiny"), "{err}");
    assert!(out.contains("test accuracy"), "{out}");
    // The checkpoint names its model, so `nabla eval` rebuilds the ViT.
    let (c, d) = (ckpt.to_string_lossy(), dir.to_string_lossy());
    let e = nabla(&["eval", "--checkpoint", &c, "--data-dir", &d]);
    assert!(e.status.success(), "{}", stderr(&e));
    assert!(stdout(&e).contains("accuracy"), "{}", stdout(&e));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_cifar_directories_are_refused_by_file() {
    let dir = cifar_dir("cifar-bad", 2);
    let ckpt = dir.join("ckpt.safetensors");
    assert_one_line_error(&nabla(&["train", "--dataset", "cifar10"]), "--data-dir");
    std::fs::write(dir.join("data_batch_3.bin"), vec![1u8; 3000]).unwrap();
    assert_one_line_error(&train(&dir, &ckpt, &[]), "data_batch_3.bin");
    std::fs::write(dir.join("data_batch_3.bin"), record(12, 0)).unwrap();
    assert_one_line_error(&train(&dir, &ckpt, &[]), "record 0 has label 12");
    std::fs::remove_file(dir.join("data_batch_3.bin")).unwrap();
    assert_one_line_error(&train(&dir, &ckpt, &[]), "missing data_batch_3.bin");
    std::fs::remove_dir_all(&dir).unwrap();
}
