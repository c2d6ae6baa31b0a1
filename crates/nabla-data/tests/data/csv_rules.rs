//! The CSV reader never drops a row: a UTF-8 byte-order mark is stripped, a header is recognised
//! only by rule ([`CsvHeader::Detect`]: every field of the first row non-numeric) or when asked
//! for, and a malformed number in any row, the first included, is an error naming the row and the
//! column (issue 48, defect 6).

use crate::corpus::{check_error, gzip, temp_dir};
use nabla_data::{CsvHeader, CsvOptions, CsvReader, CsvTable, parse_csv, read_csv};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Five rows of two numbers each.
const FIVE_ROWS: &str = "0.5,1\n2,3\n4,5\n6,7\n8,9\n";

/// The tokens that used to turn a first row into a header: letters, hex, two points, a NUL, a
/// non-ASCII digit (Arabic-Indic three), a fullwidth digit, and a byte that is not UTF-8.
const MALFORMED: &[&[u8]] = &[
    b"abc",
    b"0x1",
    b"0.5.5",
    b"\0",
    b"1\x00",
    "\u{663}".as_bytes(),
    "\u{ff11}".as_bytes(),
    b"\xff",
    b"1\xc3",
];

fn detect() -> CsvOptions {
    CsvOptions::default().header(CsvHeader::Detect)
}

/// `text` parsed in memory, gzip-compressed, and from a file.
fn every_way(text: &[u8], options: &CsvOptions) -> Vec<nabla_core::Result<CsvTable>> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let dir = temp_dir(&format!(
        "csv-rules-{}",
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    let path = dir.join("t.csv");
    std::fs::write(&path, text).unwrap();
    let results = vec![
        parse_csv(text, "t.csv", options),
        parse_csv(&gzip(text), "t.csv", options),
        read_csv(&path, options),
    ];
    std::fs::remove_dir_all(&dir).unwrap();
    results
}

#[test]
fn a_byte_order_mark_is_stripped_and_keeps_every_row() {
    let with_bom = [b"\xef\xbb\xbf".as_slice(), FIVE_ROWS.as_bytes()].concat();
    for options in [CsvOptions::default(), detect()] {
        for t in every_way(&with_bom, &options) {
            let t = t.unwrap();
            assert_eq!((t.rows, t.cols, t.header), (5, 2, None));
            assert_eq!(t.features[..2], [0.5, 1.0]);
        }
    }
    // A header after the mark is named without it.
    let text = [b"\xef\xbb\xbf".as_slice(), b"x,y\n", FIVE_ROWS.as_bytes()].concat();
    for t in every_way(&text, &detect()) {
        let t = t.unwrap();
        assert_eq!(t.header, Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(t.rows, 5);
    }
}

#[test]
fn one_malformed_number_in_the_first_row_is_an_error_not_a_header() {
    for token in MALFORMED {
        for column in 0..2 {
            let mut text = Vec::new();
            for c in 0..2 {
                text.extend_from_slice(if c == column { token } else { b"0.5" });
                text.push(if c == 0 { b',' } else { b'\n' });
            }
            text.extend_from_slice(b"2,3\n4,5\n");
            for options in [CsvOptions::default(), detect()] {
                for result in every_way(&text, &options) {
                    let err = result.expect_err("a malformed first row was accepted");
                    check_error(&err, "t.csv");
                    let msg = err.to_string();
                    assert!(
                        msg.contains(&format!("row 1, column {column}"))
                            && msg.contains("is not a number"),
                        "{token:?}: {msg}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_malformed_number_in_a_later_row_names_that_row_and_column() {
    for token in MALFORMED {
        let mut text = b"x,y\n0.5,1\n2,3\n4,".to_vec();
        text.extend_from_slice(token);
        text.extend_from_slice(b"\n6,7\n");
        for result in every_way(&text, &detect()) {
            let msg = result
                .expect_err("a malformed row was accepted")
                .to_string();
            assert!(
                msg.contains("row 4, column 1") && msg.contains("offset 14"),
                "{msg}"
            );
        }
    }
}

#[test]
fn a_header_is_recognised_only_by_rule_or_when_asked_for() {
    // Every field non-numeric: a header, under the rule.
    let t = parse_csv(b"a,\"b c\"\n1,2\n", "t.csv", &detect()).unwrap();
    assert_eq!(t.header, Some(vec!["a".to_string(), "b c".to_string()]));
    assert_eq!((t.rows, t.features), (1, vec![1.0, 2.0]));
    // Numeric column names are data under the rule, and a header when asked for.
    let text = b"0,1\n2,3\n";
    assert_eq!(parse_csv(text, "t.csv", &detect()).unwrap().rows, 2);
    let t = parse_csv(text, "t.csv", &CsvOptions::default().has_header(true)).unwrap();
    assert_eq!((t.header, t.rows), (Some(vec!["0".into(), "1".into()]), 1));
    // Without a header, a row of names is an error (the library's default).
    let err = parse_csv(b"a,b\n1,2\n", "t.csv", &CsvOptions::default()).unwrap_err();
    assert!(err.to_string().contains("row 1, column 0"), "{err}");
    // A header-only file has columns and no rows.
    let r = CsvReader::from_bytes(b"a,b,c\n", "t.csv", &detect()).unwrap();
    assert_eq!(r.cols(), Some(3));
    assert_eq!(
        CsvReader::from_bytes(b"", "t.csv", &detect())
            .unwrap()
            .cols(),
        None
    );
}

#[test]
fn quoted_fields_line_ends_and_blank_lines_are_understood() {
    let text = b"\"1.5\", 2 \r\n\r\n\n3,\"4e1\"\r5,6";
    let t = parse_csv(text, "t.csv", &CsvOptions::default()).unwrap();
    assert_eq!(t.features, vec![1.5, 2.0, 3.0, 40.0, 5.0, 6.0]);
    // A quote or a line break cannot be the delimiter.
    for delimiter in [b'"', b'\n', b'\r'] {
        let options = CsvOptions::default().delimiter(delimiter);
        let err = parse_csv(b"1\n", "t.csv", &options).unwrap_err();
        check_error(&err, "t.csv");
    }
}
