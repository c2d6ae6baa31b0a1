//! Files and paths that must be refused with one clear line, and the cleanup of stale temporary files.

use crate::{check_message, file, seed_file, temp_dir};
use nabla_core::DType;
use nabla_cpu::CpuBackend;
use nabla_nn::{load_safetensors, save_safetensors, write_atomic};
use nabla_tensor::Tensor;
use std::collections::HashMap;
use std::path::Path;

/// The error of loading `bytes` from a file named `name` in `dir`, after checking that it is one
/// line naming the file.
fn load_error(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let err = load_safetensors(&path, &CpuBackend::new())
        .err()
        .expect("the file must be refused")
        .to_string();
    check_message(&err, name);
    err
}

#[test]
fn truncated_files_say_what_was_expected() {
    let dir = temp_dir("truncated");
    let bytes = seed_file(&dir);
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let data_len = bytes.len() - 8 - header_len;
    for cut in [0, 5] {
        let e = load_error(&dir, "cut.safetensors", &bytes[..cut]);
        assert!(
            e.contains(&format!("truncated: the file has {cut} bytes")),
            "{e}"
        );
    }
    for cut in [8, 8 + header_len / 2, 8 + header_len - 1] {
        let e = load_error(&dir, "cut.safetensors", &bytes[..cut]);
        let after = cut - 8;
        assert!(
            e.contains(&format!(
                "truncated: the header length says {header_len} bytes but the file has only \
                 {after} bytes after it"
            )),
            "{e}"
        );
    }
    // Cut inside the data: the last tensor's offsets reach past it.
    let e = load_error(&dir, "cut.safetensors", &bytes[..bytes.len() - 3]);
    assert!(
        e.contains(&format!("outside the data of {} bytes", data_len - 3)),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn header_length_over_the_format_limit() {
    let dir = temp_dir("huge-header");
    for len in [100_000_001u64, u64::MAX] {
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        let e = load_error(&dir, "big.safetensors", &bytes);
        assert!(
            e.contains(&format!(
                "header length {len} is larger than the 100 MB limit"
            )),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tensor_names_given_twice_are_an_error() {
    let dir = temp_dir("duplicates");
    let entry = r#"{"dtype":"U8","shape":[1],"data_offsets":[0,1]}"#;
    let header = format!(r#"{{"w":{entry},"w":{entry}}}"#);
    let e = load_error(&dir, "dup.safetensors", &file(&header, &[5]));
    assert!(e.contains("names tensor `w` twice"), "{e}");
    let header = format!(r#"{{"__metadata__":{{"k":"1","k":"2"}},"w":{entry}}}"#);
    let e = load_error(&dir, "dup.safetensors", &file(&header, &[5]));
    assert!(e.contains("key `k` twice"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn offsets_that_do_not_fit_shapes_or_data_are_named() {
    let dir = temp_dir("offsets");
    // A case a line: a header, the number of data bytes after it, and what its error must say.
    let cases = r#"
{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}} | 12 | tensor `x` of dtype F32 and shape [4] needs 16 bytes, but its data offsets [0, 12] hold 12
{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} | 2 | tensor `x` has data offsets [0, 4] outside the data of 2 bytes
{"x":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}} | 3 | tensor `x` has data offsets [2, 3], but the tensor data before it ends at byte 0
{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}} | 2 | tensor `y` has data offsets [1, 2], but the tensor data before it ends at byte 2
{"x":{"dtype":"U8","shape":[0],"data_offsets":[3,1]}} | 3 | tensor `x` has data offsets [3, 1], which end before they start
{"x":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}} | 1 | tensor `x` has unknown dtype `Q8`
{"x":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}} | 8 | tensor `x` has shape [4294967296, 4294967296], whose size overflows
{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}} | 4 | 3 unexpected trailing bytes
{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,-1]}} | 1 | not a safetensors JSON header: invalid value: integer `-1`
{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}} | 1 | not a safetensors JSON header
[1, 2] | 0 | not a safetensors JSON header: invalid type: sequence
"#;
    for case in cases.trim().lines() {
        let [header, data_len, expected] = case.split(" | ").collect::<Vec<_>>()[..] else {
            panic!("not a case: {case}");
        };
        let data = vec![0; data_len.parse().unwrap()];
        let e = load_error(&dir, "bad.safetensors", &file(header, &data));
        assert!(e.contains(expected), "expected {expected:?} in: {e}");
    }
    // Text from the file is echoed short.
    let long = "n".repeat(100_000);
    let header = format!(r#"{{"{long}":{{"dtype":"Q","shape":[],"data_offsets":[0,0]}}}}"#);
    let e = load_error(&dir, "long.safetensors", &file(&header, &[]));
    assert!(e.len() < 700 && e.contains("(100000 bytes)"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn paths_that_are_not_regular_files_are_named_as_such() {
    let dir = temp_dir("not-files");
    let cpu = CpuBackend::new();
    let t = Tensor::ones([1], DType::F32, &cpu).unwrap();
    let tensors = [("t".to_string(), t)];
    let e = load_safetensors(&dir, &cpu).err().unwrap().to_string();
    assert!(
        e.contains("is a directory") && e.contains("not-files"),
        "{e}"
    );
    let e = save_safetensors(&dir, &tensors, &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is a directory") && e.contains("not-files"),
        "{e}"
    );
    #[cfg(unix)]
    {
        let e = load_safetensors("/dev/null", &cpu)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("not a regular file") && e.contains("/dev/null"),
            "{e}"
        );
        // Through a link, so that a failing check could only replace the link, never /dev/null.
        let link = dir.join("null-link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let e = write_atomic(&link, b"x").unwrap_err().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("null-link"),
            "{e}"
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn temp_files_of_ended_saves_are_removed() {
    let dir = temp_dir("stale");
    let target = dir.join("model.safetensors");
    // Above Linux's largest possible process id (2^22): never a running process.
    let dead = dir.join(".model.safetensors.tmp-4999999");
    let dead_random = dir.join(".model.safetensors.tmp-4999999-00c0ffee");
    let alive = dir.join(".model.safetensors.tmp-1");
    let alive_old = dir.join(".model.safetensors.tmp-1-beef");
    let other_file = dir.join(".other.safetensors.tmp-4999999");
    let not_a_pid = dir.join(".model.safetensors.tmp-12x");
    for p in [
        &dead,
        &dead_random,
        &alive,
        &alive_old,
        &other_file,
        &not_a_pid,
    ] {
        std::fs::write(p, b"half a save").unwrap();
    }
    // Untouched for two days: left behind, whichever process now has its id.
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
    let file = std::fs::File::options()
        .write(true)
        .open(&alive_old)
        .unwrap();
    file.set_modified(two_days_ago).unwrap();
    // A link with a temporary file's name is neither followed nor removed.
    #[cfg(unix)]
    let link = {
        let link = dir.join(".model.safetensors.tmp-4999999-ff");
        std::os::unix::fs::symlink(&other_file, &link).unwrap();
        link
    };
    write_atomic(&target, b"whole").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"whole");
    for removed in [&dead, &dead_random] {
        assert_eq!(
            !removed.exists(),
            cfg!(target_os = "linux"),
            "dead process's file"
        );
    }
    assert!(!alive_old.exists(), "an old temporary file was kept");
    for kept in [&alive, &other_file, &not_a_pid] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    #[cfg(unix)]
    assert!(
        std::fs::symlink_metadata(&link).is_ok(),
        "the link was removed"
    );
    let own = dir.join(format!(".model.safetensors.tmp-{}", std::process::id()));
    assert!(!own.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
