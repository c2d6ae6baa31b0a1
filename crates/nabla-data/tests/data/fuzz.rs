//! Mutation fuzzing of the IDX, `.npy` and CSV readers with proptest, from the small valid files of
//! [`crate::corpus`]: bit flips, byte insertions and deletions, truncation, overwrites with
//! interesting values, and headers with substituted fields (huge, overflowing, negative or malformed
//! dimensions, unknown dtypes, repeated keys). Every input must give `Ok` or one short line naming
//! the input, never a panic, and hold little memory under a 64 MiB allocation limit (so a huge
//! declared size has to be refused, not allocated).
//!
//! `NABLA_FUZZ_CASES` sets the number of cases of each test (default 256).

use crate::corpus::{
    check_error, csv_seeds, gzip, idx, idx_seeds, npy, npy_header, npy_seeds, temp_dir,
};
use crate::peak::peak_bytes;
use nabla_core::{Result, with_allocation_limit};
use nabla_data::{CsvOptions, parse_csv, parse_idx, parse_npy, read_csv, read_idx, read_npy};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use std::path::Path;

/// The proptest configuration: `NABLA_FUZZ_CASES` cases (default 256), no regression files (a
/// failure becomes a named test in `hardening.rs`).
pub fn config() -> ProptestConfig {
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
pub enum Mutation {
    /// Flips bit `1` of the byte at `0`.
    Flip(Index, u8),
    /// Inserts a byte.
    Insert(Index, u8),
    /// Deletes a byte.
    Delete(Index),
    /// Cuts the input.
    Truncate(Index),
    /// Overwrites bytes with an interesting value.
    Overwrite(Index, &'static [u8]),
}

/// Values that break sizes and parsers when written over a header.
const INTERESTING: &[&[u8]] = &[
    &[0xff, 0xff, 0xff, 0xff],
    &[0x7f, 0xff, 0xff, 0xff],
    &[0x80, 0, 0, 0],
    &[0, 0, 0, 0],
    &[0xff],
    &[0x1f, 0x8b],
    b"18446744073709551615",
    b"99999999999999999999999",
    b"-1",
    b"(",
    b"))",
    b"'shape'",
    b"True",
    b"\xc3\xa9",
    b",",
    b"\n",
    b"nan",
    b"1e309",
];

/// Any one mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<Index>().prop_map(Mutation::Delete),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), select(INTERESTING)).prop_map(|(i, v)| Mutation::Overwrite(i, v)),
    ]
}

/// `bytes` with `mutations` applied in order.
pub fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
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

/// The ways to feed `bytes` to a reader: in memory, gzip-compressed, and from a file.
pub fn check_reader(
    bytes: &[u8],
    name: &str,
    parse: fn(&[u8], &str) -> Result<()>,
    read: fn(&Path) -> Result<()>,
) {
    let dir = temp_dir(&format!("fuzz-{name}"));
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let gz = gzip(bytes);
    let check = |run: &dyn Fn() -> Result<()>| {
        let (result, peak) = with_allocation_limit(64 << 20, || peak_bytes(run));
        if let Err(e) = &result {
            check_error(e, name);
        }
        assert!(peak < 4 << 20, "{name}: peak {peak} bytes");
    };
    check(&|| parse(bytes, name));
    check(&|| parse(&gz, name));
    check(&|| read(&path));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn parse_idx_unit(b: &[u8], n: &str) -> Result<()> {
    parse_idx(b, n).map(drop)
}

fn parse_npy_unit(b: &[u8], n: &str) -> Result<()> {
    parse_npy(b, n).map(drop)
}

/// Dimensions worth trying: small, zero, and large enough to overflow or exceed the limit.
fn dim() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..4,
        select(&[255u32, 65535, 1 << 24, 1 << 31, u32::MAX][..]),
        any::<u32>(),
    ]
}

/// `.npy` dimensions as text: also negative, over `u64`, and malformed.
fn npy_dim() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..4).prop_map(|d| d.to_string()),
        select(
            &[
                "4294967296",
                "18446744073709551615",
                "18446744073709551616",
                "9223372036854775807",
                "-1",
                "2**64",
                "1.5",
                "",
                "0x10",
            ][..]
        )
        .prop_map(str::to_string),
        any::<u64>().prop_map(|d| d.to_string()),
    ]
}

