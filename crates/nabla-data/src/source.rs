//! Reading input (files or bytes in memory, raw or gzip) as a stream, so that a reader never
//! decompresses or allocates more than its header declares and the allocation limit allows; and the
//! error that names the input and a byte offset.

use flate2::read::MultiGzDecoder;
use nabla_core::{Error, Result, max_allocation_bytes};
use std::cell::Cell;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::rc::Rc;

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How many characters of input text an error message echoes.
const EXCERPT_CHARS: usize = 200;

/// How far a buffer of unknown final size grows at first (it then doubles, up to what was asked).
const FIRST_CHUNK: usize = 64 << 10;

/// An error for bad input in `name` at byte `offset`.
pub(crate) fn bad_input(name: &str, offset: usize, message: impl std::fmt::Display) -> Error {
    Error::Io {
        context: format!("reading {name}"),
        message: format!("at byte offset {offset}: {message}"),
    }
}

/// `text` quoted for an error message: escaped, so that it stays on one line, and cut after 200
/// characters with its full length noted (`"abc…"…(102400 bytes)`).
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?}…({} bytes)", &text[..cut], text.len()),
    }
}

/// Whether `bytes` start with the gzip magic bytes.
pub(crate) fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// The error for input (`what`) larger than the allocation limit.
pub(crate) fn over_limit(name: &str, offset: usize, what: &str) -> Error {
    bad_input(
        name,
        offset,
        format!(
            "{what} is larger than the allocation limit of {} bytes (NABLA_MAX_ALLOC_BYTES or \
             nabla_core::set_max_allocation_bytes raises it)",
            max_allocation_bytes()
        ),
    )
}

/// Returns `bytes` decompressed if they start with the gzip magic bytes (`1f 8b`), or unchanged
/// otherwise. `name` (a file name) appears in the error for a corrupt or truncated gzip stream,
/// together with the compressed byte offset where decoding stopped. At most
/// [`nabla_core::max_allocation_bytes`] are decompressed: a larger stream is an error, not an
/// exhausted memory.
///
/// ```
/// use nabla_data::decompress_if_gzip;
/// assert_eq!(decompress_if_gzip(b"plain".to_vec(), "x")?, b"plain");
/// assert!(decompress_if_gzip(vec![0x1f, 0x8b, 8, 0], "bad.gz").unwrap_err().to_string().contains("bad.gz"));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn decompress_if_gzip(bytes: Vec<u8>, name: &str) -> Result<Vec<u8>> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    Input::from_bytes(name, &bytes).read_rest("the decompressed stream")
}

/// Counts the bytes a reader hands out, so a decompression error can name its compressed offset.
struct Counting<R> {
    inner: R,
    consumed: Rc<Cell<usize>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.set(self.consumed.get() + n);
        Ok(n)
    }
}

/// Opens `path` for reading after checking that it is a regular file (a directory, a device or a pipe
/// is an error naming it, and a pipe is never opened, so that nothing blocks); returns it and its
/// length.
fn open_regular_file(path: &Path) -> Result<(File, u64)> {
    let error = |message: String| Error::Io {
        context: format!("reading {}", path.display()),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| error(e.to_string()))?;
    if meta.is_dir() {
        return Err(error("it is a directory, not a file".into()));
    }
    if !meta.is_file() {
        return Err(error(
            "it is not a regular file (a device, a pipe or a socket)".into(),
        ));
    }
    let file = File::open(path).map_err(|e| error(e.to_string()))?;
    let len = file.metadata().map_err(|e| error(e.to_string()))?.len();
    Ok((file, len))
}

/// A stream of input bytes, raw or decompressed, read as a parser asks for them. Short input is an
/// error naming the input and the offset; raw input shorter than a request is reported before
/// anything is allocated, and a gzip stream is decompressed only as far as requested.
pub(crate) struct Input<'a> {
    /// The input's name (usually its path) for errors.
    pub(crate) name: String,
    reader: Box<dyn Read + 'a>,
    /// Bytes consumed so far (decompressed bytes for gzip input).
    pub(crate) pos: usize,
    /// Bytes left, for raw input.
    remaining: Option<u64>,
    /// Compressed bytes consumed, for gzip input.
    compressed: Option<Rc<Cell<usize>>>,
}

impl<'a> Input<'a> {
    /// An input over bytes in memory, decompressed if they are gzip.
    pub(crate) fn from_bytes(name: &str, bytes: &'a [u8]) -> Self {
        if is_gzip(bytes) {
            Self::gzip(name, bytes)
        } else {
            Self::raw(name, bytes, bytes.len() as u64)
        }
    }

    fn raw(name: &str, reader: impl Read + 'a, len: u64) -> Self {
        Input {
            name: name.to_string(),
            reader: Box::new(reader),
            pos: 0,
            remaining: Some(len),
            compressed: None,
        }
    }

    fn gzip(name: &str, reader: impl Read + 'a) -> Self {
        let consumed = Rc::new(Cell::new(0));
        let counting = Counting {
            inner: reader,
            consumed: Rc::clone(&consumed),
        };
        Input {
            name: name.to_string(),
            reader: Box::new(MultiGzDecoder::new(counting)),
            pos: 0,
            remaining: None,
            compressed: Some(consumed),
        }
    }

