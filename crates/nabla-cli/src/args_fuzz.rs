//! Fuzzing the argument parser: random command lines built from the real flags, values that are
//! valid, out of range, negative, huge, non-numeric or empty, and stray tokens. Parsing and
//! [`TrainArgs::validate`] must return (a value or a one-line error), never panic. The number of
//! cases is `NABLA_FUZZ_CASES` (default 256).

use crate::args::{Cli, Command};
use clap::Parser;
use proptest::prelude::*;

/// Flags of every subcommand (some take a value, some do not).
const FLAGS: &[&str] = &[
    "--model",
    "--dataset",
    "--data-dir",
    "--epochs",
    "--batch-size",
    "--optimizer",
    "--lr",
    "--schedule",
    "--seed",
    "--checkpoint",
    "--checkpoint-every",
    "--resume",
    "--pretrained",
    "--detect-anomaly",
    "--early-stopping",
    "--workers",
    "--log",
    "--plot",
    "--no-plot",
    "--quiet",
    "-q",
    "--threads",
    "--backend",
    "--input",
    "--weights",
    "--prompt-ids",
    "--prompt-text",
    "--max-new-tokens",
    "--accumulate",
    "--temperature",
    "--top-k",
    "--eos-id",
    "--n-head",
    "--help",
    "--version",
    "--",
    "-",
];

/// Values: good ones, edge numbers and garbage.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "-0.1",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "-inf",
    "0x10",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "1e-320",
    "",
    " ",
    "mlp",
    "cnn",
    "resnet",
    "resnet18",
    "resnet50",
    "vit-tiny",
    "vgg",
    "digits",
    "mnist",
    "fashion-mnist",
    "cifar10",
    "cifar100",
    "sgd",
    "adam",
    "adamw",
    "cosine",
    "step",
    "onecycle",
    "none",
    "cpu",
    "wgpu",
    "cuda",
    "x.csv",
    "x.jsonl",
    "x.txt",
    "/",
    "/dev/null",
    "\u{0}",
    "é",
    "--",
    "=",
];

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(FLAGS).prop_map(str::to_string),
        3 => proptest::sample::select(VALUES).prop_map(str::to_string),
        1 => "[ -~]{0,12}",
        1 => (proptest::sample::select(FLAGS), proptest::sample::select(VALUES))
            .prop_map(|(f, v)| format!("{f}={v}")),
    ]
}

fn cases() -> u32 {
    std::env::var("NABLA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn random_command_lines_parse_or_fail_cleanly(
        sub in proptest::sample::select(&["train", "eval", "predict", "generate", "bogus"][..]),
        tokens in proptest::collection::vec(token(), 0..8),
    ) {
        let argv = std::iter::once("nabla".to_string())
            .chain(std::iter::once(sub.to_string()))
            .chain(tokens);
        match Cli::try_parse_from(argv) {
            Ok(cli) => {
                if let Command::Train(args) = &cli.command
                    && let Err(e) = args.validate()
                {
                    prop_assert!(!e.to_string().contains('\n'), "{e}");
                }
            }
            Err(e) => {
                let line = crate::one_line(&e.to_string());
                prop_assert!(!line.is_empty());
            }
        }
    }
}
