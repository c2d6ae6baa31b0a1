//! NumPy `.npy` files.

use crate::array::{Elem, HostArray, checked_size};
use crate::source::{Cursor, bad_input, decompress_if_gzip, read_maybe_gzip};
use nabla_core::{Element, Result, with_host_data};
use std::path::Path;

/// The six bytes every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

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
    let raw = decompress_if_gzip(bytes.to_vec(), name)?;
    parse_raw_npy(&raw, name)
}

/// Reads a `.npy` file (raw or gzip); see [`parse_npy`].
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostArray> {
    let path = path.as_ref();
    let bytes = read_maybe_gzip(path)?;
    parse_raw_npy(&bytes, &path.display().to_string())
}

/// The parsed header dictionary.
struct Header {
    elem: Elem,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Parses uncompressed `.npy` bytes.
fn parse_raw_npy(bytes: &[u8], name: &str) -> Result<HostArray> {
    let mut c = Cursor::new(name, bytes);
    let magic = c.array::<6>("the magic string")?;
    if &magic != MAGIC {
        c.pos = 0;
        return Err(c.error("not a .npy file: the magic string \\x93NUMPY is missing"));
    }
    let [major, minor] = c.array::<2>("the format version")?;
    let header_len = match major {
        1 => u16::from_le_bytes(c.array::<2>("the header length")?) as usize,
        2 | 3 => u32::from_le_bytes(c.array::<4>("the header length")?) as usize,
        _ => {
            c.pos = 6;
            return Err(c.error(format!(
                "unsupported .npy format version {major}.{minor} (1.0, 2.0 and 3.0 are supported)"
            )));
        }
    };
    let header_start = c.pos;
    let header = c.take(header_len, "the header")?;
    let header = std::str::from_utf8(header)
        .map_err(|e| bad_input(name, header_start + e.valid_up_to(), "header is not UTF-8"))?;
    let header = parse_header(header, name, header_start)?;
    let (_, size) = checked_size(&header.shape, header.elem, name, header_start)?;
    let data_start = c.pos;
    let data = c.take(size, &format!("the data of shape {:?}", header.shape))?;
    c.expect_end()?;
    let mut data = header
        .elem
        .decode(data, header.big_endian, name, data_start)?;
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
            format!("bad .npy header {:?}: {message}", self.text.trim_end()),
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
        let key = p.string()?;
        p.expect(':')?;
        match (key.as_str(), p.value()?) {
            ("descr", Value::Str(s)) => descr = Some(s),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            (k, _) => return Err(p.error(format!("unexpected key or value type for {k:?}"))),
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
    let (order, kind) = descr.split_at(descr.len().min(1));
    let big_endian = match order {
        ">" => true,
        "<" | "|" | "=" => false,
        _ => return Err(p.error(format!("descr {descr:?} has no byte-order character"))),
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
            return Err(p.error(format!(
                "unsupported dtype {descr:?} (supported: f4, f8, i1, i2, i4, i8, u1, b1)"
            )));
        }
    };
    Ok(Header {
        elem,
        big_endian,
        fortran_order,
        shape,
    })
}
