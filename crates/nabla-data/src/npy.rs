//! NumPy `.npy` files.

use crate::array::{HostArray, checked_size, decode, short_shape, slice_host};
use crate::source::{Input, bad_input, excerpt, over_limit};
use nabla_core::{DType, Element, HostData, Result, check_allocation, with_host_data};
use std::path::Path;

/// The six bytes every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The longest header accepted, in bytes. NumPy writes headers of a few hundred bytes (and by default
/// refuses to read any over 10,000); the limit keeps a corrupt header length from costing memory.
const MAX_HEADER_LEN: usize = 1 << 20;

/// The `descr` codes read, for error messages.
const SUPPORTED: &str = "f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, u8 and b1";

/// Parses a `.npy` file held in memory (format versions 1.0, 2.0 and 3.0; raw or gzip-compressed).
///
/// Supported element types: `f2`, `f4`, `f8`, `i1`, `i2`, `i4`, `i8`, `u1`, `u2`, `u4`, `u8` and
/// `b1`, little- or big-endian, each read as the nabla dtype of its name (`i1` as `int8`, `u8` as
/// `uint64`, ...). Complex,
/// string, object, structured and date types are refused with an error naming the dtype. C or
/// Fortran order (Fortran arrays are reordered to row-major). Errors name `name` and the byte offset
/// of the problem.
///
/// ```
/// use nabla_core::HostData;
/// use nabla_data::parse_npy;
/// let header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
/// let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
/// bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
/// bytes.extend_from_slice(header.as_bytes());
/// bytes.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
/// let a = parse_npy(&bytes, "a.npy")?;
/// assert_eq!((a.shape, a.data), (vec![2], HostData::I32(vec![1, 2])));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn parse_npy(bytes: &[u8], name: &str) -> Result<HostArray> {
    NpyReader::new(Input::from_bytes(name, bytes), true)?.into_array()
}

/// Reads a `.npy` file (raw or gzip); see [`parse_npy`].
///
/// The header is read first (at most 1 MiB); the data it declares is checked against the allocation
/// limit ([`nabla_core::check_allocation`]) before it is read, and a gzip file is decompressed only as
/// far as the header declares (one byte more shows trailing data, an error as in a raw file).
/// [`NpyReader`] reads a file a chunk at a time instead.
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostArray> {
    NpyReader::new(Input::open(path.as_ref())?, true)?.into_array()
}

/// The parsed header dictionary.
struct Header {
    dtype: DType,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A `.npy` file read a chunk at a time, so that memory is bounded by the chunk, not the file: the
/// header is read and checked when the reader is made, and [`NpyReader::read`] returns the next
/// elements in row-major order, decoded as [`parse_npy`] decodes them.
///
/// A raw file whose length does not match its header is refused when it is opened; a gzip file is
/// checked as it is read. A Fortran-order array of rank 2 or more has no row-major chunks in the
/// file: the first `read` loads it whole (within the allocation limit) and later ones copy from it.
///
/// ```
/// use nabla_core::HostData;
/// use nabla_data::NpyReader;
/// let header = "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 1), }";
/// let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
/// bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
/// bytes.extend_from_slice(header.as_bytes());
/// bytes.extend_from_slice(&[1, 0, 2, 0, 3, 0]);
/// let mut r = NpyReader::from_bytes(&bytes, "a.npy")?;
/// assert_eq!((r.shape(), r.dtype(), r.numel()), (&[3, 1][..], nabla_core::DType::U16, 3));
/// assert_eq!(r.read(2)?, HostData::U16(vec![1, 2]));
/// assert_eq!(r.read(2)?, HostData::U16(vec![3]));
/// assert!(r.read(2)?.is_empty());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct NpyReader<'a> {
    input: Input<'a>,
    header: Header,
    /// Where the header starts, for errors about it.
    header_start: usize,
    /// The number of elements.
    numel: usize,
    /// Elements of the file not yet read.
    left: usize,
    /// A Fortran-order array loaded whole and reordered, and how many of its elements were returned.
    loaded: Option<(HostData, usize)>,
}

impl NpyReader<'static> {
    /// Opens a `.npy` file (raw or gzip) and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        NpyReader::new(Input::open(path.as_ref())?, false)
    }
}

