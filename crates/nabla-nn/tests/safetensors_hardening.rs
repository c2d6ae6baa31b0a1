//! safetensors files that must be refused with one clear line naming the file (truncated files,
//! header lengths over the limit, tensor names given twice, offsets that do not fit the shapes or the
//! data, paths that are not files), the cleanup of temporary files left by killed saves, and
//! proptest mutation fuzzing of `load_safetensors` and `load_checkpoint` from valid files written
//! here. `NABLA_FUZZ_CASES` sets the number of cases of each fuzz test (default 256).

use nabla_core::{DType, Generator, Result, with_allocation_limit};
use nabla_cpu::CpuBackend;
use nabla_nn::{
    Linear, TrainingState, load_checkpoint, load_safetensors, save_checkpoint, save_safetensors,
    write_atomic,
};
use nabla_tensor::Tensor;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The peak heap memory of a closure on the current thread.
mod peak {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// The system allocator, counting the live and peak bytes of each thread.
    pub struct Counting;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn record(delta: isize) {
        let _ = LIVE.try_with(|live| {
            let now = live.get() + delta;
            live.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    // SAFETY: every call is forwarded to `System` unchanged; the counting touches only `Cell<isize>`
    // thread-locals with const initialisers, which never allocate.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                record(layout.size() as isize);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                record(layout.size() as isize);
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.dealloc(ptr, layout) };
            record(-(layout.size() as isize));
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                record(new_size as isize - layout.size() as isize);
            }
            p
        }
    }

    /// Runs `f`; returns its result and the most heap bytes it held at once on this thread.
    pub fn peak_bytes<R>(f: impl FnOnce() -> R) -> (R, usize) {
        let start = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(start));
        let result = f();
        let peak = PEAK.with(Cell::get);
        (result, (peak - start).max(0) as usize)
    }
}

#[global_allocator]
static ALLOCATOR: peak::Counting = peak::Counting;

const MIB: usize = 1 << 20;

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nabla-st-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A safetensors file: the header length, `header`, then `data`.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

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

/// A reader error: one line, naming the file, short.
fn check_message(msg: &str, name: &str) {
    check_one_line(msg);
    assert!(msg.contains(name), "error does not name {name}: {msg}");
}

/// An error: one line, short.
fn check_one_line(msg: &str) {
    assert!(!msg.contains('\n'), "error spans lines: {msg}");
    assert!(msg.len() < 1200, "error of {} bytes: {msg}", msg.len());
}

