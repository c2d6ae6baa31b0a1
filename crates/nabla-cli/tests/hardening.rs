//! Bad input to the `nabla` binary: every case fails with one line naming the argument, path or data
//! at fault, before any training, and leaves an existing checkpoint as it was.

mod support;

use std::path::{Path, PathBuf};
use support::{assert_one_line_error, nabla, predict, stderr, stdout, temp, train_mlp};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn bad_numbers_are_refused_before_training() {
    for (args, needle) in [
        (&["train", "--lr", "-0.1"][..], "--lr"),
        (&["train", "--lr", "0"], "positive"),
        (&["train", "--lr", "inf"], "--lr"),
        (&["train", "--lr", "NaN"], "--lr"),
        (&["train", "--epochs", "9223372036854775808"], "--epochs"),
        (&["train", "--epochs", "18446744073709551615"], "--epochs"),
        (&["train", "--threads", "1000"], "--threads"),
        (&["train", "--threads", "100000"], "--threads"),
        (&["eval", "--threads", "100000"], "--threads"),
        (&["train", "--workers", "100000"], "--workers"),
        (&["train", "--checkpoint-every", "0"], "--checkpoint-every"),
    ] {
        assert_one_line_error(&nabla(args), needle);
    }
}

#[test]
fn output_paths_are_checked_before_training() -> TestResult {
    let ckpt = temp("paths.safetensors");
    let c = ckpt.to_string_lossy();
    let dir = std::env::temp_dir();
    let d = dir.to_string_lossy();
    for (args, needle) in [
        (
            vec![
                "train",
                "--checkpoint",
                &c,
                "--plot",
                "/nonexistent/dir/p.svg",
            ],
            "/nonexistent/dir",
        ),
        (
            vec!["train", "--checkpoint", &c, "--log", "/nonexistent/log.csv"],
            "does not exist",
        ),
        (vec!["train", "--checkpoint", &d], "is a directory"),
        (
            vec!["train", "--checkpoint", "/dev/null"],
            "not a regular file",
        ),
        (
            vec!["train", "--checkpoint", &c, "--plot", &d],
            "is a directory",
        ),
        (vec!["eval", "--checkpoint", &d], "is a directory"),
        (
            vec!["eval", "--checkpoint", "/dev/null"],
            "not a regular file",
        ),
        (
            vec!["train", "--resume", "--checkpoint", &d],
            "is a directory",
        ),
    ] {
        let o = nabla(&args);
        assert_one_line_error(&o, needle);
        assert!(!stderr(&o).contains("epoch"), "{}", stderr(&o));
    }
    assert!(!ckpt.exists(), "a refused run wrote {}", ckpt.display());
    Ok(())
}

