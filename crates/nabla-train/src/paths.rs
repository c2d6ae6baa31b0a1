//! Checks that a training run can write its output files, made before the run starts rather than
//! after hours of training: the path must name a regular file or nothing (never a symbolic link), in
//! a directory where files can be created, and an existing file there must be one nabla wrote
//! unless the run may overwrite it.

use crate::history::{LogFormat, is_log};
use crate::plot::is_plot;
use nabla_core::{Error, Result};
use nabla_nn::{create_temp_file, destination_problem, is_checkpoint, remove_stale_temp_files};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The error for an output file `path` (the `what`: "checkpoint", "plot", ...) that cannot be written.
fn unwritable(what: &str, path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Io {
        context: format!("checking the {what} path {}", path.display()),
        message: why.to_string(),
    }
}

/// The directory `path` is written into (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fails unless `path` can be written as a regular file: it must name a file (not a symbolic link,
/// a directory or a device such as `/dev/null`), its directory must exist, and a file can be created
/// there (checked by creating and removing a probe file, so read-only directories and permission
/// problems surface now). An existing file is left untouched.
///
/// ```
/// use nabla_train::check_output_path;
/// let dir = std::env::temp_dir();
/// check_output_path(&dir.join("nabla-ok.safetensors"), "checkpoint")?;
/// let err = check_output_path(&dir, "checkpoint").unwrap_err().to_string();
/// assert!(err.contains("is a directory"));
/// assert!(check_output_path(std::path::Path::new("/no/such/dir/x.svg"), "plot").is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn check_output_path(path: &Path, what: &str) -> Result<()> {
    if path.file_name().is_none() {
        return Err(unwritable(what, path, "the path names no file"));
    }
    if let Some(why) = destination_problem(path) {
        return Err(unwritable(what, path, why));
    }
    let dir = parent_dir(path);
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(unwritable(
                what,
                path,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Err(_) => {
            return Err(unwritable(
                what,
                path,
                format!("directory {} does not exist", dir.display()),
            ));
        }
    }
    match create_temp_file(&dir, ".nabla-write-probe-") {
        Ok((_, probe)) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(unwritable(
            what,
            path,
            format!("cannot create files in {}: {e}", dir.display()),
        )),
    }
}

/// The files a training run writes, each recognised by what nabla writes at its start.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Output {
    /// A checkpoint: a safetensors file whose header names a nabla checkpoint format.
    Checkpoint,
    /// A log: a CSV log starts with nabla's header row, a JSON-lines log with an epoch record.
    Log(LogFormat),
    /// A plot: an SVG file that starts as nabla draws every plot.
    Plot,
}

/// How many bytes of an existing file are read to tell whether nabla wrote it.
const SNIFF_BYTES: u64 = 4096;

impl Output {
    /// The word for the file in messages.
    fn name(self) -> &'static str {
        match self {
            Output::Checkpoint => "checkpoint",
            Output::Log(_) => "log",
            Output::Plot => "plot",
        }
    }

    /// Whether the existing file at `path` is one nabla wrote as this output.
    fn written_by_nabla(self, path: &Path) -> bool {
        let start = || -> Option<String> {
            let mut bytes = Vec::new();
            let file = std::fs::File::open(path).ok()?;
            file.take(SNIFF_BYTES).read_to_end(&mut bytes).ok()?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        };
        match self {
            Output::Checkpoint => is_checkpoint(path),
            Output::Log(format) => start().is_some_and(|text| is_log(&text, format)),
            Output::Plot => start().is_some_and(|text| is_plot(&text)),
        }
    }
}

/// Checks an output file of a run before it starts (see [`check_output_path`]), refuses to replace
/// an existing non-empty file that nabla did not write as this output unless `overwrite`, and removes
/// the temporary files that killed saves of `path` left behind
/// ([`remove_stale_temp_files`]).
pub(crate) fn check_output(path: &Path, kind: Output, overwrite: bool) -> Result<()> {
    let what = kind.name();
    check_output_path(path, what)?;
    let exists_with_data = std::fs::metadata(path).is_ok_and(|m| m.len() > 0);
    if exists_with_data && !overwrite && !kind.written_by_nabla(path) {
        return Err(unwritable(
            what,
            path,
            format!(
                "the file exists and is not a {what} nabla wrote; give --overwrite \
                 (TrainerConfig::overwrite) to replace it"
            ),
        ));
    }
    remove_stale_temp_files(path);
    Ok(())
}

/// Fails unless `path` is an existing regular file to read (`what` names it in the error): a missing
/// path, a directory and a device each get their own message.
///
/// ```
/// use nabla_train::check_input_file;
/// let err = check_input_file(&std::env::temp_dir(), "checkpoint").unwrap_err().to_string();
/// assert!(err.contains("is a directory"));
/// assert!(check_input_file(std::path::Path::new("/dev/null"), "checkpoint").is_err());
/// ```
pub fn check_input_file(path: &Path, what: &str) -> Result<()> {
    let fail = |message: &str| Error::Io {
        context: format!("opening the {what} {}", path.display()),
        message: message.to_string(),
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) if meta.is_dir() => Err(fail("it is a directory, not a file")),
        Ok(_) => Err(fail("it is not a regular file (a device, pipe or socket)")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(fail("it does not exist")),
        Err(e) => Err(fail(&e.to_string())),
    }
}