/// A valid file of three tensors and metadata, written by `save_safetensors`.
fn seed_file(dir: &Path) -> Vec<u8> {
    let cpu = CpuBackend::new();
    let tensors = vec![
        (
            "a.weight".to_string(),
            Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &cpu).unwrap(),
        ),
        (
            "b".to_string(),
            Tensor::from_vec(vec![-1i64, 7], [2], &cpu).unwrap(),
        ),
        (
            "c".to_string(),
            Tensor::from_vec(vec![3u8], [1], &cpu).unwrap(),
        ),
    ];
    let metadata = HashMap::from([("k".to_string(), "v".to_string())]);
    let path = dir.join("seed.safetensors");
    save_safetensors(&path, &tensors, &metadata).unwrap();
    std::fs::read(&path).unwrap()
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
    let cases = [
        (
            r#"{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}}"#,
            12,
            "tensor `x` of dtype F32 and shape [4] needs 16 bytes, but its data offsets [0, 12] hold 12",
        ),
        (
            r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            2,
            "tensor `x` has data offsets [0, 4] outside the data of 2 bytes",
        ),
        (
            r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}"#,
            3,
            "tensor `x` has data offsets [2, 3], but the tensor data before it ends at byte 0",
        ),
        (
            r#"{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
            2,
            "tensor `y` has data offsets [1, 2], but the tensor data before it ends at byte 2",
        ),
        (
            r#"{"x":{"dtype":"U8","shape":[0],"data_offsets":[3,1]}}"#,
            3,
            "tensor `x` has data offsets [3, 1], which end before they start",
        ),
        (
            r#"{"x":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}"#,
            1,
            "tensor `x` has unknown dtype `Q8`",
        ),
        (
            r#"{"x":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#,
            8,
            "tensor `x` has shape [4294967296, 4294967296], whose size overflows",
        ),
        (
            r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
            4,
            "3 unexpected trailing bytes",
        ),
        (
            r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,-1]}}"#,
            1,
            "not a safetensors JSON header: invalid value: integer `-1`",
        ),
        (
            r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}}"#,
            1,
            "not a safetensors JSON header",
        ),
        (
            "[1, 2]",
            0,
            "not a safetensors JSON header: invalid type: sequence",
        ),
    ];
    for (header, data_len, expected) in cases {
        let e = load_error(&dir, "bad.safetensors", &file(header, &vec![0; data_len]));
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
            e.contains("not a regular file") && e.contains("null-link"),
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
    let alive = dir.join(".model.safetensors.tmp-1");
    let other_file = dir.join(".other.safetensors.tmp-4999999");
    let not_a_pid = dir.join(".model.safetensors.tmp-12x");
    for p in [&dead, &alive, &other_file, &not_a_pid] {
        std::fs::write(p, b"half a save").unwrap();
    }
    write_atomic(&target, b"whole").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"whole");
    assert_eq!(
        !dead.exists(),
        cfg!(target_os = "linux"),
        "dead process's file"
    );
    for kept in [&alive, &other_file, &not_a_pid] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    let own = dir.join(format!(".model.safetensors.tmp-{}", std::process::id()));
    assert!(!own.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The proptest configuration: `NABLA_FUZZ_CASES` cases (default 256), no regression files (a
/// failure becomes a named test above).
fn config() -> ProptestConfig {
    let cases = std::env::var("NABLA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Insert(Index, u8),
    Delete(Index),
    Truncate(Index),
    Overwrite(Index, &'static [u8]),
}

/// Values that break sizes and parsers when written over a header.
const INTERESTING: &[&[u8]] = &[
    &[0xff; 8],
    &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    &[0, 0, 0, 0, 0, 0, 0, 0],
    b"18446744073709551615",
    b"18446744073709551616",
    b"-1",
    b"1e3",
    b"null",
    b"\"F4\"",
    b"\"a.weight\"",
    b"[",
    b"}",
    b"\\u0000",
    b"\xc3",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<Index>().prop_map(Mutation::Delete),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), select(INTERESTING)).prop_map(|(i, v)| Mutation::Overwrite(i, v)),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        match *m {
            Mutation::Flip(i, bit) if len > 0 => bytes[i.index(len)] ^= 1 << bit,
            Mutation::Insert(i, b) => bytes.insert(i.index(len + 1), b),
            Mutation::Delete(i) if len > 0 => {
                bytes.remove(i.index(len));
            }
            Mutation::Truncate(i) => bytes.truncate(i.index(len + 1)),
            Mutation::Overwrite(i, v) if len > 0 => {
                let at = i.index(len);
                let end = (at + v.len()).min(len);
                bytes[at..end].copy_from_slice(&v[..end - at]);
            }
            _ => {}
        }
    }
    bytes
}

/// Loads `bytes` as `name` in `dir` with `load` under a 64 MiB allocation limit: `Ok`, or one line
/// (naming the file); never a panic, never much memory.
fn check_load(dir: &Path, name: &str, bytes: &[u8], load: impl FnOnce(&Path) -> Result<()>) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let (result, peak) = with_allocation_limit(64 * MIB, || peak::peak_bytes(|| load(&path)));
    if let Err(e) = result {
        let msg = e.to_string();
        // A file that reads but does not fit the model is refused by `load_state_dict`, whose errors
        // name the parameters rather than the file.
        if msg.starts_with("load_state_dict") {
            check_one_line(&msg);
        } else {
            check_message(&msg, name);
        }
    }
    assert!(peak < 4 * MIB, "peak {peak} bytes");
}

/// The model of the checkpoint seeds.
fn model() -> Linear<CpuBackend> {
    Linear::new(
        2,
        2,
        true,
        DType::F32,
        &mut Generator::new(1),
        &CpuBackend::new(),
    )
    .unwrap()
}

/// Dimensions worth trying: small, zero, and large enough to overflow.
fn dim() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..4).prop_map(|d| d.to_string()),
        select(
            &[
                "4294967296",
                "18446744073709551615",
                "18446744073709551616",
                "-1",
                "1.5"
            ][..]
        )
        .prop_map(str::to_string),
    ]
}

