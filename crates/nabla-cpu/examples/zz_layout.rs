use faer::{Accum, MatMut, MatRef, Par};
use std::time::Instant;
fn mr(d: &[f32], r: usize, c: usize, rs: isize, cs: isize) -> MatRef<'_, f32> {
    unsafe { MatRef::from_raw_parts(d.as_ptr(), r, c, rs, cs) }
}
fn mm(d: &mut [f32], r: usize, c: usize, rs: isize, cs: isize) -> MatMut<'_, f32> {
    unsafe { MatMut::from_raw_parts_mut(d.as_mut_ptr(), r, c, rs, cs) }
}
fn time(name: &str, fl: f64, mut f: impl FnMut()) {
    for _ in 0..50 {
        f();
    }
    let mut ts = vec![];
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..200 {
            f();
        }
        ts.push(t.elapsed().as_secs_f64() / 200.0);
    }
    ts.sort_by(f64::total_cmp);
    println!(
        "{name:40} {:7.2} us {:6.1} GFLOP/s (single thread)",
        ts[3] * 1e6,
        fl / ts[3] / 1e9
    );
}
fn main() {
    let (o, k, p) = (64usize, 288usize, 121usize);
    let w: Vec<f32> = (0..o * k).map(|i| (i % 7) as f32).collect();
    let cols: Vec<f32> = (0..k * p).map(|i| (i % 5) as f32).collect();
    let mut dst = vec![0f32; o * p];
    let fl = 2.0 * (o * k * p) as f64;
    // fwd: dst (o x p) = W (o x k) cols (k x p)
    time("fwd A: cols [k,p]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dst, o, p, p as isize, 1),
            Accum::Replace,
            mr(&w, o, k, k as isize, 1),
            mr(&cols, k, p, p as isize, 1),
            1.0,
            Par::Seq,
        )
    });
    time("fwd B: cols [p,k]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dst, o, p, p as isize, 1),
            Accum::Replace,
            mr(&w, o, k, k as isize, 1),
            mr(&cols, k, p, 1, k as isize),
            1.0,
            Par::Seq,
        )
    });
    time("fwd C: W^T stored [k,o], cols[k,p]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dst, o, p, p as isize, 1),
            Accum::Replace,
            mr(&w, o, k, 1, o as isize),
            mr(&cols, k, p, p as isize, 1),
            1.0,
            Par::Seq,
        )
    });
    time("fwd D: W^T [k,o], cols [p,k]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dst, o, p, p as isize, 1),
            Accum::Replace,
            mr(&w, o, k, 1, o as isize),
            mr(&cols, k, p, 1, k as isize),
            1.0,
            Par::Seq,
        )
    });
    // dst transposed storage [p, o]
    time("fwd E: dst [p,o], cols [k,p]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dst, o, p, 1, o as isize),
            Accum::Replace,
            mr(&w, o, k, k as isize, 1),
            mr(&cols, k, p, p as isize, 1),
            1.0,
            Par::Seq,
        )
    });
    time("fwd F: dst [p,o], cols [p,k]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dst, o, p, 1, o as isize),
            Accum::Replace,
            mr(&w, o, k, k as isize, 1),
            mr(&cols, k, p, 1, k as isize),
            1.0,
            Par::Seq,
        )
    });
    // input grad: cols (k x p) = W^T (k x o) dy (o x p)
    let mut c2 = vec![0f32; k * p];
    time("dx A: cols[k,p] = W^T dy", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut c2, k, p, p as isize, 1),
            Accum::Replace,
            mr(&w, k, o, 1, k as isize),
            mr(&dst, o, p, p as isize, 1),
            1.0,
            Par::Seq,
        )
    });
    time("dx B: cols[p,k] = W^T dy", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut c2, k, p, 1, k as isize),
            Accum::Replace,
            mr(&w, k, o, 1, k as isize),
            mr(&dst, o, p, p as isize, 1),
            1.0,
            Par::Seq,
        )
    });
    // weight grad: dW (o x k) += dy (o x p) cols^T (p x k)
    let mut dw = vec![0f32; o * k];
    time("dw A: cols [k,p]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dw, o, k, k as isize, 1),
            Accum::Add,
            mr(&dst, o, p, p as isize, 1),
            mr(&cols, p, k, 1, p as isize),
            1.0,
            Par::Seq,
        )
    });
    time("dw B: cols [p,k]", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dw, o, k, k as isize, 1),
            Accum::Add,
            mr(&dst, o, p, p as isize, 1),
            mr(&cols, p, k, k as isize, 1),
            1.0,
            Par::Seq,
        )
    });
    // batched weight grad: 8 images in one product: dy' [o, 8p], cols' [k, 8p]
    let b = 8;
    let dyb: Vec<f32> = (0..o * p * b).map(|i| (i % 3) as f32).collect();
    let colsb: Vec<f32> = (0..k * p * b).map(|i| (i % 5) as f32).collect();
    time("dw batched 8, cols [k,8p] (per image)", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dw, o, k, k as isize, 1),
            Accum::Add,
            mr(&dyb, o, p * b, (p * b) as isize, 1),
            mr(&colsb, p * b, k, 1, (p * b) as isize),
            1.0 / b as f32,
            Par::Seq,
        )
    });
    time("dw batched 8, cols [8p,k] (per image)", fl, || {
        faer::linalg::matmul::matmul(
            mm(&mut dw, o, k, k as isize, 1),
            Accum::Add,
            mr(&dyb, o, p * b, (p * b) as isize, 1),
            mr(&colsb, p * b, k, k as isize, 1),
            1.0 / b as f32,
            Par::Seq,
        )
    });
}
