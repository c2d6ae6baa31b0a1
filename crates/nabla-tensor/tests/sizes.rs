//! Sizes that come from input: creation functions, broadcasts and element counts that overflow or
//! exceed the allocation limit are errors naming the op, the shape and the limit, never an abort, a
//! panic or a silently empty tensor (issue "Hardening", creation functions).

use nabla_core::{DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;

type T = Tensor<CpuBackend>;

fn message(r: Result<T>) -> String {
    match r {
        Ok(t) => panic!("accepted a tensor of shape {:?}", t.shape()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn huge_creations_are_errors_naming_the_op_and_the_limit() {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(0);
    let cases = [
        (
            "full",
            message(T::zeros([1_000_000_000_000usize], DType::F32, &cpu)),
        ),
        ("full", message(T::ones([usize::MAX], DType::F32, &cpu))),
        (
            "random",
            message(T::randn([1_000_000, 1_000_000], DType::F32, &mut rng, &cpu)),
        ),
        ("eye", message(T::eye(10_000_000, DType::F32, &cpu))),
        (
            "linspace",
            message(T::linspace(0.0, 1.0, usize::MAX / 2, DType::F32, &cpu)),
        ),
    ];
    for (op, err) in cases {
        assert!(err.starts_with(op), "{err}");
        assert!(err.contains("allocation limit"), "{err}");
    }
}

#[test]
fn element_counts_that_overflow_are_errors_not_empty_tensors() -> Result<()> {
    let cpu = CpuBackend::new();
    let overflowing = [1usize << 32, 1 << 32, 2];
    let err = message(T::zeros(overflowing, DType::F32, &cpu));
    assert!(
        err.starts_with("full") && err.contains("too large"),
        "{err}"
    );
    let one = T::ones([1, 1, 1], DType::F32, &cpu)?;
    let err = message(one.broadcast_to(overflowing));
    assert!(err.starts_with("broadcast_to"), "{err}");
    // A zero dimension still makes an empty tensor, however large the others.
    assert_eq!(T::zeros([usize::MAX, 0], DType::F32, &cpu)?.numel(), 0);
    Ok(())
}

#[test]
fn a_broadcast_too_large_to_compute_is_refused_before_allocating() -> Result<()> {
    let cpu = CpuBackend::new();
    let col = T::ones([1 << 20, 1], DType::F64, &cpu)?;
    let row = T::ones([1, 1 << 24], DType::F64, &cpu)?;
    // 2^44 elements of f64 (128 TiB).
    let err = message(col.add(&row));
    assert!(
        err.starts_with("add") && err.contains("allocation limit"),
        "{err}"
    );
    Ok(())
}

#[test]
fn the_limit_is_configurable_for_a_scope() -> Result<()> {
    let cpu = CpuBackend::new();
    let (small, large) = nabla_core::with_allocation_limit(1024, || {
        (
            T::zeros([256], DType::F32, &cpu).map(|t| t.numel()),
            T::zeros([257], DType::F32, &cpu).map(|t| t.numel()),
        )
    });
    assert_eq!(small?, 256);
    let err = large.unwrap_err().to_string();
    assert!(
        err.contains("1028 bytes") && err.contains("1024 bytes"),
        "{err}"
    );
    // Outside the scope the process's limit applies again.
    assert!(T::zeros([257], DType::F32, &cpu).is_ok());
    Ok(())
}

#[test]
fn ops_whose_output_outgrows_their_inputs_check_its_size_first() -> Result<()> {
    let cpu = CpuBackend::new();
    let limit = 1 << 20; // 1 MiB: every output below is larger, every input smaller
    let big = 1 << 10;
    let col = T::ones([big, 1], DType::F32, &cpu)?;
    let row = T::ones([1, big], DType::F32, &cpu)?;
    let idx = T::from_vec(vec![0i64; big * big / 2], [big * big / 2], &cpu)?;
    let errors = nabla_core::with_allocation_limit(limit, || -> Result<Vec<String>> {
        // Views cost nothing; computing on a view as large as the limit is refused.
        let wide = col.broadcast_to([big, big])?;
        let cond = T::ones([big, 1], DType::Bool, &cpu)?;
        let x = T::ones([big, 1, 1, 1], DType::F32, &cpu)?;
        let w = T::ones([1, 1, 1, 1], DType::F32, &cpu)?;
        let params = nabla_core::Conv2dParams {
            padding: (big / 2, big / 2),
            ..Default::default()
        };
        Ok(vec![
            message(col.matmul(&row)),
            message(T::zeros([0, big], DType::F32, &cpu)?.t()?.matmul(&T::zeros(
                [0, big],
                DType::F32,
                &cpu,
            )?)),
            message(cond.where_(&row, 0.0f32)),
            message(col.pad(&[(0, 0), (0, big)], 0.0f32)),
            message(col.pad(&[(0, 0), (usize::MAX, 1)], 0.0f32)),
            message(T::cat(&vec![&row; 300], 0)),
            message(wide.exp()),
            message(wide.contiguous()),
            message(idx.one_hot(8, DType::F32)),
            message(row.index_select(1, &idx)),
            message(x.conv2d(&w, &params)),
        ])
    })?;
    for e in &errors {
        assert!(
            e.contains("allocation limit") || e.contains("overflow"),
            "{errors:#?}"
        );
        assert_eq!(e.lines().count(), 1);
    }
    Ok(())
}
