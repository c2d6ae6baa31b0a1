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
use nabla_data::{
    CsvHeader, CsvOptions, CsvReader, NpyReader, parse_csv, parse_idx, parse_npy, read_csv,
    read_idx, read_npy,
};
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
    b"\xef\xbb\xbf",
    b"\"",
    b"\r",
    b"0x1",
    b"0.5.5",
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
            "<f4", ">f8", "|u1", "|b1", "<i8", "<c8", "f4", "é4", "<", "", "<U10", "O", "<f2",
            ">u2", "<u4", ">u8", "<c16", "|S3",
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
    fn npy_chunked_mutations(
        seed in select(npy_seeds()),
        mutations in mutations(INTERESTING),
        chunk in 1usize..5,
    ) {
        let bytes = mutate(seed, &mutations);
        let whole = with_allocation_limit(64 << 20, || parse_npy(&bytes, "c.npy"));
        let chunked = with_allocation_limit(64 << 20, || npy_in_chunks(&bytes, chunk));
        match (whole, chunked) {
            (Ok(a), chunked) => {
                // Bit patterns, so that a NaN equals itself.
                let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
                prop_assert_eq!(Ok(bits(a.data.to_f64_vec())), chunked.map(bits).map_err(|e| e.to_string()));
            }
            // The whole read also checks the allocation limit; the chunked one, each chunk.
            (Err(e), chunked) => {
                check_error(&e, "c.npy");
                if let Err(e) = chunked {
                    check_error(&e, "c.npy");
                }
            }
        }
    }

    #[test]
    fn csv_mutations(
        seed in select(csv_seeds()),
        mutations in mutations(INTERESTING),
        header in select(&[CsvHeader::Absent, CsvHeader::Present, CsvHeader::Detect][..]),
        label in prop::option::of(0usize..4),
        delimiter in select(&[b',', b';', b'\n', 0xff, b'"'][..]),
        chunk in 1usize..4,
    ) {
        let bytes = mutate(seed, &mutations);
        let opts = CsvOptions::default()
            .header(header)
            .label_column(label)
            .delimiter(delimiter);
        // Read a few rows at a time, the same table or the same error.
        let whole = parse_csv(&bytes, "m.csv", &opts);
        let chunked = csv_in_chunks(&bytes, &opts, chunk);
        // Bit patterns, so that a NaN ("nan" in a cell) equals itself.
        let bits = |(f, l): (Vec<f64>, _)| (f.into_iter().map(f64::to_bits).collect::<Vec<_>>(), l);
        prop_assert_eq!(
            whole.map(|t| bits((t.features, t.labels))).map_err(|e| e.to_string()),
            chunked.map(bits).map_err(|e| e.to_string())
        );
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

/// Every element of `bytes` (a `.npy` file) read `chunk` at a time, as `f64`.
fn npy_in_chunks(bytes: &[u8], chunk: usize) -> Result<Vec<f64>> {
    let mut reader = NpyReader::from_bytes(bytes, "c.npy")?;
    let mut values = Vec::new();
    loop {
        let part = reader.read(chunk)?;
        if part.is_empty() {
            return Ok(values);
        }
        values.extend(part.to_f64_vec());
    }
}

/// The features and labels of `bytes` (CSV text) read `chunk` rows at a time.
fn csv_in_chunks(
    bytes: &[u8],
    opts: &CsvOptions,
    chunk: usize,
) -> Result<(Vec<f64>, Option<Vec<i64>>)> {
    let mut reader = CsvReader::from_bytes(bytes, "m.csv", opts)?;
    let (mut features, mut labels) = (Vec::new(), opts.label_column.map(|_| Vec::new()));
    loop {
        let t = reader.read_rows(chunk)?;
        if t.rows == 0 {
            return Ok((features, labels));
        }
        features.extend(t.features);
        if let (Some(all), Some(part)) = (&mut labels, t.labels) {
            all.extend(part);
        }
    }
}

/// Numbers as a CSV writer may spell them, for [`csv_tables`].
const NUMBERS: &[&str] = &[
    "0", "1", "0.5", "-2.5e3", " 3 ", "\"4\"", "1E-2", "+7", ".25", "inf",
];

/// Tokens that are not numbers, for [`csv_tables`].
const NOT_NUMBERS: &[&str] = &["abc", "0x1", "0.5.5", "\0", "\u{663}", "1 5", "\"\"", "- 1"];

/// A table of `NUMBERS` (rows, columns, cells), perhaps with a byte-order mark, a header of names,
/// CRLF line ends, and one cell replaced by one of `NOT_NUMBERS` (row, column, token).
#[derive(Debug, Clone)]
struct Table {
    cells: Vec<Vec<&'static str>>,
    bom: bool,
    header: bool,
    crlf: bool,
    bad: Option<(usize, usize, &'static str)>,
}

impl Table {
    fn text(&self) -> Vec<u8> {
        let end = if self.crlf { "\r\n" } else { "\n" };
        let cols = self.cells[0].len();
        let mut text = if self.bom {
            "\u{feff}".to_string()
        } else {
            String::new()
        };
        if self.header {
            let names: Vec<String> = (0..cols).map(|c| format!("x{c}")).collect();
            text += &(names.join(",") + end);
        }
        for (r, row) in self.cells.iter().enumerate() {
            let mut row = row.clone();
            if let Some((_, c, token)) = self.bad.filter(|&(br, ..)| br == r) {
                row[c.min(cols - 1)] = token;
            }
            text += &(row.join(",") + end);
        }
        text.into_bytes()
    }
}

/// Tables for [`csv_tables_keep_every_row`].
fn csv_tables() -> impl Strategy<Value = Table> {
    let cells = (1usize..5, 1usize..5).prop_flat_map(|(rows, cols)| {
        prop::collection::vec(prop::collection::vec(select(NUMBERS), cols), rows)
    });
    let bad = prop::option::of((0usize..5, 0usize..5, select(NOT_NUMBERS)));
    (cells, any::<bool>(), any::<bool>(), any::<bool>(), bad).prop_map(
        |(cells, bom, header, crlf, bad)| {
            let bad = bad.map(|(r, c, t)| (r % cells.len(), c, t));
            Table {
                cells,
                bom,
                header,
                crlf,
                bad,
            }
        },
    )
}

proptest! {
    #![proptest_config(config())]

    /// Issue 48, defect 6: no row is ever dropped. A table of numbers reads every row whatever its
    /// byte-order mark, header or line ends; one cell that is not a number is an error naming its
    /// row and column, wherever it is, the first row included.
    #[test]
    fn csv_tables_keep_every_row(table in csv_tables()) {
        let text = table.text();
        let cols = table.cells[0].len();
        let opts = CsvOptions::default().header(CsvHeader::Detect);
        // One column whose first cell is not a number is a header by the rule.
        let named = table.header || (cols == 1 && matches!(table.bad, Some((0, ..))));
        match (parse_csv(&text, "t.csv", &opts), table.bad.filter(|_| named == table.header)) {
            (Ok(t), None) => {
                let rows = table.cells.len() - usize::from(named && !table.header);
                prop_assert_eq!((t.rows, t.cols), (rows, cols));
                prop_assert_eq!(t.header.is_some(), named);
            }
            (Err(e), Some((r, c, _))) => {
                let row = r + 1 + usize::from(table.header);
                let needle = format!("row {row}, column {}", c.min(cols - 1));
                check_error(&e, "t.csv");
                prop_assert!(e.to_string().contains(&needle), "{} lacks {}", e, needle);
            }
            (Err(e), None) => prop_assert!(false, "{}", e),
            (Ok(t), Some((_, _, token))) => {
                prop_assert!(false, "{:?} accepted: {} rows", token, t.rows)
            }
        }
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
