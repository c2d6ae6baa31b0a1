//! Atomic writes that never go through a symbolic link: a temporary file created exclusively next to
//! the destination (a fresh name with a random part, `O_CREAT | O_EXCL`, which fails on an existing
//! file or link), flushed, then renamed over the destination; and the cleanup of temporary files
//! that saves killed before their rename left behind.

use super::io_error;
use nabla_core::Result;
use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a temporary file may go unmodified before it counts as left behind even though a process
/// with its process id runs (ids are reused, and other machines' processes cannot be seen).
const STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// How many fresh names [`create_temp_file`] tries before giving up.
const NAME_TRIES: usize = 16;

/// Why `meta` is not a regular file (a directory, a device, a pipe or a socket), if it is not one.
pub(crate) fn not_a_file(meta: &Metadata) -> Option<&'static str> {
    if meta.is_dir() {
        Some("it is a directory, not a file")
    } else if !meta.is_file() {
        Some("it is not a regular file (a device, a pipe or a socket)")
    } else {
        None
    }
}

/// Why nabla will not write a file at `path`, if it will not: `path` is a symbolic link (nabla
/// never writes through one, nor replaces one), a directory, or not a regular file (a device such as
/// `/dev/null`, a pipe or a socket). A missing path or a regular file is fine.
///
/// ```
/// # #[cfg(unix)] {
/// let dir = std::env::temp_dir().join(format!("nabla-doc-dest-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let link = dir.join("link");
/// std::os::unix::fs::symlink("/etc/hostname", &link).ok();
/// assert!(nabla_nn::destination_problem(&link).unwrap().contains("symbolic link"));
/// assert!(nabla_nn::destination_problem(&dir.join("new.safetensors")).is_none());
/// std::fs::remove_dir_all(&dir).ok();
/// # }
/// ```
pub fn destination_problem(path: &Path) -> Option<&'static str> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return Some(
            "it is a symbolic link, and nabla never writes through a link nor replaces one (remove \
             the link, or give the path of the file itself)",
        );
    }
    not_a_file(&meta)
}

/// The directory `path` lies in (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The start of the names of the temporary files that [`write_atomic`] writes for `file_name`:
/// `.NAME.tmp-`, followed by the writing process's id, `-` and 16 random hexadecimal digits.
fn temp_prefix(file_name: &OsStr) -> String {
    format!(".{}.tmp-", file_name.to_string_lossy())
}

/// 64 unpredictable bits, from the standard library's randomly keyed hasher fed a counter and the
/// time.
fn random_bits() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
    hasher.finish()
}

/// Creates a new, empty file in `dir` named `PREFIX` followed by this process's id, `-` and 16
/// random hexadecimal digits, exclusively (`O_CREAT | O_EXCL`): it never opens an existing file, and
/// never follows a symbolic link planted under the name. Returns the file, open for writing, and its
/// path.
///
/// ```
/// let dir = std::env::temp_dir();
/// let (file, path) = nabla_nn::create_temp_file(&dir, ".nabla-doc-")?;
/// drop(file);
/// assert!(path.file_name().unwrap().to_string_lossy().starts_with(".nabla-doc-"));
/// std::fs::remove_file(path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn create_temp_file(dir: &Path, prefix: &str) -> std::io::Result<(File, PathBuf)> {
    let mut last = None;
    for _ in 0..NAME_TRIES {
        let name = format!("{prefix}{}-{:016x}", std::process::id(), random_bits());
        let path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary file name")))
}

/// The process id in `name` when it is the name of a temporary file of `prefix`: `PREFIX PID`
/// (written by earlier versions) or `PREFIX PID-HEX`.
fn temp_file_pid(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    let (pid, random) = match rest.split_once('-') {
        Some((pid, random)) => (pid, Some(random)),
        None => (rest, None),
    };
    let all = |s: &str, f: fn(&u8) -> bool| !s.is_empty() && s.bytes().all(|b| f(&b));
    if !all(pid, u8::is_ascii_digit) || random.is_some_and(|r| !all(r, u8::is_ascii_hexdigit)) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` has ended, as far as this machine can tell: on Linux, `/proc/PID` is
/// missing (where `/proc` is mounted); elsewhere this is never known. This process has not ended
/// (another of its threads may be saving).
fn process_ended(pid: u32) -> bool {
    pid != std::process::id()
        && cfg!(target_os = "linux")
        && Path::new("/proc/self").exists()
        && !Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the temporary files that saves of `path` killed before their rename left in its
/// directory: regular files (never links, which are not followed either) named as
/// [`write_atomic`]'s temporary files for `path` (`.NAME.tmp-PID` or `.NAME.tmp-PID-HEX`) whose
/// process has ended (on Linux, where `/proc/PID` no longer exists) or that have not been modified
/// for 24 hours. Failures are ignored: a leftover costs disk space, not correctness.
///
/// [`write_atomic`] does this before every write; the `nabla` command line does it at the start of
/// every command for the files it reads or writes. A directory on a shared file system written
/// from several machines loses only the temporary files of other machines' saves that are in
/// progress, which then fail (the destination is left as it was).
pub fn remove_stale_temp_files(path: &Path) {
    let Some(file_name) = path.file_name() else {
        return;
    };
    let prefix = temp_prefix(file_name);
    let Ok(entries) = std::fs::read_dir(parent_dir(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| temp_file_pid(n, &prefix))
        else {
            continue;
        };
        // `DirEntry::metadata` does not follow a link.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if meta.file_type().is_file() && (old || process_ended(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory (see
/// [`create_temp_file`]; it is never an existing file or a link), flushed to disk, then renamed over
/// `path`. Before writing, the temporary files of earlier saves of `path` that were killed are
/// removed ([`remove_stale_temp_files`]).
///
/// A `path` that is a symbolic link, a directory or not a regular file (a device such as
/// `/dev/null`) is an error, and is left alone (see [`destination_problem`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let context = || format!("writing {}", path.display());
    if let Some(why) = destination_problem(path) {
        return Err(io_error(context(), why));
    }
    let file_name = path
        .file_name()
        .ok_or_else(|| io_error(context(), "the path names no file"))?;
    remove_stale_temp_files(path);
    let (mut file, tmp) = create_temp_file(&parent_dir(path), &temp_prefix(file_name))
        .map_err(|e| io_error(context(), format!("creating a temporary file: {e}")))?;
    let result = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(context(), e));
    }
    Ok(())
}
