//! Numeric CSV files.

use crate::source::{Input, bad_input, excerpt, is_gzip, over_limit};
use nabla_core::{Backend, DType, Error, Result, check_allocation};
use nabla_tensor::Tensor;
use std::path::Path;

/// How to read a CSV file of numbers.
///
/// ```
/// use nabla_data::CsvOptions;
/// let opts = CsvOptions::default().has_header(true).label_column(Some(0));
/// assert_eq!(opts.delimiter, b',');
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// Whether the first line holds column names (default `false`).
    pub has_header: bool,
    /// The column (counting from 0) that holds integer class labels, taken out of the features
    /// (default `None`: every column is a feature).
    pub label_column: Option<usize>,
    /// The field separator (default `,`).
    pub delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            has_header: false,
            label_column: None,
            delimiter: b',',
        }
    }
}

impl CsvOptions {
    /// Sets [`CsvOptions::has_header`].
    pub fn has_header(mut self, has_header: bool) -> Self {
        self.has_header = has_header;
        self
    }

    /// Sets [`CsvOptions::label_column`].
    pub fn label_column(mut self, label_column: Option<usize>) -> Self {
        self.label_column = label_column;
        self
    }

    /// Sets [`CsvOptions::delimiter`].
    pub fn delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }
}

/// A parsed CSV table: a `rows x cols` matrix of features and, if a label column was chosen, labels.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvTable {
    /// The column names of the feature columns, if the file has a header.
    pub header: Option<Vec<String>>,
    /// The name of the label column, if the file has a header and a label column was chosen.
    pub label_name: Option<String>,
    /// Features, row-major.
    pub features: Vec<f64>,
    /// Number of rows (examples).
    pub rows: usize,
    /// Number of feature columns.
    pub cols: usize,
    /// Labels, one per row, if a label column was chosen.
    pub labels: Option<Vec<i64>>,
}

impl CsvTable {
    /// The features as a `[rows, cols]` tensor of `dtype` (a floating dtype).
    pub fn features_tensor<B: Backend>(&self, dtype: DType, backend: &B) -> Result<Tensor<B>> {
        Tensor::from_slice(&self.features, [self.rows, self.cols], backend)?.cast(dtype)
    }

    /// The labels as a `[rows]` `i64` tensor; fails if no label column was chosen.
    pub fn labels_tensor<B: Backend>(&self, backend: &B) -> Result<Tensor<B>> {
        let labels = self.labels.as_ref().ok_or_else(|| {
            Error::invalid(
                "CsvTable::labels_tensor",
                "no label column was chosen (set CsvOptions::label_column)",
            )
        })?;
        Tensor::from_slice(labels, [self.rows], backend)
    }
}

/// Parses CSV text of numbers held in memory (raw or gzip-compressed). Blank lines are skipped; every
/// row must have the same number of fields. Errors name `name`, the line, the column and the byte
/// offset of the bad field.
///
/// ```
/// use nabla_data::{CsvOptions, parse_csv};
/// let text = b"a,b,y\n1.5,2,0\n3,4e1,1\n";
/// let t = parse_csv(text, "t.csv", &CsvOptions::default().has_header(true).label_column(Some(2)))?;
/// assert_eq!((t.rows, t.cols), (2, 2));
/// assert_eq!(t.features, vec![1.5, 2.0, 3.0, 40.0]);
/// assert_eq!(t.labels, Some(vec![0, 1]));
/// let err = parse_csv(b"1,x\n", "t.csv", &CsvOptions::default()).unwrap_err().to_string();
/// assert!(err.contains("t.csv") && err.contains("offset 2"), "{err}");
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn parse_csv(bytes: &[u8], name: &str, options: &CsvOptions) -> Result<CsvTable> {
    if !is_gzip(bytes) {
        return parse_raw_csv(bytes, name, options);
    }
    let raw = Input::from_bytes(name, bytes).read_rest("the decompressed CSV text")?;
    parse_raw_csv(&raw, name, options)
}

