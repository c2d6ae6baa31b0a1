//! Reading files into memory, gzip detection, and the error that names a file and a byte offset.

use flate2::read::MultiGzDecoder;
use nabla_core::{Error, Result};
use std::io::Read;
use std::path::Path;

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// An error for bad input in `name` at byte `offset`.
pub(crate) fn bad_input(name: &str, offset: usize, message: impl std::fmt::Display) -> Error {
    Error::Io {
        context: format!("reading {name}"),
        message: format!("at byte offset {offset}: {message}"),
    }
}

/// Reads the whole file, failing with an error that names it.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::Io {
        context: format!("reading {}", path.display()),
        message: e.to_string(),
    })
}

/// Counts the bytes a reader hands out, so a decompression error can name its offset.
struct Counting<'a> {
    inner: &'a [u8],
    consumed: usize,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n;
        Ok(n)
    }
}

/// Returns `bytes` decompressed if they start with the gzip magic bytes (`1f 8b`), or unchanged
/// otherwise. `name` (a file name) appears in the error for a corrupt or truncated gzip stream,
/// together with the compressed byte offset where decoding stopped.
///
/// ```
/// use nabla_data::decompress_if_gzip;
/// assert_eq!(decompress_if_gzip(b"plain".to_vec(), "x")?, b"plain");
/// assert!(decompress_if_gzip(vec![0x1f, 0x8b, 8, 0], "bad.gz").unwrap_err().to_string().contains("bad.gz"));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn decompress_if_gzip(bytes: Vec<u8>, name: &str) -> Result<Vec<u8>> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(bytes);
    }
    let mut counting = Counting {
        inner: &bytes,
        consumed: 0,
    };
    let mut out = Vec::new();
    let result = MultiGzDecoder::new(&mut counting).read_to_end(&mut out);
    match result {
        Ok(_) => Ok(out),
        Err(e) => Err(bad_input(
            name,
            counting.consumed,
            format!(
                "corrupt or truncated gzip stream ({e}; {} bytes decompressed)",
                out.len()
            ),
        )),
    }
}

/// Reads a file and decompresses it if it is gzip.
pub(crate) fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>> {
    decompress_if_gzip(read_file(path)?, &path.display().to_string())
}

/// A cursor over input bytes that reports short reads as errors naming the input and the offset.
pub(crate) struct Cursor<'a> {
    pub(crate) name: &'a str,
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub(crate) fn new(name: &'a str, bytes: &'a [u8]) -> Self {
        Cursor {
            name,
            bytes,
            pos: 0,
        }
    }

    /// The next `n` bytes, or an error saying what was being read and how short the input is.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(self.error(format!(
                "truncated input: {what} needs {n} bytes but only {left} remain"
            )));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// An error at the current offset.
    pub(crate) fn error(&self, message: impl std::fmt::Display) -> Error {
        bad_input(self.name, self.pos, message)
    }

    /// Fails unless the input ends exactly here.
    pub(crate) fn expect_end(&self) -> Result<()> {
        let left = self.bytes.len() - self.pos;
        if left != 0 {
            return Err(self.error(format!("{left} unexpected trailing bytes")));
        }
        Ok(())
    }
}