impl<'a> NpyReader<'a> {
    /// A reader over a `.npy` file held in memory (raw or gzip); `name` appears in errors.
    pub fn from_bytes(bytes: &'a [u8], name: &str) -> Result<Self> {
        NpyReader::new(Input::from_bytes(name, bytes), false)
    }

    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        &self.header.shape
    }

    /// The dtype the elements decode to.
    pub fn dtype(&self) -> DType {
        self.header.dtype
    }

    /// The number of elements the header declares.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// The number of elements not yet returned by [`NpyReader::read`].
    pub fn remaining(&self) -> usize {
        match &self.loaded {
            Some((data, at)) => data.len() - at,
            None => self.left,
        }
    }

    /// The next elements in row-major order, at most `max` of them: fewer only at the end of the
    /// array, none after it. The chunk must fit the allocation limit. Truncated input, trailing
    /// bytes after the last element and elements that cannot be decoded are errors naming the file
    /// and the byte offset.
    pub fn read(&mut self, max: usize) -> Result<HostData> {
        if !(self.header.fortran_order && self.header.shape.len() > 1) {
            return self.read_in_file_order(max);
        }
        let (data, at) = match self.loaded.take() {
            Some(loaded) => loaded,
            None => (self.read_whole()?, 0),
        };
        let end = at.saturating_add(max).min(data.len());
        let chunk = slice_host(&data, at..end);
        self.loaded = Some((data, end));
        Ok(chunk)
    }

    /// Reads the magic string, the version and the header of `c`. A whole-array read (`whole`)
    /// checks the declared data against the allocation limit; a chunked one only that its size can
    /// be counted. Raw input must hold exactly the declared data.
    fn new(mut c: Input<'a>, whole: bool) -> Result<Self> {
        let (header, header_start) = read_header(&mut c)?;
        // An empty array has no size to overflow, whatever its other dimensions.
        let numel = if header.shape.contains(&0) {
            Some(0)
        } else {
            header
                .shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
        };
        if whole && numel != Some(0) {
            checked_size(
                &header.shape,
                header.dtype,
                &c.name,
                header_start,
                "read_npy",
            )?;
        }
        let size = numel.and_then(|n| n.checked_mul(header.dtype.size_in_bytes()));
        let (Some(numel), Some(size)) = (numel, size) else {
            return Err(c.error_at(
                header_start,
                format!(
                    "the header declares shape {}, whose size in bytes overflows",
                    short_shape(&header.shape)
                ),
            ));
        };
        match c.remaining() {
            Some(left) if left < size as u64 => {
                let what = format!("the data of shape {}", short_shape(&header.shape));
                return Err(c.truncated(size, left, &what));
            }
            Some(left) if left > size as u64 => {
                let extra = left - size as u64;
                return Err(c.error_at(c.pos + size, format!("{extra} unexpected trailing bytes")));
            }
            _ => {}
        }
        Ok(NpyReader {
            input: c,
            header,
            header_start,
            numel,
            left: numel,
            loaded: None,
        })
    }

    /// The next elements as they lie in the file, at most `max`; checks the end of the input after
    /// the last one.
    fn read_in_file_order(&mut self, max: usize) -> Result<HostData> {
        let n = max.min(self.left);
        let dtype = self.header.dtype;
        check_allocation("NpyReader::read", &[n], dtype)
            .map_err(|_| over_limit(&self.input.name, self.input.pos, "the chunk asked for"))?;
        let offset = self.input.pos;
        let what = format!("the data of shape {}", short_shape(&self.header.shape));
        // Cannot overflow: the size of the whole data was counted when the header was read.
        let bytes = self
            .input
            .take(n * self.header.dtype.size_in_bytes(), &what)?;
        let data = decode(
            self.header.dtype,
            bytes,
            self.header.big_endian,
            &self.input.name,
            offset,
        )?;
        self.left -= n;
        if self.left == 0 {
            self.input.expect_end()?;
        }
        Ok(data)
    }

    /// The whole array (what is left of it) in row-major order, after checking that it fits the
    /// allocation limit.
    fn read_whole(&mut self) -> Result<HostData> {
        let (shape, dtype) = (&self.header.shape, self.header.dtype);
        if self.numel > 0 {
            checked_size(
                shape,
                dtype,
                &self.input.name,
                self.header_start,
                "read_npy",
            )?;
        }
        let data = self.read_in_file_order(self.left)?;
        if !(self.header.fortran_order && self.header.shape.len() > 1) {
            return Ok(data);
        }
        let shape = &self.header.shape;
        Ok(with_host_data!(data, v => Element::into_host(fortran_to_c(&v, shape))))
    }

    /// The whole array.
    fn into_array(mut self) -> Result<HostArray> {
        let data = self.read_whole()?;
        Ok(HostArray {
            shape: self.header.shape,
            data,
        })
    }
}

