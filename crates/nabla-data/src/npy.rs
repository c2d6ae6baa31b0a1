//! NumPy `.npy` files.

use crate::array::{Elem, HostArray, checked_size, short_shape};
use crate::source::{Input, bad_input, excerpt};
use nabla_core::{Element, Result, with_host_data};
use std::path::Path;

/// The six bytes every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The longest header accepted, in bytes. NumPy writes headers of a few hundred bytes (and by default
/// refuses to read any over 10,000); the limit keeps a corrupt header length from costing memory.
const MAX_HEADER_LEN: usize = 1 << 20;

/// Parses a `.npy` file held in memory (format versions 1.0, 2.0 and 3.0; raw or gzip-compressed).
///
/// Supported element types: `f4`, `f8`, `i1`, `i2`, `i4`, `i8`, `u1` and `b1`, little- or big-endian
/// (`i1` and `i2` widen to `i32`); C or Fortran order (Fortran arrays are reordered to row-major).
/// Errors name `name` and the byte offset of the problem.
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
    read_npy_from(Input::from_bytes(name, bytes))
}

/// Reads a `.npy` file (raw or gzip); see [`parse_npy`].
///
/// The header is read first (at most 1 MiB); the data it declares is checked against the allocation
/// limit ([`nabla_core::check_allocation`]) before it is read, and a gzip file is decompressed only as
/// far as the header declares (one byte more shows trailing data, an error as in a raw file).
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostArray> {
    read_npy_from(Input::open(path.as_ref())?)
}

/// The parsed header dictionary.
struct Header {
    elem: Elem,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Parses `.npy` from a stream of raw (decompressed) bytes.
fn read_npy_from(mut c: Input<'_>) -> Result<HostArray> {
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
    let header = parse_header(header, &c.name, header_start)?;
    let size = checked_size(
        &header.shape,
        header.elem,
        &c.name,
        header_start,
        "read_npy",
    )?;
    let data_start = c.pos;
    let what = format!("the data of shape {}", short_shape(&header.shape));
    let data = c.take(size, &what)?;
    c.expect_end()?;
    let mut data = header
        .elem
        .decode(data, header.big_endian, &c.name, data_start)?;
    if header.fortran_order && header.shape.len() > 1 {
        data = with_host_data!(data, v => Element::into_host(fortran_to_c(&v, &header.shape)));
    }
    Ok(HostArray {
        shape: header.shape,
        data,
    })
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
    let (elem, big_endian) = parse_descr(&descr).map_err(|message| p.error(message))?;
    Ok(Header {
        elem,
        big_endian,
        fortran_order,
        shape,
    })
}

/// The element type and byte order of a `descr` such as `'<f4'`, or what is wrong with it.
fn parse_descr(descr: &str) -> std::result::Result<(Elem, bool), String> {
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
    let elem = match kind {
        "f4" => Elem::F32,
        "f8" => Elem::F64,
        "i1" => Elem::I8,
        "i2" => Elem::I16,
        "i4" => Elem::I32,
        "i8" => Elem::I64,
        "u1" => Elem::U8,
        "b1" => Elem::Bool,
        _ => {
            return Err(format!(
                "unsupported dtype {} (supported: f4, f8, i1, i2, i4, i8, u1, b1)",
                excerpt(descr)
            ));
        }
    };
    Ok((elem, big_endian))
}