/// A `.npy` header with substituted fields.
fn npy_header_text() -> impl Strategy<Value = String> {
    let descr = select(
        &[
            "<f4", ">f8", "|u1", "|b1", "<i8", "<c8", "f4", "é4", "<", "", "<U10", "O",
        ][..],
    );
    let shape = prop::collection::vec(npy_dim(), 0..5).prop_map(|d| match d.len() {
        1 => format!("({},)", d[0]),
        _ => format!("({})", d.join(", ")),
    });
    let extra = select(
        &[
            "",
            "'shape': (1,), ",
            "'descr': '<f4', ",
            "'x': 1, ",
            "'fortran_order': 'yes', ",
        ][..],
    );
    (descr, any::<bool>(), shape, extra).prop_map(|(descr, fortran, shape, extra)| {
        let header = npy_header(descr, fortran, &shape);
        format!("{}{extra}{}", &header[..header.len() - 1], "}")
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn idx_mutations(
        seed in select(idx_seeds()),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        check_reader(&mutate(seed, &mutations), "m.idx", parse_idx_unit, |p| read_idx(p).map(drop));
    }

    #[test]
    fn idx_header_substitutions(
        code in select(&[0x08u8, 0x09, 0x0B, 0x0C, 0x0D, 0x0E, 0x00, 0xff][..]),
        dims in prop::collection::vec(dim(), 0..6),
        payload in prop::collection::vec(any::<u8>(), 0..64),
        rank_lie in prop::option::of(any::<u8>()),
    ) {
        let mut bytes = idx(code, &dims, &payload);
        if let Some(rank) = rank_lie {
            bytes[3] = rank;
        }
        check_reader(&bytes, "h.idx", parse_idx_unit, |p| read_idx(p).map(drop));
    }

    #[test]
    fn npy_mutations(
        seed in select(npy_seeds()),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        check_reader(&mutate(seed, &mutations), "m.npy", parse_npy_unit, |p| read_npy(p).map(drop));
    }

    #[test]
    fn npy_header_substitutions(
        version in select(&[1u8, 2, 3][..]),
        header in npy_header_text(),
        payload in prop::collection::vec(any::<u8>(), 0..64),
        length_lie in prop::option::of(any::<u32>()),
    ) {
        let mut bytes = npy(version, &header, &payload);
        if let Some(len) = length_lie {
            let field = if version == 1 { 2 } else { 4 };
            bytes[8..8 + field].copy_from_slice(&len.to_le_bytes()[..field]);
        }
        check_reader(&bytes, "h.npy", parse_npy_unit, |p| read_npy(p).map(drop));
    }

    #[test]
    fn csv_mutations(
        seed in select(csv_seeds()),
        mutations in prop::collection::vec(mutation(), 1..4),
        has_header in any::<bool>(),
        label in prop::option::of(0usize..4),
        delimiter in select(&[b',', b';', b'\n', 0xff, b'"'][..]),
    ) {
        let bytes = mutate(seed, &mutations);
        let opts = CsvOptions::default()
            .has_header(has_header)
            .label_column(label)
            .delimiter(delimiter);
        let parse = |b: &[u8], n: &str| parse_csv(b, n, &opts).map(drop);
        let (result, _) = with_allocation_limit(64 << 20, || peak_bytes(|| parse(&bytes, "m.csv")));
        if let Err(e) = &result {
            check_error(e, "m.csv");
        }
        let gz = gzip(&bytes);
        if let Err(e) = parse(&gz, "m.csv.gz") {
            check_error(&e, "m.csv.gz");
        }
        let dir = temp_dir("fuzz-csv");
        let path = dir.join("f.csv");
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = read_csv(&path, &opts) {
            check_error(&e, "f.csv");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Every prefix of the headers of the seeds (where truncation bugs hide) fails cleanly.
#[test]
fn every_header_prefix_of_the_seeds_fails_cleanly() {
    let seeds = idx_seeds().into_iter().map(|s| (s, "p.idx"));
    let seeds = seeds.chain(npy_seeds().into_iter().map(|s| (s, "p.npy")));
    for (seed, name) in seeds {
        let parse = if name.ends_with("idx") {
            parse_idx_unit
        } else {
            parse_npy_unit
        };
        for cut in 0..seed.len() {
            for bytes in [seed[..cut].to_vec(), gzip(&seed[..cut])] {
                let err = parse(&bytes, name).expect_err("a strict prefix parsed");
                check_error(&err, name);
            }
        }
    }
}