/// Reads the magic string, the format version and the header dictionary of `c`; returns the header
/// and the offset where its text starts.
fn read_header(c: &mut Input<'_>) -> Result<(Header, usize)> {
    let magic = c.array::<6>("the magic string")?;
    if &magic != MAGIC {
        return Err(c.error_at(0, "not a .npy file: the magic string \\x93NUMPY is missing"));
    }
    let [major, minor] = c.array::<2>("the format version")?;
    let header_len = match major {
        1 => u16::from_le_bytes(c.array::<2>("the header length")?) as usize,
        2 | 3 => u32::from_le_bytes(c.array::<4>("the header length")?) as usize,
        _ => {
            return Err(c.error_at(
                6,
                format!(
                    "unsupported .npy format version {major}.{minor} (1.0, 2.0 and 3.0 are \
                     supported)"
                ),
            ));
        }
    };
    if header_len > MAX_HEADER_LEN {
        return Err(c.error_at(
            8,
            format!("header length {header_len} is over the limit of {MAX_HEADER_LEN} bytes"),
        ));
    }
    let header_start = c.pos;
    let header = c.take(header_len, "the header")?;
    let header = std::str::from_utf8(&header)
        .map_err(|e| c.error_at(header_start + e.valid_up_to(), "header is not UTF-8"))?;
    Ok((parse_header(header, &c.name, header_start)?, header_start))
}

/// Reorders a column-major array of `shape` into row-major order.
fn fortran_to_c<T: Copy>(data: &[T], shape: &[usize]) -> Vec<T> {
    // An empty array has nothing to reorder, and its other dimensions may be as large as the header
    // says (`(2, 2**63, 0)`): their strides would overflow. A non-empty one has every stride at most
    // its length.
    if data.is_empty() {
        return Vec::new();
    }
    // Column-major strides, walked in row-major index order.
    let mut strides = vec![1usize; shape.len()];
    for i in 1..shape.len() {
        strides[i] = strides[i - 1] * shape[i - 1];
    }
    let mut index = vec![0usize; shape.len()];
    let mut out = Vec::with_capacity(data.len());
    for _ in 0..data.len() {
        let at: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.push(data[at]);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

/// A tiny parser for the Python dict literal of a `.npy` header.
struct HeaderParser<'a> {
    text: &'a str,
    pos: usize,
    name: &'a str,
    base: usize,
}

/// A value in the header dict.
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

impl HeaderParser<'_> {
    fn error(&self, message: impl std::fmt::Display) -> nabla_core::Error {
        bad_input(
            self.name,
            self.base + self.pos,
            format!(
                "bad .npy header {}: {message}",
                excerpt(self.text.trim_end())
            ),
        )
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text[self.pos..].chars().next()
    }

    fn expect(&mut self, ch: char) -> Result<()> {
        if self.peek() != Some(ch) {
            return Err(self.error(format!("expected {ch:?}")));
        }
        self.pos += ch.len_utf8();
        Ok(())
    }

    fn string(&mut self) -> Result<String> {
        let quote = match self.peek() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(self.error("expected a quoted string")),
        };
        self.pos += 1;
        let rest = &self.text[self.pos..];
        let end = rest
            .find(quote)
            .ok_or_else(|| self.error("unterminated string"))?;
        self.pos += end + 1;
        Ok(rest[..end].to_string())
    }

    fn value(&mut self) -> Result<Value> {
        match self.peek() {
            Some('\'' | '"') => self.string().map(Value::Str),
            Some('(') => {
                self.pos += 1;
                let mut dims = Vec::new();
                while self.peek() != Some(')') {
                    let rest = &self.text[self.pos..];
                    let len =
                        rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                    let dim = rest[..len]
                        .parse::<usize>()
                        .map_err(|_| self.error("expected a dimension (a non-negative integer)"))?;
                    self.pos += len;
                    dims.push(dim);
                    if self.peek() == Some(',') {
                        self.pos += 1;
                    } else if self.peek() != Some(')') {
                        return Err(self.error("expected ',' or ')' in the shape"));
                    }
                }
                self.pos += 1;
                Ok(Value::Tuple(dims))
            }
            _ => {
                for (word, b) in [("True", true), ("False", false)] {
                    if self.text[self.pos..].starts_with(word) {
                        self.pos += word.len();
                        return Ok(Value::Bool(b));
                    }
                }
                Err(self.error("expected a string, True, False or a tuple"))
            }
        }
    }
}

