//! Numeric CSV files, parsed with the `csv` crate (quoting, line ends, a UTF-8 byte-order mark) and
//! read a chunk of rows at a time.

use crate::source::{Input, bad_input, excerpt, over_limit};
use csv::{ByteRecord, ReaderBuilder};
use nabla_core::{Backend, DType, Error, Result, check_allocation, max_allocation_bytes};
use nabla_tensor::Tensor;
use std::io::Read;
use std::path::Path;

/// The UTF-8 byte-order mark, which some programs write at the start of a text file.
const BOM: &[u8; 3] = b"\xef\xbb\xbf";

/// One row of the file may take at most this fraction of the allocation limit: its parsed fields,
/// their bounds (a word each) and its `f64` values take several times its length.
const ROW_LIMIT_DIVISOR: usize = 16;

/// Whether the first row of a CSV file holds column names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CsvHeader {
    /// The first row is data, like every other (the default): a field that is not a number is an
    /// error naming its row and column.
    #[default]
    Absent,
    /// The first row holds column names.
    Present,
    /// The first row holds column names when none of its fields is a number, and is data otherwise
    /// (so one malformed number in the first row is an error, never a reason to drop the row).
    Detect,
}

/// How to read a CSV file of numbers.
///
/// ```
/// use nabla_data::{CsvHeader, CsvOptions};
/// let opts = CsvOptions::default().has_header(true).label_column(Some(0));
/// assert_eq!((opts.header, opts.delimiter), (CsvHeader::Present, b','));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// Whether the first row holds column names (default [`CsvHeader::Absent`]).
    pub header: CsvHeader,
    /// The column (counting from 0) that holds integer class labels, taken out of the features
    /// (default `None`: every column is a feature).
    pub label_column: Option<usize>,
    /// The field separator (default `,`).
    pub delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            header: CsvHeader::Absent,
            label_column: None,
            delimiter: b',',
        }
    }
}

impl CsvOptions {
    /// Sets [`CsvOptions::header`] to [`CsvHeader::Present`] or [`CsvHeader::Absent`].
    pub fn has_header(mut self, has_header: bool) -> Self {
        self.header = if has_header {
            CsvHeader::Present
        } else {
            CsvHeader::Absent
        };
        self
    }

    /// Sets [`CsvOptions::header`].
    pub fn header(mut self, header: CsvHeader) -> Self {
        self.header = header;
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

/// Parses CSV text of numbers held in memory (raw or gzip-compressed); see [`CsvReader`] for the
/// rules. Errors name `name`, the row and column, and the byte offset of the row.
///
/// ```
/// use nabla_data::{CsvOptions, parse_csv};
/// let text = b"a,b,y\n1.5,2,0\n3,4e1,1\n";
/// let t = parse_csv(text, "t.csv", &CsvOptions::default().has_header(true).label_column(Some(2)))?;
/// assert_eq!((t.rows, t.cols), (2, 2));
/// assert_eq!(t.features, vec![1.5, 2.0, 3.0, 40.0]);
/// assert_eq!(t.labels, Some(vec![0, 1]));
/// let err = parse_csv(b"1,2\n3,x\n", "t.csv", &CsvOptions::default()).unwrap_err().to_string();
/// assert!(err.contains("t.csv") && err.contains("row 2, column 1") && err.contains("offset 4"), "{err}");
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn parse_csv(bytes: &[u8], name: &str, options: &CsvOptions) -> Result<CsvTable> {
    CsvReader::from_bytes(bytes, name, options)?.read_rows(usize::MAX)
}

/// Reads a CSV file of numbers (raw or gzip); see [`parse_csv`] and [`CsvReader`].
///
/// The table of `f64` features must fit the allocation limit ([`nabla_core::max_allocation_bytes`]),
/// and so must each row; [`CsvReader`] reads a file a chunk of rows at a time instead.
pub fn read_csv(path: impl AsRef<Path>, options: &CsvOptions) -> Result<CsvTable> {
    CsvReader::open(path, options)?.read_rows(usize::MAX)
}

/// The input under the CSV parser: it drops a UTF-8 byte-order mark and fails once one row runs
/// longer than `max_row` bytes, so that a file without line breaks cannot grow a row without bound.
struct Source<'a> {
    input: Input<'a>,
    /// The first bytes of the input, unless they were a byte-order mark, and how many were served.
    head: Vec<u8>,
    served: usize,
    /// The length of the byte-order mark dropped (0 or 3): the parser's offsets count from after it.
    bom: usize,
    /// The input offset where the row being parsed starts.
    row_start: usize,
    max_row: usize,
}

impl<'a> Source<'a> {
    fn new(mut input: Input<'a>) -> Result<Self> {
        let mut head = Vec::with_capacity(BOM.len());
        let got = Read::take(&mut input, BOM.len() as u64).read_to_end(&mut head);
        got.map_err(|e| input.unwrap_error(e))?;
        let bom = if head == BOM { BOM.len() } else { 0 };
        head.truncate(head.len() - bom);
        Ok(Source {
            input,
            head,
            served: 0,
            bom,
            row_start: bom,
            max_row: max_allocation_bytes() / ROW_LIMIT_DIVISOR,
        })
    }
}

impl Read for Source<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.served < self.head.len() {
            let n = buf.len().min(self.head.len() - self.served);
            buf[..n].copy_from_slice(&self.head[self.served..self.served + n]);
            self.served += n;
            return Ok(n);
        }
        if self.input.pos.saturating_sub(self.row_start) > self.max_row {
            return Err(std::io::Error::other(bad_input(
                &self.input.name,
                self.row_start,
                format!(
                    "a row is longer than {} bytes, 1/{ROW_LIMIT_DIVISOR} of the allocation limit \
                     of {} bytes (NABLA_MAX_ALLOC_BYTES or nabla_core::set_max_allocation_bytes \
                     raises it)",
                    self.max_row,
                    max_allocation_bytes()
                ),
            )));
        }
        self.input.read(buf)
    }
}

