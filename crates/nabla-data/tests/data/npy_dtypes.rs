//! Every numeric `.npy` dtype NumPy writes is read (issue 48, defect 11: float16, uint16, uint32 and
//! uint64 were refused), converted exactly; what cannot be honoured (complex, objects, strings,
//! records, dates) is refused with one line naming the dtype.

use crate::corpus::{check_error, gzip, npy, npy_header};
use nabla_core::half::f16;
use nabla_core::{DType, HostData};
use nabla_data::{NpyReader, parse_npy};

/// Encodes values with the given byte-order function.
fn enc<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// `payload` as a `.npy` file of `descr` and shape `(len,)`, parsed raw, gzip-compressed and in
/// chunks of two; all three must agree.
fn parse(descr: &str, len: usize, payload: &[u8]) -> nabla_core::Result<HostData> {
    let bytes = npy(1, &npy_header(descr, false, &format!("({len},)")), payload);
    let whole = parse_npy(&bytes, "d.npy")?;
    assert_eq!(parse_npy(&gzip(&bytes), "d.npy")?, whole);
    let mut reader = NpyReader::from_bytes(&bytes, "d.npy")?;
    assert_eq!(reader.dtype(), whole.dtype());
    let mut values = Vec::new();
    loop {
        let part = reader.read(2)?.to_f64_vec();
        if part.is_empty() {
            break;
        }
        values.extend(part);
    }
    assert_eq!(values, whole.data.to_f64_vec());
    Ok(whole.data)
}

#[test]
fn float16_is_read_in_both_byte_orders() {
    let v: Vec<f16> = [0.0f32, 0.0625, 0.5, 1.0, -2.5, 65504.0]
        .into_iter()
        .map(f16::from_f32)
        .collect();
    for (descr, payload) in [
        ("<f2", enc(&v, f16::to_le_bytes)),
        (">f2", enc(&v, f16::to_be_bytes)),
    ] {
        let data = parse(descr, v.len(), &payload).unwrap();
        assert_eq!(
            (data.dtype(), &data),
            (DType::F16, &HostData::F16(v.clone()))
        );
    }
}

#[test]
fn unsigned_integers_keep_their_dtype() {
    let u16s = [0u16, 1, 255, 65535];
    for (descr, payload) in [
        ("<u2", enc(&u16s, u16::to_le_bytes)),
        (">u2", enc(&u16s, u16::to_be_bytes)),
    ] {
        let data = parse(descr, 4, &payload).unwrap();
        assert_eq!(data, HostData::U16(u16s.to_vec()));
    }
    let u32s = [0u32, 1, 70000, u32::MAX];
    for (descr, payload) in [
        ("<u4", enc(&u32s, u32::to_le_bytes)),
        (">u4", enc(&u32s, u32::to_be_bytes)),
    ] {
        let data = parse(descr, 4, &payload).unwrap();
        assert_eq!(data, HostData::U32(u32s.to_vec()));
    }
    // Every uint64, past i64::MAX included, is kept exactly.
    let u64s = [0u64, 1, 1 << 40, u64::MAX];
    for (descr, payload) in [
        ("<u8", enc(&u64s, u64::to_le_bytes)),
        (">u8", enc(&u64s, u64::to_be_bytes)),
    ] {
        let data = parse(descr, 4, &payload).unwrap();
        assert_eq!(data, HostData::U64(u64s.to_vec()));
    }
}

#[test]
fn the_other_dtypes_keep_their_values() {
    let cases: [(&str, Vec<u8>, HostData); 6] = [
        ("|u1", vec![0, 7, 255], HostData::U8(vec![0, 7, 255])),
        ("|i1", vec![0, 0x81, 0x7f], HostData::I8(vec![0, -127, 127])),
        (
            "<i2",
            enc(&[-3i16, 0, 300], i16::to_le_bytes),
            HostData::I16(vec![-3, 0, 300]),
        ),
        (
            "<i8",
            enc(&[-3i64, 0, 300], i64::to_le_bytes),
            HostData::I64(vec![-3, 0, 300]),
        ),
        (
            ">f8",
            enc(&[0.25f64, -1.0, 3.0], f64::to_be_bytes),
            HostData::F64(vec![0.25, -1.0, 3.0]),
        ),
        (
            "|b1",
            vec![1, 0, 1],
            HostData::Bool(vec![true, false, true]),
        ),
    ];
    for (descr, payload, expected) in cases {
        assert_eq!(parse(descr, 3, &payload).unwrap(), expected, "{descr}");
    }
}

#[test]
fn dtypes_that_cannot_be_honoured_are_refused_by_name() {
    for (descr, kind) in [
        ("<c8", "complex"),
        ("<c16", "complex"),
        ("|O", "objects"),
        ("<U10", "Unicode strings"),
        ("|S5", "byte strings"),
        ("|V8", "records"),
        ("<M8[ns]", "dates"),
        ("<f16", "float width"),
        ("<i16", "integer width"),
    ] {
        let bytes = npy(1, &npy_header(descr, false, "(1,)"), &[0; 16]);
        let err = parse_npy(&bytes, "c.npy").unwrap_err();
        check_error(&err, "c.npy");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("unsupported dtype \"{descr}\"")) && msg.contains(kind),
            "{msg}"
        );
        assert!(msg.contains("f2, f4, f8"), "{msg}");
    }
}