/// Parses the header dict and checks its three keys.
fn parse_header(text: &str, name: &str, base: usize) -> Result<Header> {
    let mut p = HeaderParser {
        text,
        pos: 0,
        name,
        base,
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect('{')?;
    while p.peek() != Some('}') {
        let key_start = p.pos;
        let key = p.string()?;
        let repeated = match key.as_str() {
            "descr" => descr.is_some(),
            "fortran_order" => fortran.is_some(),
            "shape" => shape.is_some(),
            _ => false,
        };
        if repeated {
            p.pos = key_start;
            return Err(p.error(format!("the key {key:?} appears twice")));
        }
        p.expect(':')?;
        match (key.as_str(), p.value()?) {
            ("descr", Value::Str(s)) => descr = Some(s),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            (k, _) => {
                return Err(p.error(format!("unexpected key or value type for {}", excerpt(k))));
            }
        }
        if p.peek() == Some(',') {
            p.pos += 1;
        } else if p.peek() != Some('}') {
            return Err(p.error("expected ',' or '}'"));
        }
    }
    let (Some(descr), Some(fortran_order), Some(shape)) = (descr, fortran, shape) else {
        return Err(p.error("the keys 'descr', 'fortran_order' and 'shape' are required"));
    };
    let (dtype, big_endian) = parse_descr(&descr).map_err(|message| p.error(message))?;
    Ok(Header {
        dtype,
        big_endian,
        fortran_order,
        shape,
    })
}

/// The element type and byte order of a `descr` such as `'<f4'`, or what is wrong with it.
fn parse_descr(descr: &str) -> std::result::Result<(DType, bool), String> {
    // The byte-order character, if the first character is ASCII (slicing at 1 would split a
    // multi-byte character).
    let (order, kind) = match descr.as_bytes().first() {
        Some(b) if b.is_ascii() => descr.split_at(1),
        _ => ("", descr),
    };
    let big_endian = match order {
        ">" => true,
        "<" | "|" | "=" => false,
        _ => {
            return Err(format!(
                "descr {} has no byte-order character",
                excerpt(descr)
            ));
        }
    };
    let dtype = match kind {
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "b1" => DType::Bool,
        _ => {
            return Err(format!(
                "unsupported dtype {}{}: the supported ones are {SUPPORTED}",
                excerpt(descr),
                dtype_kind(kind)
            ));
        }
    };
    Ok((dtype, big_endian))
}

/// What a `descr` type code that nabla does not read holds, for the error (` (complex numbers)`), or
/// nothing for a code it does not know.
fn dtype_kind(kind: &str) -> &'static str {
    match kind.chars().next() {
        Some('c') => " (complex numbers)",
        Some('O') => " (Python objects)",
        Some('U') => " (Unicode strings)",
        Some('S' | 'a') => " (byte strings)",
        Some('V') => " (raw or structured records)",
        Some('M' | 'm') => " (dates or time spans)",
        Some('f') => " (a float width other than 2, 4 or 8 bytes)",
        Some('i' | 'u') => " (an integer width other than 1, 2, 4 or 8 bytes)",
        _ => "",
    }
}
