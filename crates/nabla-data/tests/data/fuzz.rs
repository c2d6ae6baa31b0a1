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
use crate::mutation::{config, mutate, mutations, text_dim};
use crate::peak::peak_bytes;
use nabla_core::{Result, with_allocation_limit};
use nabla_data::{CsvOptions, parse_csv, parse_idx, parse_npy, read_csv, read_idx, read_npy};
use proptest::prelude::*;
use proptest::sample::select;
use std::path::Path;

/// Values that break sizes and parsers when written over a header (for [`mutations`]).
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

fn read_idx_unit(p: &Path) -> Result<()> {
    read_idx(p).map(drop)
}

fn read_npy_unit(p: &Path) -> Result<()> {
    read_npy(p).map(drop)
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
    let special = &[
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775807",
        "-1",
        "2**64",
        "1.5",
        "",
        "0x10",
    ];
    // Small, special and any `u64`, a third of the time each.
    prop_oneof![
        2 => text_dim(special),
        1 => any::<u64>().prop_map(|d| d.to_string()),
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
    fn idx_mutations(seed in select(idx_seeds()), mutations in mutations(INTERESTING)) {
        check_reader(&mutate(seed, &mutations), "m.idx", parse_idx_unit, read_idx_unit);
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
        check_reader(&bytes, "h.idx", parse_idx_unit, read_idx_unit);
    }

    #[test]
    fn npy_mutations(seed in select(npy_seeds()), mutations in mutations(INTERESTING)) {
        check_reader(&mutate(seed, &mutations), "m.npy", parse_npy_unit, read_npy_unit);
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
        check_reader(&bytes, "h.npy", parse_npy_unit, read_npy_unit);
    }

    #[test]
    fn csv_mutations(
        seed in select(csv_seeds()),
        mutations in mutations(INTERESTING),
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
