//! The chunked readers, [`NpyReader`] and [`CsvReader`]: chunks concatenate to the whole-file read,
//! no chunk is larger than asked, and the memory they hold is bounded by the chunk, not the file
//! (issue 48, defect 7: `nabla predict` read a whole file at once).

use crate::corpus::{gzip, npy, npy_header, temp_dir};
use crate::peak::peak_bytes;
use nabla_core::{HostData, with_allocation_limit};
use nabla_data::{CsvOptions, CsvReader, NpyReader, parse_csv, parse_npy};

/// Rows and columns of the large files: 5 MB of `f32`, 10 MB as a table of `f64`.
const ROWS: usize = 20_000;
const COLS: usize = 64;

/// Rows per chunk.
const CHUNK: usize = 256;

/// The value at row `r`, column `c` of the large files (exact in `f32` and in decimal).
fn value(r: usize, c: usize) -> f32 {
    ((r * COLS + c) % 1024) as f32 / 1024.0
}

/// The large array as a `.npy` file.
fn large_npy() -> Vec<u8> {
    let payload: Vec<u8> = (0..ROWS)
        .flat_map(|r| (0..COLS).map(move |c| value(r, c)))
        .flat_map(f32::to_le_bytes)
        .collect();
    npy(
        1,
        &npy_header("<f4", false, &format!("({ROWS}, {COLS})")),
        &payload,
    )
}

