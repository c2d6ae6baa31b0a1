//! Runs the `nabla` binary: argument errors, missing files, the backend choice (a CPU checkpoint
//! evaluated on wgpu), and a quick train / eval / predict / resume cycle on the embedded digits.

mod support;

use std::process::Output;
use support::{assert_one_line_error, nabla, predict, stderr, stdout, temp, train_mlp};

#[test]
fn bad_arguments_give_one_line_errors() {
    assert_one_line_error(
        &nabla(&["train", "--epochs", "many"]),
        "invalid value 'many'",
    );
    assert_one_line_error(&nabla(&["train", "--model", "vgg"]), "invalid value 'vgg'");
    assert_one_line_error(&nabla(&["frobnicate"]), "unrecognized subcommand");
    assert_one_line_error(&nabla(&["train", "--batch-size", "0"]), "--batch-size");
    assert_one_line_error(&nabla(&["train", "--epochs", "0"]), "--epochs 0");
    assert_one_line_error(
        &nabla(&["train", "--log", "x.txt", "--epochs", "1"]),
        ".csv or .jsonl",
    );
    assert_one_line_error(&nabla(&["predict"]), "--input");
    let o = nabla(&["train", "--backend", "tpu"]);
    assert_one_line_error(&o, "invalid value 'tpu'");
    assert_eq!(o.status.code(), Some(2));
}

/// Whether `o` is the one-line failure of `--backend wgpu` on a machine without an adapter (then the
/// wgpu checks are skipped with a message, except with `CI=true`, where they fail).
fn no_wgpu_adapter(o: &Output) -> bool {
    let missing = !o.status.success() && stderr(o).contains("no usable wgpu adapter");
    if missing {
        assert_one_line_error(o, "--backend wgpu");
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but no wgpu adapter: {}",
            stderr(o)
        );
        eprintln!("no wgpu adapter, skipping the --backend wgpu check");
    }
    missing
}

/// The number after `label` on a line of `text`.
fn metric(text: &str, label: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|rest| rest.trim().trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in {text}"))
}

