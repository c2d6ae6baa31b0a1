//! `MemoryTracked<CpuBackend>`: kernels give the CPU's results, and the counters follow the buffers.

use nabla_core::{
    Backend, BinaryOp, DType, HostData, Layout, MemoryStats, MemoryTracked, ReduceOp, Scalar,
    UnaryOp,
};
use nabla_cpu::CpuBackend;

fn tracked() -> MemoryTracked<CpuBackend> {
    MemoryTracked::new(CpuBackend::new())
}

#[test]
fn starts_at_zero_and_delegates_identity() {
    let m = tracked();
    assert_eq!(m.stats(), MemoryStats::default());
    assert_eq!(m.name(), "cpu");
    assert_eq!(m.device(), CpuBackend::new().device());
}

#[test]
fn counts_allocations_views_and_frees() {
    let m = tracked();
    let a = m.upload(HostData::F32(vec![1.0; 1000])).unwrap();
    assert_eq!(m.storage_len(&a), 1000);
    assert_eq!(m.storage_dtype(&a), DType::F32);
    assert_eq!(a.bytes(), 4000);
    assert_eq!(
        m.stats(),
        MemoryStats {
            live_bytes: 4000,
            peak_bytes: 4000,
            allocations: 1,
            live_buffers: 1
        }
    );

    // A second handle (what a view holds) is not a new buffer.
    let view = a.clone();
    assert_eq!(view, a);
    assert_eq!(m.stats().live_bytes, 4000);

    // f64 costs 8 bytes an element, bool 1.
    let b = m.full(500, Scalar::from(2.0), DType::F64).unwrap();
    let c = m.full(10, Scalar::from(true), DType::Bool).unwrap();
    assert_ne!(b, a);
    assert_eq!(m.stats().live_bytes, 4000 + 4000 + 10);
    assert_eq!(m.stats().live_buffers, 3);

    // The bytes come back with the last handle only.
    drop(a);
    assert_eq!(m.stats().live_bytes, 8010);
    drop(view);
    assert_eq!(m.stats().live_bytes, 4010);
    drop((b, c));
    let s = m.stats();
    assert_eq!(
        (s.live_bytes, s.peak_bytes, s.allocations, s.live_buffers),
        (0, 8010, 3, 0)
    );
}

