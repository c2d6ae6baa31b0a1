//! Checks that a training run can write its output files, made before the run starts rather than
//! after hours of training.

use nabla_core::{Error, Result};
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

/// Fails unless `path` can be written as a regular file: it must name a file (not a directory or a
/// device such as `/dev/null`), its directory must exist, and a file can be created there (checked
/// by creating and removing a probe file, so read-only directories and full permissions problems
/// surface now). An existing file is left untouched.
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
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_dir() {
            return Err(unwritable(
                what,
                path,
                "it is a directory; give a file path inside it",
            ));
        }
        if !meta.is_file() {
            return Err(unwritable(
                what,
                path,
                "it is not a regular file (a device, pipe or socket)",
            ));
        }
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
    let probe = dir.join(format!(".nabla-write-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
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
