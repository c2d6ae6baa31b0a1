//! The files `nabla train`, `eval` and `predict` read and write: a diverged run never replaces a good
//! checkpoint; outputs never go through symbolic links, nor replace files nabla did not write unless
//! `--overwrite` is given; temporary files of killed saves are removed at start-up; and a checkpoint
//! whose weights hold NaN is refused by name (`--allow-non-finite` opens it for inspection, with
//! metrics whose top-5 accuracy is never below the accuracy).

mod support;

use nabla_core::DType;
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{assert_one_line_error, nabla, stderr, stdout, temp, train_mlp};

/// The bytes of `path` (empty when it cannot be read).
fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// Fails unless the run succeeded.
fn ok(o: &Output) {
    assert!(o.status.success(), "{}", stderr(o));
}

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = temp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// `nabla train` of the MLP, quiet, checkpointing to `ckpt`, followed by `extra`.
fn train_with(ckpt: &Path, extra: &[&str]) -> Output {
    let c = ckpt.to_string_lossy();
    let mut args = vec!["train", "--model", "mlp", "-q"];
    args.extend_from_slice(&["--checkpoint", &c]);
    args.extend_from_slice(extra);
    nabla(&args)
}

/// The arguments of a one-epoch quiet MLP run with `flag value`, checkpointing to `ckpt` and
/// plotting to `plot` unless `flag` names one of those.
fn run_args<'a>(flag: &'a str, value: &'a str, ckpt: &'a str, plot: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        "train", "--model", "mlp", "--epochs", "1", "-q", flag, value,
    ];
    for (default, path) in [("--checkpoint", ckpt), ("--plot", plot)] {
        if flag != default {
            args.extend_from_slice(&[default, path]);
        }
    }
    args
}

#[test]
fn a_diverged_run_never_replaces_a_good_checkpoint() {
    let ckpt = temp("good.st");
    ok(&train_mlp(&ckpt, &["--epochs", "1"]));
    let before = read(&ckpt);
    let o = train_mlp(
        &ckpt,
        &[
            "--epochs",
            "1",
            "--checkpoint-every",
            "1",
            "--optimizer",
            "sgd",
            "--lr",
            "1e30",
        ],
    );
    assert_one_line_error(&o, "diverged");
    assert!(read(&ckpt) == before, "the good checkpoint was replaced");
    let o = nabla(&["eval", "--checkpoint", &ckpt.to_string_lossy()]);
    ok(&o);
    assert!(!stdout(&o).contains("NaN"), "{}", stdout(&o));
    std::fs::remove_file(ckpt).ok();
}