/// A CSV file of numbers read a chunk of rows at a time, so that memory is bounded by the chunk, not
/// the file (raw or gzip; the `csv` crate parses it).
///
/// Every row has the same number of fields; quoted fields, `\n`, `\r\n` and `\r` line ends are
/// understood, blank lines are skipped and a UTF-8 byte-order mark at the start is dropped. Fields
/// are numbers as Rust's `f64` parser reads them, after trimming ASCII spaces. Whether the first row
/// is a header is [`CsvOptions::header`]'s rule; a field that is not a number in any data row is an
/// error naming the file, the row (counted from 1, the header included), the column (from 0) and
/// the byte offset where the row starts.
///
/// ```
/// use nabla_data::{CsvHeader, CsvOptions, CsvReader};
/// let text = b"\xef\xbb\xbfx,y\n0.5,1\n2,3\n4,5\n";
/// let mut r = CsvReader::from_bytes(text, "t.csv", &CsvOptions::default().header(CsvHeader::Detect))?;
/// assert_eq!((r.header(), r.cols()), (Some(&["x".to_string(), "y".to_string()][..]), Some(2)));
/// assert_eq!(r.read_rows(2)?.features, vec![0.5, 1.0, 2.0, 3.0]);
/// assert_eq!(r.read_rows(2)?.features, vec![4.0, 5.0]);
/// assert_eq!(r.read_rows(2)?.rows, 0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct CsvReader<'a> {
    reader: csv::Reader<Source<'a>>,
    options: CsvOptions,
    /// The row last parsed, reused for every row.
    record: ByteRecord,
    /// Whether `record` holds a data row not yet returned.
    pending: bool,
    header: Option<Vec<String>>,
    label_name: Option<String>,
    /// The number of fields of every row, once one was read.
    width: Option<usize>,
}

impl CsvReader<'static> {
    /// Opens a CSV file (raw or gzip) and reads its first row, to tell a header from data.
    pub fn open(path: impl AsRef<Path>, options: &CsvOptions) -> Result<Self> {
        CsvReader::new(Input::open(path.as_ref())?, options)
    }
}

impl<'a> CsvReader<'a> {
    /// A reader over CSV text held in memory (raw or gzip); `name` appears in errors.
    pub fn from_bytes(bytes: &'a [u8], name: &str, options: &CsvOptions) -> Result<Self> {
        CsvReader::new(Input::from_bytes(name, bytes), options)
    }

    /// The names of the feature columns, if the file has a header.
    pub fn header(&self) -> Option<&[String]> {
        self.header.as_deref()
    }

    /// The name of the label column, if the file has a header and a label column was chosen.
    pub fn label_name(&self) -> Option<&str> {
        self.label_name.as_deref()
    }

    /// The number of feature columns, or `None` for a file without any row.
    pub fn cols(&self) -> Option<usize> {
        let label = usize::from(self.options.label_column.is_some());
        self.width.map(|w| w - label)
    }

    /// The next rows, at most `max_rows` of them (fewer only at the end of the file, none after it),
    /// as a table that carries the header. The table must fit the allocation limit.
    pub fn read_rows(&mut self, max_rows: usize) -> Result<CsvTable> {
        let mut table = CsvTable {
            header: self.header.clone(),
            label_name: self.label_name.clone(),
            features: Vec::new(),
            rows: 0,
            cols: self.cols().unwrap_or(0),
            labels: self.options.label_column.map(|_| Vec::new()),
        };
        while table.rows < max_rows {
            if !self.pending && !self.next_record()? {
                break;
            }
            self.pending = false;
            self.push_row(&mut table)?;
        }
        Ok(table)
    }