/// A header entry: a name, a dtype, a shape and offsets, each possibly wrong.
fn entry() -> impl Strategy<Value = String> {
    let name = select(&["a", "b", "w", "__metadata__", "é", ""][..]);
    let dtype = select(
        &[
            "F32", "F64", "U8", "BOOL", "I64", "BF16", "F4", "Q", "f32", "1",
        ][..],
    );
    let shape = prop::collection::vec(dim(), 0..4);
    let offset = prop_oneof![
        (0u64..40).prop_map(|o| o.to_string()),
        select(&["18446744073709551615", "-1", "null", "1e2"][..]).prop_map(str::to_string),
    ];
    (name, dtype, shape, offset.clone(), offset).prop_map(|(n, d, s, a, b)| {
        format!(
            r#""{n}":{{"dtype":"{d}","shape":[{}],"data_offsets":[{a},{b}]}}"#,
            s.join(",")
        )
    })
}

/// Well-formed entries (offsets that follow the shapes), from few names so that some repeat: the
/// file loads, or (a name given twice, a dtype nabla cannot hold) is refused by name.
fn consistent_entries() -> impl Strategy<Value = Vec<(&'static str, &'static str, Vec<usize>)>> {
    let name = select(&["a", "b", "c.d", "e"][..]);
    let dtype = select(
        &[
            "F32", "F64", "U8", "BOOL", "I64", "I32", "F16", "BF16", "U16", "F4",
        ][..],
    );
    let shape = prop::collection::vec(0usize..4, 0..4);
    prop::collection::vec((name, dtype, shape), 0..5)
}

/// The header and data of `entries`, laid out one after the other.
fn consistent_file(entries: &[(&str, &str, Vec<usize>)]) -> Vec<u8> {
    let mut parts = Vec::new();
    let mut end = 0;
    for (name, dtype, shape) in entries {
        let bits: usize = match *dtype {
            "F4" => 4,
            "U8" | "BOOL" => 8,
            "F16" | "BF16" | "U16" => 16,
            "F32" | "I32" => 32,
            _ => 64,
        };
        let start = end;
        end += (shape.iter().product::<usize>() * bits).div_ceil(8);
        parts.push(format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{start},{end}]}}"#
        ));
    }
    file(&format!("{{{}}}", parts.join(",")), &vec![1; end])
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn safetensors_consistent_headers(entries in consistent_entries()) {
        let dir = temp_dir("fuzz-consistent");
        let bytes = consistent_file(&entries);
        let mut loaded = None;
        check_load(&dir, "c.safetensors", &bytes, |p| {
            loaded = Some(load_safetensors(p, &CpuBackend::new())?.tensors.len());
            Ok(())
        });
        let mut names: Vec<_> = entries.iter().map(|e| e.0).collect();
        names.sort_unstable();
        names.dedup();
        if let Some(n) = loaded {
            prop_assert_eq!(n, entries.len(), "a file with a repeated name loaded");
        } else {
            let supported = ["F32", "F64", "U8", "BOOL", "I64", "I32", "F16", "BF16"];
            let all_fit = entries.iter().all(|e| supported.contains(&e.1));
            prop_assert!(names.len() < entries.len() || !all_fit, "a good file was refused");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn safetensors_mutations(mutations in prop::collection::vec(mutation(), 1..4)) {
        let dir = temp_dir("fuzz-mutations");
        let bytes = mutate(seed_file(&dir), &mutations);
        check_load(&dir, "m.safetensors", &bytes, |p| {
            load_safetensors(p, &CpuBackend::new()).map(drop)
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn safetensors_header_substitutions(
        entries in prop::collection::vec(entry(), 0..4),
        data_len in 0usize..48,
        length_lie in prop::option::of(select(&[0u64, 1, 100_000_001, u64::MAX][..])),
    ) {
        let dir = temp_dir("fuzz-headers");
        let mut bytes = file(&format!("{{{}}}", entries.join(",")), &vec![1; data_len]);
        if let Some(len) = length_lie {
            bytes[..8].copy_from_slice(&len.to_le_bytes());
        }
        check_load(&dir, "h.safetensors", &bytes, |p| {
            load_safetensors(p, &CpuBackend::new()).map(drop)
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn checkpoint_mutations(mutations in prop::collection::vec(mutation(), 1..4)) {
        let dir = temp_dir("fuzz-checkpoint");
        let path = dir.join("seed.ckpt");
        let training = TrainingState { epoch: 3, step: 30, ..TrainingState::default() };
        save_checkpoint(&path, &model(), None, &training).unwrap();
        let bytes = mutate(std::fs::read(&path).unwrap(), &mutations);
        check_load(&dir, "m.ckpt", &bytes, |p| {
            load_checkpoint(p, &model(), None, &CpuBackend::new()).map(drop)
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
