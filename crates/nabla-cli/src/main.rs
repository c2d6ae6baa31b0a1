//! Owns the `nabla` binary: its arguments, built-in models and the train/eval/predict/generate
//! commands.
//! Must not depend on the `nabla` facade or `nabla-py`; MPI only through its opt-in `mpi` feature.
//!
//! `nabla`: train, evaluate and run small image classifiers from the command line.
//!
//! `nabla train` with no arguments trains a small CNN on the UCI digits embedded in nabla and
//! reaches about 98% test accuracy in seconds; `nabla eval` and `nabla predict` use the checkpoint
//! it writes. `nabla --help` and `nabla <command> --help` describe every option.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.

mod agreement;
mod args;
#[cfg(test)]
mod args_fuzz;
mod backend;
mod commands;
mod data;
mod generate;
mod info;
mod models;

use args::{Cli, Command};
use clap::Parser;
use clap::error::ErrorKind;
use std::process::ExitCode;

/// Squeezes an error message onto one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes the one-line error to standard error (ignoring a closed stream).
fn fail(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            return match e.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        ExitCode::from(2)
                    } else {
                        ExitCode::SUCCESS
                    }
                }
                _ => {
                    fail(&format!("{} (see nabla --help)", one_line(&e.to_string())));
                    ExitCode::from(2)
                }
            };
        }
    };
    let result = match &cli.command {
        Command::Train(a) => return train(a),
        Command::Eval(a) => commands::eval(a),
        Command::Predict(a) => commands::predict(a),
        Command::Generate(a) => generate::generate(a),
    };
    finish(result)
}

/// The exit code of a command's `result`, after printing its error.
fn finish(result: nabla_core::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            fail(&format!("error: {}", one_line(&e.to_string())));
            ExitCode::FAILURE
        }
    }
}

/// `nabla train`, as one rank of a data-parallel job when an MPI launcher started this process.
/// A rank that fails prints its error, naming the rank, and exits at once without finalizing MPI:
/// the launcher then ends the whole job, instead of the other ranks waiting for ever in their next
/// collective.
fn train(args: &args::TrainArgs) -> ExitCode {
    let comm = match nabla_distributed::from_environment() {
        Ok(comm) => comm,
        Err(e) => return finish(Err(e)),
    };
    match commands::train(args, std::sync::Arc::clone(&comm)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if comm.world_size() > 1 => {
            let e = nabla_distributed::rank_error(comm.as_ref(), e);
            fail(&format!("error: {}", one_line(&e.to_string())));
            std::process::exit(1)
        }
        Err(e) => finish(Err(e)),
    }
}