    /// Makes the parser and reads the first row: the header, or data kept for the first chunk.
    fn new(input: Input<'a>, options: &CsvOptions) -> Result<Self> {
        if matches!(options.delimiter, b'"' | b'\n' | b'\r') {
            return Err(bad_input(
                &input.name,
                0,
                format!(
                    "the delimiter {:?} cannot be a quote or a line break",
                    char::from(options.delimiter)
                ),
            ));
        }
        let reader = ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(options.delimiter)
            .from_reader(Source::new(input)?);
        let mut r = CsvReader {
            reader,
            options: options.clone(),
            record: ByteRecord::new(),
            pending: false,
            header: None,
            label_name: None,
            width: None,
        };
        if r.next_record()? {
            r.first_row()?;
        }
        Ok(r)
    }

    /// Takes the first row (in `record`): its width, and whether it is the header.
    fn first_row(&mut self) -> Result<()> {
        let n = self.record.len();
        if let Some(l) = self.options.label_column.filter(|&l| l >= n) {
            return Err(self.row_error(format!(
                "label column {l} does not exist: row 1 has {n} fields"
            )));
        }
        self.width = Some(n);
        let is_header = match self.options.header {
            CsvHeader::Present => true,
            CsvHeader::Absent => false,
            CsvHeader::Detect => self.record.iter().all(|f| number(f).is_none()),
        };
        if !is_header {
            self.pending = true;
            return Ok(());
        }
        let mut names: Vec<String> = self
            .record
            .iter()
            .map(|f| String::from_utf8_lossy(f).trim().to_string())
            .collect();
        if let Some(l) = self.options.label_column {
            self.label_name = Some(names.remove(l));
        }
        self.header = Some(names);
        Ok(())
    }

    /// Parses the next row into `record`, skipping lines of spaces (the parser skips empty ones);
    /// `false` at the end.
    fn next_record(&mut self) -> Result<bool> {
        loop {
            let more = match self.reader.read_byte_record(&mut self.record) {
                Ok(more) => more,
                Err(e) => return Err(self.csv_error(e)),
            };
            let next = self.reader.position().byte() as usize;
            let source = self.reader.get_mut();
            source.row_start = source.bom + next;
            let field = self.record.get(0).unwrap_or_default();
            let blank = self.record.len() == 1
                && !field.is_empty()
                && field.iter().all(u8::is_ascii_whitespace);
            if !more || !blank {
                return Ok(more);
            }
        }
    }

    /// Appends the row in `record` to `table`.
    fn push_row(&mut self, table: &mut CsvTable) -> Result<()> {
        let (row, offset) = self.row_position();
        let (n, width) = (self.record.len(), self.width.unwrap_or(0));
        if n != width {
            return Err(self.row_error(format!(
                "row {row} has {n} fields but earlier rows have {width}"
            )));
        }
        let name = &self.reader.get_ref().input.name;
        check_allocation("read_csv", &[table.rows + 1, table.cols], DType::F64)
            .map_err(|_| over_limit(name, offset, "the table of f64 features"))?;
        for (col, field) in self.record.iter().enumerate() {
            let value = number(field).ok_or_else(|| {
                let text = excerpt(&String::from_utf8_lossy(field));
                bad_input(
                    name,
                    offset,
                    format!("row {row}, column {col}: {text} is not a number"),
                )
            })?;
            match (&mut table.labels, self.options.label_column) {
                (Some(labels), Some(l)) if l == col => {
                    if value.fract() != 0.0 || value.abs() > 9.0e15 {
                        return Err(bad_input(
                            name,
                            offset,
                            format!(
                                "row {row}, label column {col}: {value} is not an integer class label"
                            ),
                        ));
                    }
                    labels.push(value as i64);
                }
                _ => table.features.push(value),
            }
        }
        table.rows += 1;
        Ok(())
    }

    /// The row number (from 1) of the row in `record` and the input offset where it starts.
    fn row_position(&self) -> (u64, usize) {
        let bom = self.reader.get_ref().bom;
        match self.record.position() {
            Some(p) => (p.record() + 1, bom + p.byte() as usize),
            None => (0, bom),
        }
    }

    /// An error about the row in `record`.
    fn row_error(&self, message: String) -> Error {
        bad_input(
            &self.reader.get_ref().input.name,
            self.row_position().1,
            message,
        )
    }

    /// A parser error as an error naming the input: a read error is the input's own.
    fn csv_error(&self, e: csv::Error) -> Error {
        let source = self.reader.get_ref();
        let message = e.to_string();
        match e.into_kind() {
            csv::ErrorKind::Io(io) => source.input.unwrap_error(io),
            _ => bad_input(
                &source.input.name,
                source.row_start,
                format!("cannot parse the CSV text: {message}"),
            ),
        }
    }
}

/// The number a field holds (trimmed of ASCII spaces), if it is one.
fn number(field: &[u8]) -> Option<f64> {
    std::str::from_utf8(field).ok()?.trim().parse().ok()
}
