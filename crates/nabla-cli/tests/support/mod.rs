//! Running the `nabla` binary from the integration tests, and the checks on its output they share.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `nabla` with `args`.
pub fn nabla(args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(args)
        .output()
    {
        Ok(o) => o,
        Err(e) => panic!("could not run nabla: {e}"),
    }
}

/// Standard error of a run.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output of a run.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Fails unless `o` failed with exactly one line on standard error containing `needle`, and no panic.
pub fn assert_one_line_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A path in the temporary directory, unique to this test process.
pub fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nabla-cli-{}-{name}", std::process::id()))
}

/// `nabla train --model mlp --checkpoint CKPT --no-plot -q` followed by `extra`.
pub fn train_mlp(ckpt: &std::path::Path, extra: &[&str]) -> Output {
    let c = ckpt.to_string_lossy();
    let mut args = vec![
        "train",
        "--model",
        "mlp",
        "--checkpoint",
        &c,
        "--no-plot",
        "-q",
    ];
    args.extend_from_slice(extra);
    nabla(&args)
}

/// `nabla predict --checkpoint CKPT --input INPUT`.
pub fn predict(ckpt: &std::path::Path, input: &std::path::Path) -> Output {
    nabla(&[
        "predict",
        "--checkpoint",
        &ckpt.to_string_lossy(),
        "--input",
        &input.to_string_lossy(),
    ])
}