/// Trains the MLP for one quiet epoch into `ckpt`.
fn train_one_epoch(ckpt: &Path) {
    let o = train_mlp(ckpt, &["--epochs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_diverged_or_mismatched_run_leaves_the_checkpoint_alone() -> TestResult {
    let ckpt = temp("diverge.safetensors");
    train_one_epoch(&ckpt);
    let before = std::fs::read(&ckpt)?;
    let o = train_mlp(&ckpt, &["--epochs", "1", "--lr", "1e308"]);
    assert_one_line_error(&o, "NaN");
    let resume = |extra: &[&str]| {
        let mut args = vec!["--resume"];
        args.extend_from_slice(extra);
        train_mlp(&ckpt, &args)
    };
    assert_one_line_error(&resume(&["--epochs", "3", "--lr", "0.01"]), "--lr 0.003");
    assert_one_line_error(&resume(&["--epochs", "3", "--seed", "7"]), "--seed");
    assert_one_line_error(
        &resume(&["--epochs", "3", "--optimizer", "sgd"]),
        "--optimizer adam",
    );
    assert_one_line_error(
        &resume(&["--epochs", "3", "--batch-size", "64"]),
        "--batch-size",
    );
    assert_one_line_error(
        &resume(&["--epochs", "3", "--schedule", "cosine"]),
        "--schedule",
    );
    // Resuming a one-epoch run with `--epochs 1` trains nothing; fewer is not possible to ask for
    // (`--epochs 0` is refused), so train one more epoch and then ask for one.
    let o = resume(&["--epochs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_one_line_error(&resume(&["--epochs", "1"]), "already trained 2 epochs");
    assert_ne!(std::fs::read(&ckpt)?, before, "the resumed run saved");
    std::fs::remove_file(ckpt).ok();
    Ok(())
}

/// A copy of checkpoint `src` at `dst` whose model description (the JSON of its `nabla.extra`
/// tensor) has `from` replaced by `to`, the way a corrupt or hostile file would describe its model.
fn edit_description(src: &Path, dst: &Path, from: &str, to: &str) -> TestResult {
    let cpu = nabla_cpu::CpuBackend::new();
    let file = nabla_nn::load_safetensors(src, &cpu)?;
    let mut tensors = Vec::new();
    for (name, t) in file.tensors {
        if name == "nabla.extra" {
            let text = String::from_utf8(t.to_vec::<u8>()?)?;
            assert!(text.contains(from), "{from} not in the model description");
            let bytes = text.replace(from, to).into_bytes();
            let n = bytes.len();
            tensors.push((name, nabla_tensor::Tensor::from_vec(bytes, [n], &cpu)?));
        } else {
            tensors.push((name, t));
        }
    }
    nabla_nn::save_safetensors(dst, &tensors, &file.metadata)?;
    Ok(())
}

#[test]
fn a_hostile_model_description_is_refused_without_allocating() -> TestResult {
    let ckpt = temp("hostile.safetensors");
    train_one_epoch(&ckpt);
    let bad = temp("hostile-edited.safetensors");
    let b = bad.to_string_lossy();
    for (to, needle) in [
        (r#""classes":100000000"#, "100000000 classes"),
        (r#""classes":18446744073709551615"#, "classes"),
        (r#""classes":10000"#, "does not fit the weights"),
        (r#""classes":0"#, "0 classes"),
    ] {
        edit_description(&ckpt, &bad, r#""classes":10"#, to)?;
        assert_one_line_error(&nabla(&["eval", "--checkpoint", &b]), needle);
        assert_one_line_error(
            &nabla(&["predict", "--checkpoint", &b, "--input", "x.npy"]),
            needle,
        );
    }
    for to in [
        r#""input_shape":[1,8,100000000]"#,
        r#""input_shape":[1,8]"#,
        r#""input_shape":[1,0,8]"#,
    ] {
        edit_description(&ckpt, &bad, r#""input_shape":[1,8,8]"#, to)?;
        assert_one_line_error(&nabla(&["eval", "--checkpoint", &b]), "input shape");
    }
    edit_description(
        &ckpt,
        &bad,
        r#""input_shape":[1,8,8]"#,
        r#""input_shape":[1,64,64]"#,
    )?;
    assert_one_line_error(
        &nabla(&["eval", "--checkpoint", &b]),
        "does not fit the weights",
    );
    for f in [ckpt, bad] {
        std::fs::remove_file(f).ok();
    }
    Ok(())
}

/// An IDX file of `u8` values with the given dimensions.
fn idx(dims: &[u32], values: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend_from_slice(values);
    out
}

/// One split of a generated MNIST directory: examples, image side and labels.
type Split<'a> = (u32, u32, &'a [u8]);

/// A directory of MNIST-named IDX files: `train` and `test` are `(images, labels)` with images
/// `n x side x side` of zeros.
fn mnist_dir(name: &str, train: Split, test: Split) -> PathBuf {
    let dir = temp(name);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    for (prefix, (n, side, labels)) in [("train", train), ("t10k", test)] {
        let pixels = vec![0u8; (n * side * side) as usize];
        let files = [
            (
                format!("{prefix}-images-idx3-ubyte"),
                idx(&[n, side, side], &pixels),
            ),
            (
                format!("{prefix}-labels-idx1-ubyte"),
                idx(&[labels.len() as u32], labels),
            ),
        ];
        for (file, bytes) in files {
            std::fs::write(dir.join(file), bytes).expect("an IDX file");
        }
    }
    dir
}

#[test]
fn data_problems_surface_before_the_first_epoch() {
    let labels: Vec<u8> = (0..20).map(|i| i % 10).collect();
    let mut with_255 = labels.clone();
    with_255[7] = 255;
    let cases: [(&str, Split, Split, &str); 5] = [
        (
            "label255",
            (20, 4, &with_255),
            (10, 4, &labels[..10]),
            "label 255 (example 7)",
        ),
        (
            "testlabel",
            (20, 4, &labels),
            (1, 4, &[10]),
            "test label 10",
        ),
        (
            "size",
            (20, 4, &labels),
            (10, 5, &labels[..10]),
            "test images are [1, 5, 5]",
        ),
        (
            "notrain",
            (0, 4, &[]),
            (10, 4, &labels[..10]),
            "0 training examples",
        ),
        ("notest", (20, 4, &labels), (0, 4, &[]), "no test examples"),
    ];
    for (name, train, test, needle) in cases {
        let dir = mnist_dir(name, train, test);
        let o = nabla(&[
            "train",
            "--dataset",
            "mnist",
            "--data-dir",
            &dir.to_string_lossy(),
            "--no-plot",
            "--checkpoint",
            &temp("never.safetensors").to_string_lossy(),
        ]);
        assert_one_line_error(&o, needle);
        assert!(!stderr(&o).contains("epoch"), "{}", stderr(&o));
        std::fs::remove_dir_all(dir).ok();
    }
}

#[test]
fn predict_refuses_non_finite_and_unscaled_inputs() -> TestResult {
    let ckpt = temp("predict.safetensors");
    train_one_epoch(&ckpt);
    let input = temp("rows.csv");
    let row = |v: &str| vec![v; 64].join(",");
    for (rows, needle) in [
        (
            format!("{}\n{}\n", row("0.5"), row("NaN")),
            "example 1 holds NaN",
        ),
        (format!("{}\n", row("inf")), "finite"),
        (format!("{}\n", row("16")), "[0, 1]"),
        (format!("{}\n", row("-0.5")), "[0, 1]"),
    ] {
        std::fs::write(&input, rows)?;
        let o = predict(&ckpt, &input);
        assert_one_line_error(&o, needle);
    }
    std::fs::write(&input, format!("{}\n", row("p")))?;
    assert_one_line_error(&predict(&ckpt, &input), "no examples");
    std::fs::write(&input, format!("{}\n", row("0.25")))?;
    let o = predict(&ckpt, &input);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
    for f in [ckpt, input] {
        std::fs::remove_file(f).ok();
    }
    Ok(())
}