#[test]
fn kernels_compute_the_cpu_results_and_are_counted() {
    let m = tracked();
    let cpu = CpuBackend::new();
    let l = Layout::contiguous([2, 3]);
    let x = m
        .upload(HostData::F32(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
        .unwrap();
    let e = m.unary(UnaryOp::Exp, &x, &l).unwrap();
    let s = m.binary(BinaryOp::Add, &x, &l, &e, &l).unwrap();
    let r = m.reduce(ReduceOp::Sum, &s, &l, &[1]).unwrap();
    let t = l.permute(&[1, 0]).unwrap();
    let xt = m.copy(&x, &t).unwrap();

    let cx = cpu
        .upload(HostData::F32(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
        .unwrap();
    let ce = cpu.unary(UnaryOp::Exp, &cx, &l).unwrap();
    let cs = cpu.binary(BinaryOp::Add, &cx, &l, &ce, &l).unwrap();
    let cr = cpu.reduce(ReduceOp::Sum, &cs, &l, &[1]).unwrap();
    let cxt = cpu.copy(&cx, &t).unwrap();
    let rl = Layout::contiguous([2, 1]);
    assert_eq!(m.read(&r, &rl).unwrap(), cpu.read(&cr, &rl).unwrap());
    let tl = Layout::contiguous([3, 2]);
    assert_eq!(m.read(&xt, &tl).unwrap(), cpu.read(&cxt, &tl).unwrap());
    assert_eq!(r.inner().host(), cr.host());

    // x, e, s (6 f32 each), r (2 f32), xt (6 f32); reading back allocates nothing on the device.
    let st = m.stats();
    assert_eq!(st.live_bytes, (6 + 6 + 6 + 2 + 6) * 4);
    assert_eq!(st.allocations, 5);

    // Sort returns two buffers: values (f32) and positions (i64).
    let (v, i) = m.sort(&x, &l, 1, true).unwrap();
    assert_eq!(m.stats().live_bytes, (6 + 6 + 6 + 2 + 6 + 6) * 4 + 6 * 8);
    drop((x, e, s, r, xt, v, i));
    assert_eq!(m.stats().live_bytes, 0);
    assert_eq!(m.stats().live_buffers, 0);
}

#[test]
fn reset_peak_starts_a_new_measurement() {
    let m = tracked();
    let keep = m.full(100, Scalar::from(0.0), DType::F32).unwrap();
    {
        let _big = m.full(10_000, Scalar::from(0.0), DType::F32).unwrap();
    }
    assert_eq!(m.stats().peak_bytes, 40_400);
    m.reset_peak();
    assert_eq!(m.stats().peak_bytes, 400);
    let _tmp = m.full(50, Scalar::from(0.0), DType::F32).unwrap();
    assert_eq!(m.stats().peak_bytes, 600);
    drop(keep);
}

#[test]
fn clones_share_counters_and_instances_do_not() {
    let m = tracked();
    let other = tracked();
    let m2 = m.clone();
    let _a = m2.full(8, Scalar::from(1.0), DType::F64).unwrap();
    assert_eq!(m.stats().live_bytes, 64);
    assert_eq!(other.stats(), MemoryStats::default());
}

#[test]
fn buffers_outliving_the_backend_still_give_their_bytes_back() {
    let m = tracked();
    let probe = m.clone();
    let a = m.full(4, Scalar::from(1.0), DType::F32).unwrap();
    drop(m);
    assert_eq!(probe.stats().live_bytes, 16);
    drop(a);
    assert_eq!(probe.stats().live_bytes, 0);
}

#[test]
fn buffers_made_on_other_threads_are_counted() {
    let m = tracked();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let m = m.clone();
            s.spawn(move || {
                for _ in 0..100 {
                    let _t = m.full(25, Scalar::from(1.0), DType::F32).unwrap();
                }
            });
        }
    });
    let st = m.stats();
    assert_eq!((st.live_bytes, st.allocations), (0, 400));
    assert!(st.peak_bytes >= 100 && st.peak_bytes <= 400);
}

#[test]
fn fused_results_written_in_place_inherit_their_donors_records() {
    use nabla_core::FusedBuilder;
    let m = tracked();
    let l = Layout::contiguous([4]);
    // (a + b, a * b): the sum may reuse a's buffer, the product b's.
    let mut k = FusedBuilder::new(DType::F32);
    let (a, b) = (k.input(), k.input());
    let (sum, product) = (k.add(a, b), k.mul(a, b));
    let kernel = k.finish_many(&[sum, product]).unwrap();
    let up = |v: [f32; 4]| m.upload(HostData::F32(v.to_vec())).unwrap();
    let (a, b) = (up([1.0, 2.0, 3.0, 4.0]), up([2.0; 4]));
    let before = m.stats();
    let out = m
        .fused_many(&kernel, vec![(a, &l), (b, &l)], &[4], &[Some(0), Some(1)])
        .unwrap();
    assert_eq!(
        m.read(&out[0], &l).unwrap(),
        HostData::F32(vec![3.0, 4.0, 5.0, 6.0])
    );
    assert_eq!(
        m.read(&out[1], &l).unwrap(),
        HostData::F32(vec![2.0, 4.0, 6.0, 8.0])
    );
    // Both results took over their donors' buffers: nothing new was allocated.
    let after = m.stats();
    assert_eq!(after.allocations, before.allocations);
    assert_eq!(after.live_bytes, before.live_bytes);
    // Without donations, two new buffers are counted and the inputs are freed.
    let (a, b) = (up([1.0; 4]), up([1.0; 4]));
    let before = m.stats();
    let out2 = m
        .fused_many(&kernel, vec![(a, &l), (b, &l)], &[4], &[])
        .unwrap();
    let after = m.stats();
    assert_eq!(after.allocations, before.allocations + 2);
    assert_eq!(after.live_bytes, before.live_bytes);
    // A single-result call of a kernel with two results is an error.
    let c = up([1.0; 4]);
    assert!(
        m.fused(&kernel, vec![(c.clone(), &l), (c, &l)], &[4], None)
            .is_err()
    );
    drop((out, out2));
    assert_eq!(m.stats().live_bytes, 0);
}
