//! A few cases big enough to take the kernels' multi-threaded and vectorised paths (above
//! `nabla_cpu::PARALLEL_THRESHOLD` elements), on strided views.

use super::support::*;
use nabla_core::{DType, UnaryOp};
use proptest::prelude::*;

/// A rank-3 input of at least `PARALLEL_THRESHOLD` elements, in any layout.
fn big() -> impl Strategy<Value = Input> {
    (34usize..44, 34usize..44, 30usize..36).prop_flat_map(|(a, b, c)| input(vec![a, b, c], reals()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..config() })]

    #[test]
    fn big_views_agree_with_references(x in big(), y in big(), axis in 0usize..3) {
        prop_assert!(x.shape.iter().product::<usize>() >= nabla_cpu::PARALLEL_THRESHOLD);
        let vals = x.values();
        let t = x.tensor(DType::F64);
        // Unary and binary elementwise on views.
        let e = t.unary(UnaryOp::Exp).unwrap();
        assert_close(&read(&e), &vals.iter().map(|v| v.exp()).collect::<Vec<_>>(), 1e-13, 0.0, "exp");
        let f = x.tensor(DType::F32).unary(UnaryOp::Tanh).unwrap();
        assert_close(&read(&f), &vals.iter().map(|v| (*v as f32 as f64).tanh()).collect::<Vec<_>>(), 2e-6, 2e-6, "tanh f32");
        // Broadcast along one axis: add the first slice of y's (reshaped) data.
        let mut bshape = x.shape.clone();
        bshape[axis] = 1;
        let bn: usize = bshape.iter().product();
        let bvals: Vec<f64> = y.values().into_iter().take(bn).collect();
        let sum = t.add(tensor(&bvals, &bshape, DType::F64)).unwrap();
        let want: Vec<f64> = vals.iter().zip(expand(&bvals, &bshape, &x.shape)).map(|(a, b)| a + b).collect();
        assert_close(&read(&sum), &want, 0.0, 0.0, "broadcast add");
        // A transposing copy.
        let c = t.transpose(0, 2).unwrap().contiguous().unwrap();
        let tshape = [x.shape[2], x.shape[1], x.shape[0]];
        let want: Vec<f64> = (0..vals.len()).map(|i| {
            let o = unravel(i, &tshape);
            vals[ravel(&[o[2], o[1], o[0]], &x.shape)]
        }).collect();
        assert_close(&read(&c), &want, 0.0, 0.0, "transpose copy");
        // Reduction over one axis, and its arg-reduction.
        let s = t.sum(&[axis as isize], false).unwrap();
        let dense = t.contiguous().unwrap().sum(&[axis as isize], false).unwrap();
        assert_close(&read(&s), &read(&dense), 1e-12, 1e-12, "sum view vs contiguous");
        let total: f64 = vals.iter().sum();
        assert_close(&read(&t.sum_all().unwrap()), &[total], 1e-10, 1e-10, "sum_all");
        let mx = t.max(&[axis as isize], true).unwrap();
        let am = t.argmax(axis as isize, true).unwrap();
        let picked = t.gather(axis as isize, &am).unwrap();
        assert_close(&read(&picked), &read(&mx), 0.0, 0.0, "argmax points at the max");
    }

    #[test]
    fn big_matmul_of_transposed_operands(m in 60usize..90, k in 120usize..160, n in 60usize..90, seed in any::<u64>()) {
        let mut g = nabla_core::Generator::new(seed);
        let a = T::randn([k, m], DType::F64, &mut g, &cpu()).unwrap();
        let b = T::randn([n, k], DType::F64, &mut g, &cpu()).unwrap();
        let got = a.t().unwrap().matmul(&b.t().unwrap()).unwrap();
        let (av, bv) = (read(&a), read(&b));
        let mut want = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|p| av[p * m + i] * bv[j * k + p]).sum();
            }
        }
        assert_close(&read(&got), &want, 1e-12, 1e-11, "f64 matmul of transposes");
        let got32 = a.cast(DType::F32).unwrap().t().unwrap().matmul(&b.cast(DType::F32).unwrap().t().unwrap()).unwrap();
        assert_close(&read(&got32), &want, 1e-4, 1e-4, "f32 matmul of transposes");
    }
}
