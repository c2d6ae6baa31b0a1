//! Input that must be refused quickly, with little memory and one clear line: gzip bombs, headers
//! declaring huge sizes, huge headers, paths that are not files; and the crashes the fuzz tests found.

use crate::corpus::{check_error, gzip, gzip_bomb, idx, npy, npy_header, temp_dir};
use crate::peak::peak_bytes;
use nabla_core::{HostData, with_allocation_limit};
use nabla_data::{CsvOptions, parse_csv, parse_npy, read_csv, read_idx, read_npy};
use std::path::Path;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

/// Runs `f` under a 64 MiB allocation limit; returns its result, its peak heap bytes and its time.
fn bounded<R>(f: impl FnOnce() -> R) -> (R, usize, Duration) {
    let start = Instant::now();
    let (r, peak) = with_allocation_limit(64 * MIB, || peak_bytes(f));
    (r, peak, start.elapsed())
}

/// Writes `bytes` to `name` in `dir` and reads it back with [`read_idx`] or [`read_npy`] (by the
/// name) under [`bounded`], which must fail with an error naming the file and containing
/// `expected`; returns the read's peak heap bytes and time.
fn read_refused(dir: &Path, name: &str, bytes: &[u8], expected: &str) -> (usize, Duration) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let read = if name.contains("idx") {
        read_idx
    } else {
        read_npy
    };
    let (result, peak, time) = bounded(|| read(&path));
    let err = result.expect_err(&format!(
        "{name} was read, expected an error with {expected:?}"
    ));
    check_error(&err, name);
    assert!(err.to_string().contains(expected), "{err}");
    (peak, time)
}