#[test]
fn a_cpu_checkpoint_evaluates_on_wgpu_like_on_the_cpu() -> Result<(), Box<dyn std::error::Error>> {
    let ckpt = temp("backends.safetensors");
    let c = ckpt.to_string_lossy();
    let o = train_mlp(&ckpt, &["--epochs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let on_cpu = nabla(&["eval", "--checkpoint", &c, "--backend", "cpu"]);
    assert!(on_cpu.status.success(), "{}", stderr(&on_cpu));
    let on_gpu = nabla(&["eval", "--checkpoint", &c, "--backend", "wgpu"]);
    if !no_wgpu_adapter(&on_gpu) {
        assert!(on_gpu.status.success(), "{}", stderr(&on_gpu));
        let (cpu, gpu) = (stdout(&on_cpu), stdout(&on_gpu));
        assert_eq!(
            metric(&cpu, "accuracy"),
            metric(&gpu, "accuracy"),
            "{cpu}\n{gpu}"
        );
        assert!(
            (metric(&cpu, "loss") - metric(&gpu, "loss")).abs() <= 2e-4,
            "{cpu}\n{gpu}"
        );
    }
    std::fs::remove_file(ckpt).ok();
    Ok(())
}

#[test]
fn missing_files_give_one_line_errors() {
    let missing = temp("does-not-exist.safetensors");
    let m = missing.to_string_lossy();
    assert_one_line_error(&nabla(&["eval", "--checkpoint", &m]), "does not exist");
    assert_one_line_error(
        &nabla(&["predict", "--checkpoint", &m, "--input", "x.npy"]),
        "does not exist",
    );
    assert_one_line_error(
        &nabla(&["train", "--resume", "--checkpoint", &m]),
        "does not exist",
    );
    assert_one_line_error(
        &nabla(&[
            "train",
            "--dataset",
            "mnist",
            "--data-dir",
            "/nonexistent/mnist",
        ]),
        "/nonexistent/mnist",
    );
    assert_one_line_error(&nabla(&["train", "--dataset", "mnist"]), "--data-dir");
}

#[test]
fn help_explains_the_commands() {
    let o = nabla(&["--help"]);
    assert!(o.status.success());
    let text = stdout(&o);
    for word in ["train", "eval", "predict", "embedded digits"] {
        assert!(text.contains(word), "{word} missing from {text}");
    }
    let o = nabla(&["train", "--help"]);
    assert!(stdout(&o).contains("--schedule") && stdout(&o).contains("fashion-mnist"));
}

#[test]
fn quick_train_then_eval_predict_and_resume() -> Result<(), Box<dyn std::error::Error>> {
    let (ckpt, plot, log, input) = (
        temp("quick.safetensors"),
        temp("quick.svg"),
        temp("quick.csv"),
        temp("rows.csv"),
    );
    let (c, p, l) = (
        ckpt.to_string_lossy(),
        plot.to_string_lossy(),
        log.to_string_lossy(),
    );
    let common = [
        "--model",
        "mlp",
        "--checkpoint",
        &c,
        "--plot",
        &p,
        "--log",
        &l,
        "-q",
    ];
    let mut args = vec!["train", "--epochs", "1"];
    args.extend(common);
    let o = nabla(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("test accuracy"));
    assert!(std::fs::read_to_string(&plot)?.contains("</svg>"));
    assert_eq!(std::fs::read_to_string(&log)?.lines().count(), 2);

    let o = nabla(&["eval", "--checkpoint", &c]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for word in [
        "mlp",
        "360 examples",
        "accuracy",
        "top-5",
        "confusion matrix",
        "macro avg",
    ] {
        assert!(text.contains(word), "{word} missing from {text}");
    }

    // Three digits (pixels / 16) as CSV rows.
    let cpu = nabla_cpu::CpuBackend::new();
    let digits = nabla_data::Digits::load(&cpu)?;
    let pixels = digits.images.to_vec::<f32>()?;
    let rows: Vec<String> = pixels
        .chunks(64)
        .take(3)
        .map(|r| r.iter().map(f32::to_string).collect::<Vec<_>>().join(","))
        .collect();
    std::fs::write(&input, rows.join("\n") + "\n")?;
    let o = predict(&ckpt, &input);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.starts_with("example,class,probability\n0,"));

    // Resume the one-epoch run to two epochs.
    let mut args = vec!["train", "--epochs", "2", "--resume"];
    args.extend(common);
    let o = nabla(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("after 2 epochs"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&log)?.lines().count(), 3);
    let mut args = vec![
        "train",
        "--epochs",
        "2",
        "--resume",
        "--model",
        "cnn",
        "--checkpoint",
        &c,
    ];
    args.push("-q");
    assert_one_line_error(&nabla(&args), "holds a mlp model");
    for f in [ckpt, plot, log, input] {
        std::fs::remove_file(f).ok();
    }
    Ok(())
}

/// `nabla train` built without the `mpi` feature, started as a launcher would start one of two
/// ranks, stops with one line saying how to build with MPI, and writes nothing; as a launcher's
/// world of one it trains alone.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_refuses_to_be_one_of_several_ranks() {
    let ckpt = temp("no-mpi.safetensors");
    let c = ckpt.to_string_lossy().into_owned();
    let train_as = |size: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nabla"))
            .args([
                "train",
                "--model",
                "mlp",
                "--epochs",
                "1",
                "--no-plot",
                "-q",
            ])
            .args(["--checkpoint", &c])
            .env("OMPI_COMM_WORLD_SIZE", size)
            .env("OMPI_COMM_WORLD_RANK", "0")
            .output()
            .expect("nabla runs")
    };
    let o = train_as("2");
    assert_one_line_error(&o, "one of 2 ranks");
    assert_one_line_error(&o, "--features mpi");
    assert!(!ckpt.exists(), "a refused rank wrote {c}");
    let o = train_as("1");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(ckpt.exists());
    std::fs::remove_file(&ckpt).ok();
}

/// `--accumulate N` makes each optimizer step of N batches: the run takes a Nth of the steps, and
/// `--resume` must repeat it.
#[test]
fn accumulated_batches_make_fewer_steps_and_must_be_resumed_alike() {
    let steps = |accumulate: &str| -> (u64, std::process::Output) {
        let name = format!("accumulate-{accumulate}");
        let (ckpt, log) = (temp(&format!("{name}.st")), temp(&format!("{name}.csv")));
        let (c, l) = (ckpt.to_string_lossy(), log.to_string_lossy());
        let args = [
            "train",
            "--model",
            "mlp",
            "--epochs",
            "1",
            "--batch-size",
            "64",
            "--no-plot",
            "-q",
            "--accumulate",
            accumulate,
            "--checkpoint",
            &c,
            "--log",
            &l,
        ];
        let o = nabla(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let csv = std::fs::read_to_string(&log).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let column = header.iter().position(|&h| h == "step").unwrap();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        // Resuming with another --accumulate is refused, naming it.
        let r = nabla(&[
            "train",
            "--model",
            "mlp",
            "--epochs",
            "2",
            "--resume",
            "--checkpoint",
            &c,
            "--batch-size",
            "64",
            "--no-plot",
            "-q",
        ]);
        for f in [ckpt, log] {
            std::fs::remove_file(f).ok();
        }
        (row[column].parse().unwrap(), r)
    };
    let (one, resumed) = steps("1");
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let (three, refused) = steps("3");
    assert_eq!(three, one.div_ceil(3), "{one} batches in steps of 3");
    assert_one_line_error(&refused, "--accumulate 3");
    assert_one_line_error(&nabla(&["train", "--accumulate", "0"]), "at least 1");
}
