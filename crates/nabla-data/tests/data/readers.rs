//! IDX, CSV and .npy readers on small files written here, and on truncated or corrupted bytes.

use crate::corpus::{gzip, idx, npy, npy_header, temp_dir};
use nabla_core::{HostData, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{
    CsvOptions, HostArray, Mnist, parse_csv, parse_idx, parse_npy, read_csv, read_idx, read_npy,
};

/// Every strict prefix of `bytes` must fail with an error naming `name` and an offset; every one-byte
/// corruption must return (Ok or Err) without panicking.
fn fuzz(bytes: &[u8], name: &str, parse: impl Fn(&[u8], &str) -> Result<()>) {
    for cut in 0..bytes.len() {
        let err = parse(&bytes[..cut], name).expect_err(&format!("prefix of {cut} bytes parsed"));
        let msg = err.to_string();
        assert!(
            msg.contains(name) && msg.contains("offset"),
            "cut {cut}: {msg}"
        );
    }
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut c = bytes.to_vec();
            c[i] ^= flip;
            let _ = parse(&c, name);
        }
    }
}

#[test]
fn idx_all_dtypes() {
    let a = parse_idx(&idx(0x08, &[2, 3], &[1, 2, 3, 4, 5, 255]), "u8").unwrap();
    assert_eq!(a.shape, vec![2, 3]);
    assert_eq!(a.data, HostData::U8(vec![1, 2, 3, 4, 5, 255]));
    let a = parse_idx(&idx(0x09, &[2], &[0xff, 0x05]), "i8").unwrap();
    assert_eq!(a.data, HostData::I8(vec![-1, 5]));
    let a = parse_idx(&idx(0x0B, &[1], &(-300i16).to_be_bytes()), "i16").unwrap();
    assert_eq!(a.data, HostData::I16(vec![-300]));
    let a = parse_idx(&idx(0x0C, &[1], &(-70000i32).to_be_bytes()), "i32").unwrap();
    assert_eq!(a.data, HostData::I32(vec![-70000]));
    let a = parse_idx(&idx(0x0D, &[1], &1.5f32.to_be_bytes()), "f32").unwrap();
    assert_eq!(a.data, HostData::F32(vec![1.5]));
    let a = parse_idx(&idx(0x0E, &[], &(-2.25f64).to_be_bytes()), "f64").unwrap();
    assert_eq!((a.shape.len(), a.data), (0, HostData::F64(vec![-2.25])));
}

#[test]
fn idx_errors_name_file_and_offset() {
    let err = |b: &[u8]| parse_idx(b, "x.idx").unwrap_err().to_string();
    let e = err(&[1, 0, 8, 1, 0, 0, 0, 1, 0]);
    assert!(
        e.contains("x.idx") && e.contains("offset 0") && e.contains("magic"),
        "{e}"
    );
    let e = err(&[0, 0, 0x42, 1, 0, 0, 0, 1, 0]);
    assert!(e.contains("offset 2") && e.contains("0x42"), "{e}");
    let e = err(&idx(0x08, &[4], &[1, 2]));
    assert!(
        e.contains("offset 8") && e.contains("needs 4 bytes but only 2"),
        "{e}"
    );
    let e = err(&idx(0x08, &[1], &[1, 2]));
    assert!(e.contains("offset 9") && e.contains("trailing"), "{e}");
    let e = err(&idx(0x08, &[u32::MAX, u32::MAX, u32::MAX], &[]));
    assert!(e.contains("x.idx"), "{e}");
}

#[test]
fn idx_fuzz_raw_and_gzip() {
    let raw = idx(
        0x0D,
        &[2, 2],
        &[0x3f, 0x80, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x3f, 0, 0, 0],
    );
    fuzz(&raw, "f.idx", |b, n| parse_idx(b, n).map(drop));
    // A truncated gzip stream fails with the file name and the compressed offset.
    let gz = gzip(&raw);
    assert_eq!(
        parse_idx(&gz, "f.idx.gz").unwrap(),
        parse_idx(&raw, "f.idx").unwrap()
    );
    fuzz(&gz[..], "f.idx.gz", |b, n| {
        // Prefixes shorter than the gzip magic are read as raw IDX; both must fail cleanly.
        parse_idx(b, n).map(drop)
    });
}

