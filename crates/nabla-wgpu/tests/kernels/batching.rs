//! Batched submission: dispatches share one parameter buffer and one compute pass per batch.

use crate::common::{assert_close, both, random, with_gpu};
use nabla_core::{Backend, BinaryOp, DType, Layout};

/// A chain of dependent adds, each reading a different window of one buffer (so each dispatch has
/// its own view offset among its parameters), across several batches and with reads between them,
/// gives the CPU's sums.
#[test]
fn dependent_dispatches_with_distinct_parameters_span_batches() {
    with_gpu(|g, c| {
        let (n, steps) = (33, 700);
        let (gsrc, csrc) = both(g, c, &random(DType::F32, n + steps, 9));
        let (mut gx, mut cx) = both(g, c, &random(DType::F32, n, 10));
        let l = Layout::contiguous([n]);
        for k in 0..steps {
            let window = Layout::contiguous([n + steps]).slice(0, k, n, 1).unwrap();
            gx = g.binary(BinaryOp::Add, &gx, &l, &gsrc, &window).unwrap();
            cx = c.binary(BinaryOp::Add, &cx, &l, &csrc, &window).unwrap();
            if k % 250 == 249 {
                // A read submits the open batch mid-way.
                assert_close(
                    &format!("after {} adds", k + 1),
                    &g.read(&gx, &l).unwrap(),
                    &c.read(&cx, &l).unwrap(),
                    1e-5,
                );
            }
        }
        assert_close(
            "after every add",
            &g.read(&gx, &l).unwrap(),
            &c.read(&cx, &l).unwrap(),
            1e-5,
        );
    });
}
