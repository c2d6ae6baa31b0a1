//! Builders of IDX, `.npy` and gzip files for the reader tests, small valid files (the seeds that
//! the fuzz tests mutate), gzip bombs, and the checks every reader error must pass.

use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;
use std::path::PathBuf;

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A gzip stream that decompresses to `head` followed by `zeros` zero bytes (a whole number of MiB),
/// built from one compressed MiB of zeros repeated as gzip members, so that 4 GiB take ~4 MB and no
/// time to build.
pub fn gzip_bomb(head: &[u8], zeros: usize) -> Vec<u8> {
    const MIB: usize = 1 << 20;
    assert_eq!(zeros % MIB, 0);
    let member = gzip(&vec![0u8; MIB]);
    let mut out = gzip(head);
    out.reserve(member.len() * (zeros / MIB));
    for _ in 0..zeros / MIB {
        out.extend_from_slice(&member);
    }
    out
}

/// A fresh directory for one test.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nabla-data-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An IDX file: header for `dtype` and `dims`, then `payload`.
pub fn idx(dtype: u8, dims: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, dtype, dims.len() as u8];
    for d in dims {
        b.extend_from_slice(&d.to_be_bytes());
    }
    b.extend_from_slice(payload);
    b
}

/// A `.npy` file of format `version` (1, 2 or 3) with the header dict `header` (padded as NumPy
/// pads it) and `payload`.
pub fn npy(version: u8, header: &str, payload: &[u8]) -> Vec<u8> {
    let prefix = if version == 1 { 10 } else { 12 };
    let mut h = header.to_string();
    while !(prefix + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY".to_vec();
    b.extend_from_slice(&[version, 0]);
    if version == 1 {
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
    } else {
        b.extend_from_slice(&(h.len() as u32).to_le_bytes());
    }
    b.extend_from_slice(h.as_bytes());
    b.extend_from_slice(payload);
    b
}

/// A header dict as NumPy writes it.
pub fn npy_header(descr: &str, fortran: bool, shape: &str) -> String {
    let f = if fortran { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {f}, 'shape': {shape}, }}")
}

/// The valid IDX seeds.
pub fn idx_seeds() -> Vec<Vec<u8>> {
    vec![
        idx(0x08, &[2, 3], &[1, 2, 3, 4, 5, 255]),
        idx(
            0x0D,
            &[2, 2],
            &[0x3f, 0x80, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0, 0, 0],
        ),
        idx(0x0B, &[3], &[0xff, 0xfe, 0, 1, 0x7f, 0xff]),
        idx(0x0E, &[], &(-2.25f64).to_be_bytes()),
    ]
}

/// The valid `.npy` seeds (versions 1 to 3, both byte orders, Fortran order, bool, float16 and the
/// unsigned integers).
pub fn npy_seeds() -> Vec<Vec<u8>> {
    let f: Vec<u8> = [1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    vec![
        npy(1, &npy_header("<f4", false, "(2, 3)"), &f),
        npy(2, &npy_header(">i8", false, "(1,)"), &7i64.to_be_bytes()),
        npy(3, &npy_header("|b1", false, "(2,)"), &[1, 0]),
        npy(
            1,
            &npy_header("<i4", true, "(2, 1)"),
            &[1, 0, 0, 0, 2, 0, 0, 0],
        ),
        npy(1, &npy_header("<f2", false, "(2,)"), &[0, 0x3c, 0, 0x38]),
        npy(1, &npy_header(">u2", true, "(1, 2)"), &[0, 1, 0xff, 0xff]),
        npy(
            1,
            &npy_header("<u4", false, "(1,)"),
            &[0xff, 0xff, 0xff, 0xff],
        ),
        npy(2, &npy_header("<u8", false, "(1,)"), &7u64.to_le_bytes()),
    ]
}

/// The valid CSV seeds (a header, semicolons and CRLF, a byte-order mark and quotes).
pub fn csv_seeds() -> Vec<Vec<u8>> {
    vec![
        b"a,b,label\n1,2.5,0\n-3,4e1,1\n".to_vec(),
        b"0.5;1;2\r\n3;4;5\r\n\r\n".to_vec(),
        b"\xef\xbb\xbf\"x\",y,z\n0,\"1\",2\n\n3,4,5".to_vec(),
    ]
}

/// Checks a reader's error: one line, naming `name`, and short.
pub fn check_error(err: &nabla_core::Error, name: &str) {
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "error spans lines: {msg}");
    assert!(msg.contains(name), "error does not name {name}: {msg}");
    assert!(msg.len() < 1200, "error of {} bytes: {msg}", msg.len());
}