#[test]
fn mnist_from_directory_raw_and_gzip() {
    let dir = temp_dir("mnist");
    let pixels: Vec<u8> = (0..3 * 4 * 5).map(|i| (i * 4) as u8).collect();
    std::fs::write(
        dir.join("train-images-idx3-ubyte"),
        idx(0x08, &[3, 4, 5], &pixels),
    )
    .unwrap();
    std::fs::write(
        dir.join("train-labels-idx1-ubyte.gz"),
        gzip(&idx(0x08, &[3], &[7, 0, 9])),
    )
    .unwrap();
    let m = Mnist::load(&dir, true, &CpuBackend::new()).unwrap();
    assert_eq!(m.images.shape(), &[3, 1, 4, 5]);
    assert_eq!(m.labels.to_vec::<i64>().unwrap(), vec![7, 0, 9]);
    let v = m.images.to_vec::<f32>().unwrap();
    assert_eq!(v[1], 4.0 / 255.0);
    assert_eq!(m.len(), 3);
    let ds = m.into_dataset().unwrap();
    assert_eq!(nabla_data::Dataset::len(&ds), 3);
    // Missing test split: the error names the directory and the file.
    let e = Mnist::load(&dir, false, &CpuBackend::new())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("t10k-images-idx3-ubyte") && e.contains(&dir.display().to_string()),
        "{e}"
    );
    // Label count mismatch.
    std::fs::write(
        dir.join("t10k-images-idx3-ubyte"),
        idx(0x08, &[1, 1, 1], &[0]),
    )
    .unwrap();
    std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx(0x08, &[2], &[0, 1])).unwrap();
    assert!(Mnist::load(&dir, false, &CpuBackend::new()).is_err());
    // A truncated file on disk: the error names the path and the offset.
    std::fs::write(dir.join("bad.idx"), idx(0x08, &[5], &[1])).unwrap();
    let e = read_idx(dir.join("bad.idx")).unwrap_err().to_string();
    assert!(e.contains("bad.idx") && e.contains("offset 8"), "{e}");
    let e = read_idx(dir.join("missing.idx")).unwrap_err().to_string();
    assert!(e.contains("missing.idx"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_header_label_and_errors() {
    let text = b"x0, x1 ,label\r\n0.5,1e-3,2\n\n-4,7,0\n";
    let opts = CsvOptions::default().has_header(true).label_column(Some(2));
    let t = parse_csv(text, "a.csv", &opts).unwrap();
    assert_eq!(t.header, Some(vec!["x0".to_string(), "x1".to_string()]));
    assert_eq!(t.label_name.as_deref(), Some("label"));
    assert_eq!((t.rows, t.cols), (2, 2));
    assert_eq!(t.features, vec![0.5, 1e-3, -4.0, 7.0]);
    assert_eq!(t.labels, Some(vec![2, 0]));
    let cpu = CpuBackend::new();
    assert_eq!(
        t.features_tensor(nabla_core::DType::F64, &cpu)
            .unwrap()
            .shape(),
        &[2, 2]
    );
    assert_eq!(
        t.labels_tensor(&cpu).unwrap().to_vec::<i64>().unwrap(),
        vec![2, 0]
    );
    // Label in the first column, no header, semicolons, gzip file on disk.
    let dir = temp_dir("csv");
    let path = dir.join("b.csv.gz");
    std::fs::write(&path, gzip(b"1;2;3\n0;5;6\n")).unwrap();
    let opts = CsvOptions::default().label_column(Some(0)).delimiter(b';');
    let t = read_csv(&path, &opts).unwrap();
    assert_eq!(
        (t.features, t.labels),
        (vec![2.0, 3.0, 5.0, 6.0], Some(vec![1, 0]))
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let err = |b: &[u8], o: &CsvOptions| parse_csv(b, "e.csv", o).unwrap_err().to_string();
    let plain = CsvOptions::default();
    let e = err(b"1,2\n3,abc\n", &plain);
    assert!(
        e.contains("e.csv") && e.contains("offset 4") && e.contains("row 2, column 1"),
        "{e}"
    );
    let e = err(b"1,2\n3\n", &plain);
    assert!(
        e.contains("offset 4") && e.contains("row 2 has 1 fields"),
        "{e}"
    );
    let e = err(b"1,2.5\n", &CsvOptions::default().label_column(Some(1)));
    assert!(
        e.contains("offset 0") && e.contains("row 1, label column 1"),
        "{e}"
    );
    let e = err(b"1,2\n", &CsvOptions::default().label_column(Some(5)));
    assert!(e.contains("label column 5"), "{e}");
    assert!(parse_csv(b"", "e.csv", &plain).unwrap().rows == 0);
    // Corrupted bytes never panic.
    let good = b"a,b,c\n1,2,3\n4,5,6\n";
    for i in 0..good.len() {
        for v in [0u8, b',', b'\n', 0xff, b'x'] {
            let mut c = good.to_vec();
            c[i] = v;
            let _ = parse_csv(
                &c,
                "c.csv",
                &CsvOptions::default().has_header(true).label_column(Some(2)),
            );
        }
    }
}

/// Encodes values with the given byte-order function.
fn enc<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

#[test]
fn npy_versions_dtypes_and_orders() {
    let check = |bytes: Vec<u8>, shape: Vec<usize>, data: HostData| {
        assert_eq!(
            parse_npy(&bytes, "t.npy").unwrap(),
            HostArray { shape, data }
        );
    };
    let f = [1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0];
    for v in [1, 2, 3] {
        check(
            npy(
                v,
                &npy_header("<f4", false, "(2, 3)"),
                &enc(&f, f32::to_le_bytes),
            ),
            vec![2, 3],
            HostData::F32(f.to_vec()),
        );
    }
    check(
        npy(
            1,
            &npy_header(">f4", false, "(6,)"),
            &enc(&f, f32::to_be_bytes),
        ),
        vec![6],
        HostData::F32(f.to_vec()),
    );
    let d = [1e300f64, -0.5];
    check(
        npy(
            1,
            &npy_header("<f8", false, "(2,)"),
            &enc(&d, f64::to_le_bytes),
        ),
        vec![2],
        HostData::F64(d.to_vec()),
    );
    check(
        npy(
            1,
            &npy_header(">f8", false, "(2,)"),
            &enc(&d, f64::to_be_bytes),
        ),
        vec![2],
        HostData::F64(d.to_vec()),
    );
    let i = [-5i32, 70000];
    check(
        npy(
            1,
            &npy_header("<i4", false, "(2,)"),
            &enc(&i, i32::to_le_bytes),
        ),
        vec![2],
        HostData::I32(i.to_vec()),
    );
    check(
        npy(
            2,
            &npy_header(">i4", false, "(2,)"),
            &enc(&i, i32::to_be_bytes),
        ),
        vec![2],
        HostData::I32(i.to_vec()),
    );
    let l = [-(1i64 << 40), 3];
    check(
        npy(
            1,
            &npy_header("<i8", false, "(1, 2)"),
            &enc(&l, i64::to_le_bytes),
        ),
        vec![1, 2],
        HostData::I64(l.to_vec()),
    );
    check(
        npy(
            1,
            &npy_header(">i8", false, "(2, 1)"),
            &enc(&l, i64::to_be_bytes),
        ),
        vec![2, 1],
        HostData::I64(l.to_vec()),
    );
    check(
        npy(1, &npy_header("|u1", false, "(3,)"), &[0, 7, 255]),
        vec![3],
        HostData::U8(vec![0, 7, 255]),
    );
    check(
        npy(1, &npy_header("|b1", false, "(2,)"), &[1, 0]),
        vec![2],
        HostData::Bool(vec![true, false]),
    );
    check(
        npy(1, &npy_header("|i1", false, "(1,)"), &[0xfe]),
        vec![1],
        HostData::I8(vec![-2]),
    );
    check(
        npy(
            1,
            &npy_header("<f8", false, "()"),
            &enc(&[7.0f64], f64::to_le_bytes),
        ),
        vec![],
        HostData::F64(vec![7.0]),
    );
    // Fortran order: np.asfortranarray([[1, 2, 3], [4, 5, 6]]) stores 1 4 2 5 3 6.
    let col = [1i64, 4, 2, 5, 3, 6];
    check(
        npy(
            1,
            &npy_header("<i8", true, "(2, 3)"),
            &enc(&col, i64::to_le_bytes),
        ),
        vec![2, 3],
        HostData::I64(vec![1, 2, 3, 4, 5, 6]),
    );
    // A [2, 2, 2] Fortran array: element (i, j, k) lives at i + 2 j + 4 k.
    let f3: Vec<u8> = (0..8u8).collect();
    let c3: Vec<u8> = (0..8usize)
        .map(|n| ((n >> 2) + 2 * ((n >> 1) & 1) + 4 * (n & 1)) as u8)
        .collect();
    check(
        npy(1, &npy_header("|u1", true, "(2, 2, 2)"), &f3),
        vec![2, 2, 2],
        HostData::U8(c3),
    );
    // Gzip and files on disk.
    let dir = temp_dir("npy");
    let path = dir.join("a.npy.gz");
    std::fs::write(
        &path,
        gzip(&npy(1, &npy_header("|u1", false, "(2,)"), &[3, 4])),
    )
    .unwrap();
    assert_eq!(read_npy(&path).unwrap().data, HostData::U8(vec![3, 4]));
    let t = read_npy(&path)
        .unwrap()
        .into_tensor(&CpuBackend::new())
        .unwrap();
    assert_eq!(t.shape(), &[2]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn npy_errors_name_file_and_offset() {
    let err = |b: &[u8]| parse_npy(b, "e.npy").unwrap_err().to_string();
    let e = err(b"\x93NUMPX\x01\x00\x00\x00");
    assert!(e.contains("e.npy") && e.contains("offset 0"), "{e}");
    let e = err(&npy(1, &npy_header("<c8", false, "(1,)"), &[0; 8]));
    assert!(
        e.contains("unsupported dtype") && e.contains("offset"),
        "{e}"
    );
    let e = err(&npy(1, &npy_header("<f4", false, "(3,)"), &[0; 8]));
    let data_start = npy(1, &npy_header("<f4", false, "(3,)"), &[]).len();
    assert!(
        e.contains(&format!("offset {data_start}")) && e.contains("needs 12 bytes"),
        "{e}"
    );
    let e = err(&npy(1, &npy_header("|b1", false, "(2,)"), &[1, 2]));
    assert!(
        e.contains(&format!("offset {}", data_start + 1)) && e.contains("boolean"),
        "{e}"
    );
    let e = err(&npy(1, "{'descr': '<f4', 'shape': (1,), }", &[0; 4]));
    assert!(e.contains("fortran_order"), "{e}");
    let mut bad_version = npy(1, &npy_header("<f4", false, "(1,)"), &[0; 4]);
    bad_version[6] = 9;
    let e = err(&bad_version);
    assert!(e.contains("version 9.0") && e.contains("offset 6"), "{e}");
    let good = npy(
        1,
        &npy_header("<i4", true, "(2, 1)"),
        &[1, 0, 0, 0, 2, 0, 0, 0],
    );
    fuzz(&good, "f.npy", |b, n| parse_npy(b, n).map(drop));
    let good3 = npy(
        3,
        &npy_header(">f8", false, "(1,)"),
        &[0x3f, 0xf0, 0, 0, 0, 0, 0, 0],
    );
    fuzz(&good3, "g.npy", |b, n| parse_npy(b, n).map(drop));
}
