//! `nabla predict`'s input (issue 48): a CSV file never loses an example (defect 6: a byte-order
//! mark or one malformed number in the first row made it a header, silently), the input is read
//! and classified batch by batch with the output of one batch (defect 7: the whole file was loaded
//! at once), and every numeric `.npy` dtype is read (defect 11: float16 and the unsigned integers
//! were refused).

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{assert_one_line_error, nabla, stderr, stdout, temp, train_mlp};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Files removed when the test ends, whether it passes or not.
struct Files(Vec<PathBuf>);

impl Files {
    /// A path in the temporary directory for this test, removed at the end.
    fn path(&mut self, name: &str) -> PathBuf {
        let p = temp(name);
        self.0.push(p.clone());
        p
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        for p in &self.0 {
            std::fs::remove_file(p).ok();
        }
    }
}

/// A one-epoch MLP on the embedded digits, saved in `files` as `name`.
fn trained(files: &mut Files, name: &str) -> PathBuf {
    let ckpt = files.path(name);
    let o = train_mlp(&ckpt, &["--epochs", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    ckpt
}

/// `nabla predict --checkpoint CKPT --input INPUT` followed by `extra`.
fn predict(ckpt: &Path, input: &Path, extra: &[&str]) -> Output {
    let (c, i) = (ckpt.to_string_lossy(), input.to_string_lossy());
    let mut args = vec!["predict", "--checkpoint", &c, "--input", &i];
    args.extend_from_slice(extra);
    nabla(&args)
}

/// The standard output of a successful run.
fn success(o: &Output) -> String {
    assert!(o.status.success(), "{}", stderr(o));
    stdout(o)
}

/// The first `n` digits, 64 pixels each scaled to `[0, 1]` (multiples of 1/16, exact in float16).
fn digits(n: usize) -> Vec<Vec<f32>> {
    let cpu = nabla_cpu::CpuBackend::new();
    let images = nabla_data::Digits::load(&cpu).unwrap().images;
    let pixels = images.to_vec::<f32>().unwrap();
    pixels.chunks(64).take(n).map(<[f32]>::to_vec).collect()
}

/// `rows` as CSV lines, each field written by `field`.
fn csv_lines(rows: &[Vec<f32>]) -> Vec<String> {
    rows.iter()
        .map(|r| r.iter().map(f32::to_string).collect::<Vec<_>>().join(","))
        .collect()
}

/// A `.npy` file of `descr` holding `payload` in the shape `shape`.
fn npy(descr: &str, shape: &str, payload: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// `rows` (n rows of 64 values) as a `.npy` file of `descr`, each value written by `encode`.
fn npy_rows<const N: usize>(
    rows: &[Vec<f32>],
    descr: &str,
    encode: impl Fn(f32) -> [u8; N],
) -> Vec<u8> {
    let payload: Vec<u8> = rows.iter().flatten().flat_map(|&v| encode(v)).collect();
    npy(descr, &format!("({}, 64)", rows.len()), &payload)
}

#[test]
fn a_csv_file_never_loses_an_example() -> TestResult {
    let mut files = Files(Vec::new());
    let ckpt = trained(&mut files, "csv-rules.safetensors");
    let input = files.path("rows.csv");
    let lines = csv_lines(&digits(5));
    std::fs::write(&input, lines.join("\n") + "\n")?;
    let plain = success(&predict(&ckpt, &input, &[]));
    assert_eq!(plain.lines().count(), 6, "{plain}");
    // A byte-order mark is stripped: five examples, five predictions, the same ones.
    std::fs::write(&input, "\u{feff}".to_string() + &lines.join("\n") + "\n")?;
    assert_eq!(success(&predict(&ckpt, &input, &[])), plain);
    // A header is recognised by rule (no field of it is a number) or when asked for.
    let names: Vec<String> = (0..64).map(|i| format!("pixel{i}")).collect();
    std::fs::write(&input, names.join(",") + "\n" + &lines.join("\n"))?;
    assert_eq!(success(&predict(&ckpt, &input, &[])), plain);
    std::fs::write(&input, lines.join("\n"))?;
    let out = success(&predict(&ckpt, &input, &["--header"]));
    assert_eq!(
        out.lines().count(),
        5,
        "--header takes the first row as a header: {out}"
    );
    // One malformed number in the first row is an error naming the row and column, not a header.
    let name = input.file_name().unwrap().to_string_lossy().into_owned();
    for token in [
        &b"abc"[..],
        b"0x1",
        b"0.5.5",
        b"\0",
        "\u{663}".as_bytes(),
        b"\xff",
    ] {
        for column in [0, 9] {
            let mut first: Vec<Vec<u8>> =
                lines[0].split(',').map(|f| f.as_bytes().to_vec()).collect();
            first[column] = token.to_vec();
            let mut text = first.join(&b","[..]);
            text.extend_from_slice(("\n".to_string() + &lines[1..].join("\n")).as_bytes());
            std::fs::write(&input, &text)?;
            let o = predict(&ckpt, &input, &[]);
            assert_one_line_error(&o, &format!("row 1, column {column}"));
            assert_one_line_error(&o, &name);
            assert!(stdout(&o).is_empty(), "{token:?}: {}", stdout(&o));
        }
    }
    // So is one in a later row.
    let mut rows = lines.clone();
    let mut fourth: Vec<&str> = lines[3].split(',').collect();
    fourth[1] = "0..5";
    rows[3] = fourth.join(",");
    std::fs::write(&input, rows.join("\n"))?;
    assert_one_line_error(&predict(&ckpt, &input, &[]), "row 4, column 1");
    Ok(())
}

#[test]
fn predict_in_batches_prints_what_one_batch_prints() -> TestResult {
    let mut files = Files(Vec::new());
    let ckpt = trained(&mut files, "batches.safetensors");
    let rows = digits(40);
    let csv = files.path("batches.csv");
    std::fs::write(&csv, csv_lines(&rows).join("\n") + "\n")?;
    let npy_path = files.path("batches.npy");
    std::fs::write(&npy_path, npy_rows(&rows, "<f4", f32::to_le_bytes))?;
    let one_batch = success(&predict(&ckpt, &csv, &["--batch-size", "40"]));
    let lines: Vec<&str> = one_batch.lines().collect();
    assert_eq!((lines.len(), lines[0]), (41, "example,class,probability"));
    for (i, line) in lines[1..].iter().enumerate() {
        assert!(line.starts_with(&format!("{i},")), "{line}");
    }
    for input in [&csv, &npy_path] {
        for batch in ["1", "3", "7", "39", "256"] {
            let out = success(&predict(&ckpt, input, &["--batch-size", batch]));
            assert_eq!(out, one_batch, "{} in batches of {batch}", input.display());
        }
        assert_eq!(success(&predict(&ckpt, input, &[])), one_batch);
    }
    assert_one_line_error(
        &predict(&ckpt, &csv, &["--batch-size", "0"]),
        "--batch-size",
    );
    Ok(())
}

#[test]
fn every_numeric_npy_dtype_is_read_and_the_others_are_named() -> TestResult {
    let mut files = Files(Vec::new());
    let ckpt = trained(&mut files, "dtypes.safetensors");
    let input = files.path("dtype.npy");
    let rows = digits(6);
    let run = |bytes: Vec<u8>| -> Result<Output, std::io::Error> {
        std::fs::write(&input, bytes)?;
        Ok(predict(&ckpt, &input, &[]))
    };
    // float16 holds the pixels (multiples of 1/16) exactly: the float32 output.
    let expected = success(&run(npy_rows(&rows, "<f4", f32::to_le_bytes))?);
    let half = |v: f32| nabla_core::half::f16::from_f32(v).to_le_bytes();
    assert_eq!(
        success(&run(npy_rows(&rows, "<f2", half))?),
        expected,
        "float16"
    );
    let half_be = |v: f32| nabla_core::half::f16::from_f32(v).to_be_bytes();
    assert_eq!(
        success(&run(npy_rows(&rows, ">f2", half_be))?),
        expected,
        "big-endian float16"
    );
    // Integer dtypes hold pixels of 0 and 1: the float32 output of the same values.
    let binary: Vec<Vec<f32>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|&p| if p >= 0.5 { 1.0 } else { 0.0 })
                .collect()
        })
        .collect();
    let expected = success(&run(npy_rows(&binary, "<f4", f32::to_le_bytes))?);
    let cases: [(&str, Vec<u8>); 9] = [
        ("|u1", npy_rows(&binary, "|u1", |v| [v as u8])),
        (
            "<u2",
            npy_rows(&binary, "<u2", |v| (v as u16).to_le_bytes()),
        ),
        (
            "<u4",
            npy_rows(&binary, "<u4", |v| (v as u32).to_le_bytes()),
        ),
        (
            "<u8",
            npy_rows(&binary, "<u8", |v| (v as u64).to_le_bytes()),
        ),
        (
            ">u8",
            npy_rows(&binary, ">u8", |v| (v as u64).to_be_bytes()),
        ),
        ("|i1", npy_rows(&binary, "|i1", |v| [v as u8])),
        (
            "<i2",
            npy_rows(&binary, "<i2", |v| (v as i16).to_le_bytes()),
        ),
        (
            "<i8",
            npy_rows(&binary, "<i8", |v| (v as i64).to_le_bytes()),
        ),
        ("|b1", npy_rows(&binary, "|b1", |v| [v as u8])),
    ];
    for (descr, bytes) in cases {
        assert_eq!(success(&run(bytes)?), expected, "{descr}");
    }
    // A uint64 value is converted exactly, so 2 is refused as a pixel like any value over 1.
    let mut two = npy_rows(&binary, "<u8", |v| (v as u64).to_le_bytes());
    let at = two.len() - 8;
    two[at] = 2;
    assert_one_line_error(&run(two)?, "example 5 holds 2");
    // What cannot be a pixel is refused with the dtype named.
    for (descr, kind) in [
        ("<c8", "complex"),
        ("|O", "objects"),
        ("<U3", "Unicode strings"),
    ] {
        let o = run(npy(descr, "(1, 64)", &[0; 64 * 16]))?;
        assert_one_line_error(&o, &format!("unsupported dtype \"{descr}\""));
        assert_one_line_error(&o, kind);
        assert_one_line_error(&o, "dtype.npy");
    }
    Ok(())
}