/// The large array as CSV text.
fn large_csv() -> Vec<u8> {
    let mut text = String::new();
    for r in 0..ROWS {
        let row: Vec<String> = (0..COLS).map(|c| value(r, c).to_string()).collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    text.into_bytes()
}

/// Reads every chunk of `reader` with `read`, checking each against the values it should hold, and
/// returns the number of rows and the most heap bytes held at once.
fn drain(mut read: impl FnMut() -> Vec<f64>) -> (usize, usize) {
    let (rows, peak) = peak_bytes(|| {
        let mut rows = 0;
        loop {
            let chunk = read();
            assert!(
                chunk.len() <= CHUNK * COLS,
                "a chunk of {} values",
                chunk.len()
            );
            if chunk.is_empty() {
                return rows;
            }
            for (i, v) in chunk.iter().enumerate() {
                let (r, c) = (rows + i / COLS, i % COLS);
                // CSV text holds the shortest decimal that reads back as the same f32.
                assert_eq!(*v as f32, value(r, c), "row {r}, column {c}");
            }
            rows += chunk.len() / COLS;
        }
    });
    (rows, peak)
}

#[test]
fn the_npy_reader_holds_one_chunk_not_the_file() {
    let dir = temp_dir("chunked-npy");
    let bytes = large_npy();
    for (name, data) in [("a.npy", bytes.clone()), ("a.npy.gz", gzip(&bytes))] {
        let path = dir.join(name);
        std::fs::write(&path, data).unwrap();
        let mut reader = NpyReader::open(&path).unwrap();
        assert_eq!(
            (reader.shape(), reader.numel()),
            (&[ROWS, COLS][..], ROWS * COLS)
        );
        let (rows, peak) = drain(|| reader.read(CHUNK * COLS).unwrap().to_f64_vec());
        assert_eq!((rows, reader.remaining()), (ROWS, 0));
        // The file is 5 MB; a chunk of f32 is 64 KiB, and converted to f64 128 KiB.
        assert!(peak < 1 << 20, "{name}: peak {peak} bytes");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_csv_reader_holds_one_chunk_not_the_file() {
    let dir = temp_dir("chunked-csv");
    let text = large_csv();
    for (name, data) in [("a.csv", text.clone()), ("a.csv.gz", gzip(&text))] {
        let path = dir.join(name);
        std::fs::write(&path, data).unwrap();
        let mut reader = CsvReader::open(&path, &CsvOptions::default()).unwrap();
        assert_eq!(reader.cols(), Some(COLS));
        let (rows, peak) = drain(|| {
            let t = reader.read_rows(CHUNK).unwrap();
            assert!(t.rows <= CHUNK && t.features.len() == t.rows * COLS);
            t.features
        });
        assert_eq!(rows, ROWS);
        // The table of f64 is 10 MB; a chunk of it 128 KiB.
        assert!(peak < 1 << 20, "{name}: peak {peak} bytes");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_chunk_must_fit_the_allocation_limit() {
    let bytes = large_npy();
    let mut reader = NpyReader::from_bytes(&bytes, "a.npy").unwrap();
    let err = with_allocation_limit(1 << 20, || reader.read(usize::MAX)).unwrap_err();
    assert!(err.to_string().contains("allocation limit"), "{err}");
    // Within the limit, the same reader goes on.
    assert_eq!(reader.read(3).unwrap().len(), 3);
}

#[test]
fn chunks_concatenate_to_the_whole_file_in_every_order_and_format() {
    let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    // Column-major [4, 6]: the reader returns row-major chunks all the same.
    let fortran: Vec<u8> = (0..6)
        .flat_map(|c| (0..4).map(move |r| (r * 6 + c) as f32))
        .flat_map(f32::to_le_bytes)
        .collect();
    for (fortran_order, payload) in [(false, &le), (true, &fortran)] {
        let file = npy(2, &npy_header("<f4", fortran_order, "(4, 6)"), payload);
        assert_eq!(
            parse_npy(&file, "a.npy").unwrap().data,
            HostData::F32(values.clone())
        );
        for chunk in [1, 5, 6, 24, 100] {
            let mut reader = NpyReader::from_bytes(&file, "a.npy").unwrap();
            let mut got = Vec::new();
            loop {
                let HostData::F32(part) = reader.read(chunk).unwrap() else {
                    panic!("not f32")
                };
                if part.is_empty() {
                    break;
                }
                got.extend(part);
            }
            assert_eq!(got, values, "fortran {fortran_order}, chunk {chunk}");
        }
    }
    let text = b"a,b,c\n1,2,3\n4,5,6\n\n7,8,9\n";
    let options = CsvOptions::default().has_header(true).label_column(Some(1));
    let whole = parse_csv(text, "t.csv", &options).unwrap();
    for chunk in [1, 2, 3, 10] {
        let mut reader = CsvReader::from_bytes(text, "t.csv", &options).unwrap();
        assert_eq!(reader.label_name(), Some("b"));
        let (mut features, mut labels) = (Vec::new(), Vec::new());
        loop {
            let t = reader.read_rows(chunk).unwrap();
            assert_eq!(t.header, whole.header);
            if t.rows == 0 {
                break;
            }
            features.extend(t.features);
            labels.extend(t.labels.unwrap());
        }
        assert_eq!(
            (Some(features), Some(labels)),
            (Some(whole.features.clone()), whole.labels.clone())
        );
    }
}

#[test]
fn a_raw_npy_file_of_the_wrong_length_is_refused_when_opened() {
    let dir = temp_dir("chunked-length");
    let header = npy_header("<f4", false, "(4,)");
    for (payload, needle) in [(vec![0u8; 12], "truncated"), (vec![0u8; 20], "trailing")] {
        let path = dir.join("a.npy");
        std::fs::write(&path, npy(1, &header, &payload)).unwrap();
        let err = NpyReader::open(&path)
            .err()
            .expect("a bad length was accepted");
        assert!(
            err.to_string().contains(needle) && err.to_string().contains("a.npy"),
            "{err}"
        );
        // Compressed, the length is known only at the end.
        let gz = gzip(&npy(1, &header, &payload));
        let mut reader = NpyReader::from_bytes(&gz, "a.npy.gz").unwrap();
        let err = reader.read(4).unwrap_err().to_string();
        assert!(err.contains(needle) && err.contains("a.npy.gz"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