    /// The next `n` bytes, or an error saying what was being read and how short the input is.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<Vec<u8>> {
        if let Some(left) = self.remaining
            && n as u64 > left
        {
            return Err(self.truncated(n, left, what));
        }
        let bytes = self.read_up_to(n)?;
        if bytes.len() < n {
            return Err(self.truncated(n, bytes.len() as u64, what));
        }
        self.pos += n;
        if let Some(left) = &mut self.remaining {
            *left -= n as u64;
        }
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let bytes = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&bytes);
        Ok(a)
    }

    /// All remaining bytes; more than the allocation limit is an error (`what` names them).
    pub(crate) fn read_rest(&mut self, what: &str) -> Result<Vec<u8>> {
        let limit = max_allocation_bytes();
        let want = match self.remaining {
            Some(left) if left > limit as u64 => return Err(over_limit(&self.name, 0, what)),
            Some(left) => left as usize,
            None => limit.saturating_add(1),
        };
        let bytes = self.read_up_to(want)?;
        if bytes.len() > limit {
            return Err(over_limit(&self.name, 0, what));
        }
        self.pos += bytes.len();
        self.remaining = self.remaining.map(|_| 0);
        Ok(bytes)
    }

    /// Fails unless the input ends here. A gzip stream is read one byte further, which also checks
    /// its CRC.
    pub(crate) fn expect_end(&mut self) -> Result<()> {
        if let Some(left) = self.remaining {
            return match left {
                0 => Ok(()),
                _ => Err(self.error(format!("{left} unexpected trailing bytes"))),
            };
        }
        if self.read_up_to(1)?.is_empty() {
            Ok(())
        } else {
            Err(self.error("unexpected trailing bytes after the data"))
        }
    }

    /// The bytes left in raw input (`None` for gzip input, whose length is unknown).
    pub(crate) fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// An error at the current offset.
    pub(crate) fn error(&self, message: impl std::fmt::Display) -> Error {
        bad_input(&self.name, self.pos, message)
    }

    /// An error at `offset`.
    pub(crate) fn error_at(&self, offset: usize, message: impl std::fmt::Display) -> Error {
        bad_input(&self.name, offset, message)
    }

    /// The error for `what`, which needs `n` bytes where only `left` remain.
    pub(crate) fn truncated(&self, n: usize, left: u64, what: &str) -> Error {
        self.error(format!(
            "truncated input: {what} needs {n} bytes but only {left} remain"
        ))
    }

    /// Reads up to `n` bytes (fewer only at the end of the input). The buffer grows with what
    /// arrives, never past `n`, so a short stream that declared a large size costs little memory.
    fn read_up_to(&mut self, n: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        if self.remaining.is_some() {
            buf.reserve_exact(n);
        }
        let mut filled = 0;
        while filled < n {
            if filled == buf.len() {
                let grow = (n - filled).min(filled.max(FIRST_CHUNK));
                buf.reserve_exact(grow);
                buf.resize(filled + grow, 0);
            }
            match self.reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(k) => filled += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.read_error(e, filled)),
            }
        }
        buf.truncate(filled);
        Ok(buf)
    }

    fn read_error(&self, e: std::io::Error, partial: usize) -> Error {
        match &self.compressed {
            Some(consumed) => bad_input(
                &self.name,
                consumed.get(),
                format!(
                    "corrupt or truncated gzip stream ({e}; {} bytes decompressed)",
                    self.pos + partial
                ),
            ),
            None => self.error(format!("read failed: {e}")),
        }
    }
}

/// The input as a plain byte stream, for parsers that pull bytes themselves (the CSV reader): a read
/// failure, or a corrupt gzip stream, is an [`std::io::Error`] wrapping the [`Error`] that names the
/// input and the offset ([`Input::unwrap_error`] takes it back out).
impl Read for Input<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.reader.read(buf) {
                Ok(n) => {
                    self.pos += n;
                    if let Some(left) = &mut self.remaining {
                        *left = left.saturating_sub(n as u64);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(std::io::Error::other(self.read_error(e, 0))),
            }
        }
    }
}

impl Input<'_> {
    /// The [`Error`] inside an I/O error that [`Input`]'s `Read` (or a reader over it) made, or a new
    /// one naming the input at the current offset.
    pub(crate) fn unwrap_error(&self, e: std::io::Error) -> Error {
        let message = e.to_string();
        match e
            .into_inner()
            .and_then(|inner| inner.downcast::<Error>().ok())
        {
            Some(error) => *error,
            None => self.error(format!("read failed: {message}")),
        }
    }
}

impl Input<'static> {
    /// Opens a file, raw or gzip (detected by its magic bytes). A path that is not a regular file
    /// (a directory, a device, a pipe) is an error naming it.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let (mut file, len) = open_regular_file(path)?;
        let mut magic = [0u8; 2];
        let mut got = 0;
        while got < magic.len() {
            match file.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(bad_input(&name, got, format!("read failed: {e}"))),
            }
        }
        let head = std::io::Cursor::new(magic).take(got as u64);
        let reader = head.chain(BufReader::new(file));
        Ok(if is_gzip(&magic[..got]) {
            Self::gzip(&name, reader)
        } else {
            Self::raw(&name, reader, len)
        })
    }
}
