//! Proptest mutation fuzzing of `load_safetensors`, `load_checkpoint` and `load_torch`: mutated valid
//! files, headers with substituted fields, well-formed headers with repeated names and unknown
//! dtypes, and `torch.save` archives whose pickle is mutated (rezipped, so that checksums hold and
//! the unpickler sees every mutation).
//! Every file must load or be refused with one line, never panic, and hold little memory.

use crate::mutation::{config, mutate, mutations, text_dim};
use crate::peak::peak_bytes;
use crate::{check_message, check_one_line, file, linear, seed_file, temp_dir};
use nabla_core::{Result, with_allocation_limit};
use nabla_cpu::CpuBackend;
use nabla_nn::{TrainingState, load_checkpoint, load_safetensors, load_torch, save_checkpoint};
use proptest::prelude::*;
use proptest::sample::select;
use std::path::Path;

const MIB: usize = 1 << 20;

/// Values that break sizes and parsers when written over a header (for [`mutations`]).
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

/// Values that break pickles when written over one: opcodes that build, call, look up or end,
/// lengths, and globals outside the allow-list.
const PICKLE_INTERESTING: &[&[u8]] = &[
    b"(",
    b")",
    b"R",
    b"Q",
    b"b",
    b".",
    b"h\xff",
    b"j\xff\xff\xff\xff",
    b"X\xff\xff\xff\x7f",
    b"\x8a\x09",
    b"\x8d\xff\xff\xff\xff\xff\xff\xff\xff",
    b"cposix\nsystem\n",
    b"ctorch\nFloatStorage\n",
    b"ctorch._utils\n_rebuild_tensor_v2\n",
    b"K\xff",
    b"J\xff\xff\xff\x7f",
];

/// `torch.save`'s archive of the fixture state dict with its `data.pkl` replaced by `pickle`.
fn torch_archive(pickle: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    use std::io::{Read, Write};
    let seed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torch_files/state_dict.pt");
    let mut zip = zip::ZipArchive::new(std::fs::File::open(seed).unwrap()).unwrap();
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut pickle = Some(pickle);
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let name = entry.name().unwrap().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if name.ends_with("/data.pkl") {
            bytes = pickle.take().unwrap()(bytes);
        }
        out.start_file(name, options).unwrap();
        out.write_all(&bytes).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// Loads `bytes` as `name` in `dir` with `load` under a 64 MiB allocation limit: `Ok`, or one line
/// (naming the file); never a panic, never much memory.
fn check_load(dir: &Path, name: &str, bytes: &[u8], load: impl FnOnce(&Path) -> Result<()>) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let (result, peak) = with_allocation_limit(64 * MIB, || peak_bytes(|| load(&path)));
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

/// Dimensions worth trying: small, zero, and large enough to overflow.
fn dim() -> impl Strategy<Value = String> {
    text_dim(&[
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "1.5",
    ])
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
    fn safetensors_mutations(mutations in mutations(INTERESTING)) {
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
    fn checkpoint_mutations(mutations in mutations(INTERESTING)) {
        let dir = temp_dir("fuzz-checkpoint");
        let path = dir.join("seed.ckpt");
        let training = TrainingState { epoch: 3, step: 30, ..TrainingState::default() };
        save_checkpoint(&path, &linear(2), None, &training).unwrap();
        let bytes = mutate(std::fs::read(&path).unwrap(), &mutations);
        check_load(&dir, "m.ckpt", &bytes, |p| {
            load_checkpoint(p, &linear(2), None, &CpuBackend::new()).map(drop)
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn torch_pickle_mutations(mutations in mutations(PICKLE_INTERESTING)) {
        let dir = temp_dir("fuzz-torch-pickle");
        let bytes = torch_archive(|pickle| mutate(pickle, &mutations));
        check_load(&dir, "m.pt", &bytes, |p| load_torch(p, &CpuBackend::new()).map(drop));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn torch_archive_mutations(mutations in mutations(INTERESTING)) {
        let dir = temp_dir("fuzz-torch-archive");
        let bytes = mutate(torch_archive(|pickle| pickle), &mutations);
        check_load(&dir, "a.pt", &bytes, |p| load_torch(p, &CpuBackend::new()).map(drop));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