/// Reads a CSV file of numbers (raw or gzip); see [`parse_csv`].
///
/// The file (decompressed, for gzip) and the table of `f64` features must each fit the allocation
/// limit ([`nabla_core::max_allocation_bytes`]); a gzip file is decompressed only up to that limit.
pub fn read_csv(path: impl AsRef<Path>, options: &CsvOptions) -> Result<CsvTable> {
    let path = path.as_ref();
    let bytes = Input::open(path)?.read_rest("the CSV text")?;
    parse_raw_csv(&bytes, &path.display().to_string(), options)
}

/// Splits `line` (starting at byte `start`) into fields with their byte offsets.
fn fields(line: &[u8], start: usize, delimiter: u8) -> impl Iterator<Item = (usize, &[u8])> {
    let mut offset = start;
    line.split(move |&b| b == delimiter).map(move |f| {
        let at = offset;
        offset += f.len() + 1;
        (at, f)
    })
}

/// Parses uncompressed CSV bytes.
fn parse_raw_csv(bytes: &[u8], name: &str, options: &CsvOptions) -> Result<CsvTable> {
    let mut table = CsvTable {
        header: None,
        label_name: None,
        features: Vec::new(),
        rows: 0,
        cols: 0,
        labels: options.label_column.map(|_| Vec::new()),
    };
    let mut width: Option<usize> = None;
    let mut offset = 0;
    for (line_no, raw_line) in bytes.split(|&b| b == b'\n').enumerate() {
        let start = offset;
        offset += raw_line.len() + 1;
        let line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let n_fields = line.iter().filter(|&&b| b == options.delimiter).count() + 1;
        match width {
            None => {
                if let Some(l) = options.label_column.filter(|&l| l >= n_fields) {
                    return Err(bad_input(
                        name,
                        start,
                        format!("label column {l} does not exist: line 1 has {n_fields} fields"),
                    ));
                }
                width = Some(n_fields);
                table.cols = n_fields - usize::from(options.label_column.is_some());
            }
            Some(w) if w != n_fields => {
                return Err(bad_input(
                    name,
                    start,
                    format!(
                        "line {} has {n_fields} fields but earlier lines have {w}",
                        line_no + 1
                    ),
                ));
            }
            Some(_) => {}
        }
        if options.has_header && table.header.is_none() && table.rows == 0 {
            // Split the bytes (not decoded text): a non-ASCII delimiter byte is no `char`.
            let mut names: Vec<String> = line
                .split(|&b| b == options.delimiter)
                .map(|f| String::from_utf8_lossy(f).trim().to_string())
                .collect();
            if let Some(l) = options.label_column {
                table.label_name = Some(names.remove(l));
            }
            table.header = Some(names);
            continue;
        }
        check_allocation("read_csv", &[table.rows + 1, table.cols], DType::F64)
            .map_err(|_| over_limit(name, start, "the table of f64 features"))?;
        for (col, (at, field)) in fields(line, start, options.delimiter).enumerate() {
            let value = std::str::from_utf8(field)
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .ok_or_else(|| {
                    bad_input(
                        name,
                        at,
                        format!(
                            "line {}, column {col}: {} is not a number",
                            line_no + 1,
                            excerpt(&String::from_utf8_lossy(field))
                        ),
                    )
                })?;
            match (&mut table.labels, options.label_column) {
                (Some(labels), Some(l)) if l == col => {
                    if value.fract() != 0.0 || value.abs() > 9.0e15 {
                        return Err(bad_input(
                            name,
                            at,
                            format!(
                                "line {}, label column {col}: {value} is not an integer class label",
                                line_no + 1
                            ),
                        ));
                    }
                    labels.push(value as i64);
                }
                _ => table.features.push(value),
            }
        }
        table.rows += 1;
    }
    Ok(table)
}