#[cfg(unix)]
#[test]
fn outputs_are_never_written_through_a_symbolic_link() {
    let dir = temp_dir("links");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious").expect("victim");
    let ckpt = dir.join("run.st");
    let (c, p) = (ckpt.to_string_lossy(), dir.join("run.svg"));
    let p = p.to_string_lossy();
    for (flag, name) in [
        ("--checkpoint", "link.st"),
        ("--log", "link.csv"),
        ("--plot", "link.svg"),
    ] {
        let link = dir.join(name);
        std::os::unix::fs::symlink(&victim, &link).expect("a link");
        let l = link.to_string_lossy();
        for overwrite in [false, true] {
            let mut args = run_args(flag, &l, &c, &p);
            if overwrite {
                args.push("--overwrite");
            }
            assert_one_line_error(&nabla(&args), "symbolic link");
        }
        assert!(std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()));
    }
    assert_eq!(read(&victim), b"precious");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn existing_files_nabla_did_not_write_are_replaced_only_with_overwrite() {
    let dir = temp_dir("foreign");
    let ckpt = dir.join("run.st");
    let (c, p) = (ckpt.to_string_lossy(), dir.join("run.svg"));
    let p = p.to_string_lossy();
    for (flag, name, content) in [
        ("--checkpoint", "notes.st", "my notes"),
        ("--log", "table.csv", "a,b\n1,2\n"),
        ("--log", "table.jsonl", "{\"a\": 1}\n"),
        ("--plot", "drawing.svg", "<svg>mine</svg>"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, content).expect("a file");
        let f = path.to_string_lossy();
        let run = |extra: &[&str]| {
            let mut args = run_args(flag, &f, &c, &p);
            args.extend_from_slice(extra);
            nabla(&args)
        };
        assert_one_line_error(&run(&[]), "--overwrite");
        assert_eq!(read(&path), content.as_bytes(), "{name} was replaced");
        ok(&run(&["--overwrite"]));
        assert_ne!(read(&path), content.as_bytes(), "{name} was not written");
        // Now the file is nabla's: a second run replaces it without being asked.
        ok(&run(&[]));
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Sets the modification time of `path` to `days` days ago.
fn age(path: &Path, days: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(when).expect("set_modified");
}

#[cfg(unix)]
#[test]
fn temporary_files_of_killed_saves_are_removed_at_start_up() {
    let dir = temp_dir("stale");
    let ckpt = dir.join("model.st");
    ok(&train_with(&ckpt, &["--no-plot", "--epochs", "1"]));
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious").expect("victim");
    // Above Linux's largest process id (2^22): never a running process. Process 1 always runs.
    let dead = [
        ".model.st.tmp-4999999",
        ".model.st.tmp-4999999-0123456789abcdef",
    ];
    let kept = [
        ".model.st.tmp-1-00ff",
        ".other.st.tmp-4999999",
        ".model.st.tmp-x",
    ];
    let old = ".model.st.tmp-1-abcd";
    let link = dir.join(".model.st.tmp-4999999-beef");
    for command in ["eval", "train"] {
        for name in dead.iter().chain(&kept).chain([&old]) {
            std::fs::write(dir.join(name), "half a save").expect("a temporary file");
        }
        age(&dir.join(old), 2);
        std::fs::remove_file(&link).ok();
        std::os::unix::fs::symlink(&victim, &link).expect("a link");
        let o = match command {
            "eval" => nabla(&["eval", "--checkpoint", &ckpt.to_string_lossy()]),
            _ => train_with(&ckpt, &["--no-plot", "--resume", "--epochs", "2"]),
        };
        ok(&o);
        for name in dead.iter().chain([&old]) {
            assert!(!dir.join(name).exists(), "{command} left {name}");
        }
        for name in kept {
            assert!(dir.join(name).exists(), "{command} removed {name}");
        }
        assert!(
            std::fs::symlink_metadata(&link).is_ok(),
            "{command} removed the link"
        );
        assert_eq!(read(&victim), b"precious");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Replaces every floating-point weight of the model in checkpoint `ckpt` by NaN.
fn poison(ckpt: &Path) {
    let cpu = CpuBackend::new();
    let file = nabla_nn::load_safetensors(ckpt, &cpu).expect("the checkpoint loads");
    let tensors: Vec<(String, Tensor<CpuBackend>)> = file
        .tensors
        .into_iter()
        .map(|(name, t)| {
            if name.starts_with("model.") && t.dtype() == DType::F32 {
                let nan = Tensor::full(t.shape().to_vec(), f32::NAN, DType::F32, &cpu);
                (name, nan.expect("a NaN tensor"))
            } else {
                (name, t)
            }
        })
        .collect();
    nabla_nn::save_safetensors(ckpt, &tensors, &file.metadata).expect("saved");
}

/// The percentage on the line of `out` that starts with `label`.
fn percent(out: &str, label: &str) -> f64 {
    let line = out.lines().find(|l| l.starts_with(label)).expect(label);
    let value = line.trim_start_matches(label).trim().trim_end_matches('%');
    value.parse().expect("a percentage")
}

#[test]
fn checkpoints_with_non_finite_weights_are_refused_by_name() {
    let dir = temp_dir("nan");
    let ckpt = dir.join("nan.st");
    ok(&train_with(&ckpt, &["--no-plot", "--epochs", "1"]));
    poison(&ckpt);
    let input = dir.join("one.csv");
    std::fs::write(&input, format!("{}\n", vec!["0.5"; 64].join(","))).expect("input");
    let (c, i) = (ckpt.to_string_lossy(), input.to_string_lossy());
    let eval = |extra: &[&str]| {
        let mut args = vec!["eval", "--checkpoint", &c];
        args.extend_from_slice(extra);
        nabla(&args)
    };
    let predict = |extra: &[&str]| {
        let mut args = vec!["predict", "--checkpoint", &c, "--input", &i];
        args.extend_from_slice(extra);
        nabla(&args)
    };
    for o in [eval(&[]), predict(&[])] {
        assert_one_line_error(&o, "model.");
        assert!(stderr(&o).contains("NaN"), "{}", stderr(&o));
        assert!(stderr(&o).contains("--allow-non-finite"), "{}", stderr(&o));
    }
    let o = eval(&["--allow-non-finite"]);
    ok(&o);
    let out = stdout(&o);
    assert!(
        percent(&out, "top-5 accuracy") >= percent(&out, "accuracy"),
        "{out}"
    );
    ok(&predict(&["--allow-non-finite"]));
    std::fs::remove_dir_all(dir).ok();
}