#[test]
fn gzip_bomb_after_a_small_declared_size_is_rejected_quickly() {
    let dir = temp_dir("bomb-small");
    // 16 bytes declared, then 4 GiB of zeros: the old reader decompressed all of it.
    let files = [
        (
            "small.idx.gz",
            gzip_bomb(&idx(0x08, &[16], &[7; 16]), 4 * GIB),
        ),
        (
            "small.npy.gz",
            gzip_bomb(
                &npy(1, &npy_header("|u1", false, "(16,)"), &[7; 16]),
                4 * GIB,
            ),
        ),
    ];
    for (name, bytes) in files {
        assert!(bytes.len() < 8 * MIB, "the bomb is {} bytes", bytes.len());
        let (peak, time) = read_refused(&dir, name, &bytes, "trailing");
        assert!(peak < 2 * MIB, "{name}: peak {peak} bytes");
        assert!(time < Duration::from_secs(2), "{name}: {time:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gzip_bomb_declaring_a_huge_size_is_refused_by_the_allocation_limit() {
    let dir = temp_dir("bomb-huge");
    let files = [
        // 65536 x 65536 u8 = 4 GiB declared.
        (
            "huge.idx.gz",
            gzip_bomb(&idx(0x08, &[65536, 65536], &[]), 64 * MIB),
        ),
        (
            "huge.npy.gz",
            gzip_bomb(
                &npy(2, &npy_header("<f8", false, "(1073741824,)"), &[]),
                64 * MIB,
            ),
        ),
    ];
    for (name, bytes) in files {
        let (peak, time) = read_refused(&dir, name, &bytes, "allocation limit");
        assert!(peak < MIB, "{name}: peak {peak} bytes");
        assert!(time < Duration::from_secs(1), "{name}: {time:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gzip_bomb_under_the_limit_is_decompressed_only_as_far_as_declared() {
    let dir = temp_dir("bomb-declared");
    // 8 MiB declared (and present, as zeros), then 248 MiB more zeros.
    let bomb = gzip_bomb(&idx(0x08, &[8 * MIB as u32], &[]), 256 * MIB);
    let (peak, time) = read_refused(&dir, "eight.idx.gz", &bomb, "trailing");
    assert!(peak < 8 * MIB + MIB, "peak {peak} bytes");
    assert!(time < Duration::from_secs(2), "{time:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn raw_file_declaring_more_than_it_holds_allocates_nothing() {
    let dir = temp_dir("raw-short");
    // 48 MiB declared (under the limit), 3 bytes present.
    let short = idx(0x08, &[48 * MIB as u32], &[1, 2, 3]);
    let expected = "needs 50331648 bytes but only 3";
    let (peak, _) = read_refused(&dir, "short.idx", &short, expected);
    assert!(peak < MIB, "peak {peak} bytes");
    // Over the limit: refused by the header, before looking at the data.
    let header = npy_header("<f4", false, "(4294967296, 4294967296)");
    let huge = npy(1, &header, &[0; 16]);
    let (peak, _) = read_refused(&dir, "huge.npy", &huge, "allocation limit");
    assert!(peak < MIB, "peak {peak} bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gzip_csv_larger_than_the_limit_is_an_error() {
    let dir = temp_dir("csv-bomb");
    let path = dir.join("zeros.csv.gz");
    std::fs::write(&path, gzip_bomb(b"1,2\n", 64 * MIB)).unwrap();
    let (result, peak) = with_allocation_limit(4 * MIB, || {
        peak_bytes(|| read_csv(&path, &CsvOptions::default()))
    });
    let err = result.expect_err("over the limit");
    check_error(&err, "zeros.csv.gz");
    assert!(err.to_string().contains("allocation limit"), "{err}");
    assert!(peak < 8 * MIB, "peak {peak} bytes");
    // A table whose f64 features outgrow the limit (8 bytes for each 2-byte field) is refused too.
    let text = "0,".repeat(MIB / 2) + "0\n";
    let (result, _) = with_allocation_limit(4 * MIB, || {
        peak_bytes(|| parse_csv(text.as_bytes(), "wide.csv", &CsvOptions::default()))
    });
    check_error(&result.expect_err("features over the limit"), "wide.csv");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn huge_npy_header_is_echoed_short() {
    let junk = "x".repeat(100_000);
    let cases = [
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '{junk}': 1}}"),
        format!("{{'descr': '{junk}', 'fortran_order': False, 'shape': (1,), }}"),
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (1,) {junk}"),
        format!("{{'descr': '<f4',\n'fortran_order': False,\n'shape': (1,)\n{junk}"),
    ];
    for header in cases {
        let err = parse_npy(&npy(2, &header, &[0; 4]), "big.npy").expect_err("bad header");
        check_error(&err, "big.npy");
        let msg = err.to_string();
        assert!(msg.len() < 700, "{} bytes: {msg}", msg.len());
        assert!(msg.contains("bytes)"), "{msg}");
    }
    // Over the 1 MiB header limit: refused before the header is read.
    let mut big = b"\x93NUMPY\x02\x00".to_vec();
    big.extend_from_slice(&(64u32 << 20).to_le_bytes());
    let err = parse_npy(&big, "huge-header.npy").expect_err("header over the limit");
    check_error(&err, "huge-header.npy");
    assert!(err.to_string().contains("over the limit"), "{err}");
}

#[test]
fn empty_fortran_npy_with_a_huge_dimension_loads() {
    // Found by the header fuzzer: 2 * 2^63 overflowed while laying out a column-major array that
    // has no elements at all.
    let header = npy_header("<f4", true, "(2, 9223372036854775808, 0)");
    let array = parse_npy(&npy(1, &header, &[]), "empty.npy").expect("an empty array");
    assert_eq!(array.shape, vec![2, 1 << 63, 0]);
    assert_eq!(array.data.len(), 0);
}

#[test]
fn long_csv_field_is_echoed_short() {
    let text = format!("1,{}\n", "y".repeat(100_000));
    let err = parse_csv(text.as_bytes(), "long.csv", &CsvOptions::default()).unwrap_err();
    check_error(&err, "long.csv");
    assert!(err.to_string().contains("(100000 bytes)"), "{err}");
}

#[test]
fn paths_that_are_not_regular_files_are_named_as_such() {
    let dir = temp_dir("not-files");
    type Reader = fn(&std::path::Path) -> nabla_core::Error;
    let cases: [(&str, Reader); 3] = [
        ("idx", |p| read_idx(p).unwrap_err()),
        ("npy", |p| read_npy(p).unwrap_err()),
        ("csv", |p| read_csv(p, &CsvOptions::default()).unwrap_err()),
    ];
    for (what, read) in cases {
        let err = read(&dir).to_string();
        assert!(
            err.contains("is a directory") && err.contains("not-files"),
            "{what}: {err}"
        );
        if cfg!(unix) {
            // /dev/zero would never end; /dev/null would read as an empty file.
            for device in ["/dev/zero", "/dev/null"] {
                let err = read(std::path::Path::new(device)).to_string();
                assert!(
                    err.contains("not a regular file") && err.contains(device),
                    "{err}"
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trailing_bytes_are_an_error_in_raw_and_gzip_files_alike() {
    let bytes = idx(0x08, &[2], &[1, 2, 3]);
    for data in [bytes.clone(), gzip(&bytes)] {
        let err = nabla_data::parse_idx(&data, "t.idx").unwrap_err();
        check_error(&err, "t.idx");
        assert!(err.to_string().contains("trailing"), "{err}");
    }
    let bytes = npy(1, &npy_header("|u1", false, "(2,)"), &[1, 2, 3]);
    for data in [bytes.clone(), gzip(&bytes)] {
        let err = parse_npy(&data, "t.npy").unwrap_err();
        assert!(err.to_string().contains("trailing"), "{err}");
    }
}

/// Found by the fuzz test: a `descr` starting with a multi-byte character was sliced inside it.
#[test]
fn regression_npy_descr_with_multibyte_first_character() {
    for descr in ["é4", "<é", "ü", ""] {
        let header = npy_header(descr, false, "(1,)");
        let err = parse_npy(&npy(1, &header, &[0; 4]), "u.npy").expect_err("bad descr");
        check_error(&err, "u.npy");
    }
}

/// Found by the fuzz test: with a non-ASCII delimiter byte, the header was split into fewer names
/// than fields and taking out the label column's name panicked.
#[test]
fn regression_csv_non_ascii_delimiter_with_header_and_label() {
    let opts = CsvOptions::default()
        .has_header(true)
        .label_column(Some(2))
        .delimiter(0xff);
    let t = parse_csv(b"a\xffb\xffy\n1\xff2\xff0\n", "d.csv", &opts).unwrap();
    assert_eq!(t.header, Some(vec!["a".to_string(), "b".to_string()]));
    assert_eq!(t.label_name.as_deref(), Some("y"));
    assert_eq!((t.features, t.labels), (vec![1.0, 2.0], Some(vec![0])));
}

/// A key given twice in a `.npy` header was silently overridden by the last one.
#[test]
fn npy_header_key_given_twice_is_an_error() {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,), }";
    let err = parse_npy(&npy(1, header, &[0; 8]), "twice.npy").unwrap_err();
    check_error(&err, "twice.npy");
    assert!(err.to_string().contains("\"shape\" appears twice"), "{err}");
}

#[test]
fn valid_files_still_read_through_the_streaming_readers() {
    let dir = temp_dir("valid-stream");
    let bytes = npy(
        1,
        &npy_header("<i4", true, "(2, 1)"),
        &[1, 0, 0, 0, 2, 0, 0, 0],
    );
    for (name, data) in [("v.npy", bytes.clone()), ("v.npy.gz", gzip(&bytes))] {
        std::fs::write(dir.join(name), data).unwrap();
        let a = read_npy(dir.join(name)).unwrap();
        assert_eq!((a.shape, a.data), (vec![2, 1], HostData::I32(vec![1, 2])));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
