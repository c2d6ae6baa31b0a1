//! Sizes that come from input: creation functions, broadcasts and element counts that overflow or
//! exceed the allocation limit are errors naming the op, the shape and the limit, never an abort, a
//! panic or a silently empty tensor (issue "Hardening", creation functions); sizes computed from
//! arguments (convolution and pooling windows, padding, ranges, reshapes, variance counts) never wrap,
//! and give PyTorch's values at the edges (issue 48, defect 10).

use nabla_core::{Conv2dParams, DType, Generator, Pool2dParams, Primitive, Result};
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
        (
            "full",
            message(T::ones([isize::MAX as usize], DType::F32, &cpu)),
        ),
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
    // A zero dimension still makes an empty tensor, however large the others up to isize::MAX (as
    // PyTorch's sizes go up to i64::MAX); a larger dimension is refused even there.
    let empty = T::zeros([isize::MAX as usize, 0, 1 << 40], DType::F32, &cpu)?;
    assert_eq!(empty.numel(), 0);
    let err = message(T::zeros([usize::MAX, 0], DType::F32, &cpu));
    assert!(
        err.starts_with("full") && err.contains("isize::MAX"),
        "{err}"
    );
    let err = message(T::from_vec(Vec::<f32>::new(), [0, usize::MAX], &cpu));
    assert!(
        err.starts_with("from_host") && err.contains("isize::MAX"),
        "{err}"
    );
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

#[test]
fn window_sizes_that_wrap_are_errors_naming_the_op() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = T::ones([1, 1, 1, 1], DType::F32, &cpu)?;
    let x3 = T::ones([1, 1, 3, 3], DType::F32, &cpu)?;
    let w = T::ones([1, 1, 1, 1], DType::F32, &cpu)?;
    // 3 + 2 (usize::MAX / 2) wraps to 1: the output was [1, 1, 1, 1].
    let half = usize::MAX / 2;
    let wrapping = Conv2dParams {
        padding: (half, half),
        ..Default::default()
    };
    let err = message(x3.conv2d(&w, &wrapping));
    assert!(
        err.starts_with("conv2d")
            && err.contains("padded input size")
            && err.contains("usize::MAX"),
        "{err}"
    );
    // Without wrapping the output is simply too large.
    let quarter = Conv2dParams {
        padding: (usize::MAX / 4, usize::MAX / 4),
        ..Default::default()
    };
    let err = message(x.conv2d(&w, &quarter));
    assert!(
        err.starts_with("conv2d") && err.contains("too large"),
        "{err}"
    );
    let dilated = Conv2dParams {
        dilation: (usize::MAX, 1),
        ..Default::default()
    };
    let wide = T::ones([1, 1, 3, 1], DType::F32, &cpu)?;
    let err = message(x.conv2d(&wide, &dilated));
    assert!(err.contains("dilated kernel size"), "{err}");
    let groups = Conv2dParams {
        groups: usize::MAX,
        ..Default::default()
    };
    let err =
        message(x.conv2d_input_grad(&T::ones([1, 2, 1, 1], DType::F32, &cpu)?, (1, 1), &groups));
    assert!(err.starts_with("conv2d_input_grad"), "{err}");
    // Max pooling with a window and padding whose padded input wraps.
    let pool = Pool2dParams {
        padding: (half + 1, 0),
        ..Pool2dParams::square(usize::MAX)
    };
    let err = x.max_pool2d(&pool).map(|_| ()).unwrap_err().to_string();
    assert!(
        err.starts_with("max_pool2d") && err.contains("usize::MAX"),
        "{err}"
    );
    // The shape rules of the primitives check the same sums.
    let (xs, ws): (&[usize], &[usize]) = (&[1, 1, 3, 3], &[1, 1, 1, 1]);
    let err = Primitive::Conv2d(wrapping)
        .output_specs(&[(DType::F32, xs), (DType::F32, ws)])
        .unwrap_err();
    assert!(err.to_string().contains("usize::MAX"), "{err}");
    let pad = Primitive::Pad {
        pads: vec![(usize::MAX, 1)],
        value: 0.0.into(),
    };
    let err = pad.output_specs(&[(DType::F32, &[2])]).unwrap_err();
    assert!(
        err.to_string().starts_with("pad") && err.to_string().contains("overflows"),
        "{err}"
    );
    let concat = Primitive::Concat { axis: 0 };
    let huge: &[usize] = &[usize::MAX];
    let err = concat
        .output_specs(&[(DType::F32, huge), (DType::F32, huge)])
        .unwrap_err();
    assert!(err.to_string().contains("overflows"), "{err}");
    Ok(())
}

#[test]
fn integer_ranges_count_exactly_next_to_the_i64_limits() -> Result<()> {
    let cpu = CpuBackend::new();
    let ints = |s: i64, e: i64, st: i64| -> Result<Vec<i64>> {
        T::arange(s, e, st, DType::I64, &cpu)?.to_vec::<i64>()
    };
    // As torch.arange and numpy.arange: in f64 both ends round to 2^63 and the range was empty.
    assert_eq!(
        ints(i64::MAX - 2, i64::MAX, 1)?,
        vec![i64::MAX - 2, i64::MAX - 1]
    );
    assert_eq!(
        ints(i64::MAX, i64::MAX - 3, -1)?,
        vec![i64::MAX, i64::MAX - 1, i64::MAX - 2]
    );
    assert_eq!(
        ints(i64::MIN, i64::MIN + 5, 2)?,
        vec![i64::MIN, i64::MIN + 2, i64::MIN + 4]
    );
    // A step whose multiples pass the i64 range: (MAX - MIN) / MAX rounds up to 3 values.
    assert_eq!(
        ints(i64::MIN, i64::MAX, i64::MAX)?,
        vec![i64::MIN, -1, i64::MAX - 1]
    );
    assert_eq!(ints(0, 10, 3)?, vec![0, 3, 6, 9]);
    assert_eq!(ints(10, 0, -3)?, vec![10, 7, 4, 1]);
    assert!(ints(0, 10, -1)?.is_empty());
    let err = message(T::arange(i64::MIN, i64::MAX, 1, DType::I64, &cpu));
    assert!(
        err.starts_with("arange") && err.contains("too many"),
        "{err}"
    );
    Ok(())
}

#[test]
fn variance_past_its_degrees_of_freedom_is_inf_or_nan_as_in_pytorch() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = T::from_vec(vec![1.0f64, 2.0, 3.0], [3], &cpu)?;
    let var = |t: &T, c: usize| -> Result<f64> { t.variance(&[], false, c)?.item::<f64>() };
    assert_eq!(var(&x, 1)?, 1.0);
    // torch.var(x, correction=3) and correction=5: inf (the sum 2 over max(3 - c, 0) = 0), not -1.
    assert_eq!(var(&x, 3)?, f64::INFINITY);
    assert_eq!(var(&x, 5)?, f64::INFINITY);
    assert_eq!(x.std_dev(&[], false, 5)?.item::<f64>()?, f64::INFINITY);
    // Equal values: 0 / 0.
    let same = T::from_vec(vec![4.0f64; 2], [2], &cpu)?;
    assert!(var(&same, 4)?.is_nan());
    // No elements: NaN for every correction (it was -0.0 for correction 1).
    let empty = T::zeros([0], DType::F64, &cpu)?;
    for c in [0, 1, 2] {
        assert!(var(&empty, c)?.is_nan(), "correction {c}");
    }
    let rows = T::zeros([2, 0], DType::F32, &cpu)?.variance(&[1], false, 1)?;
    assert!(rows.to_vec::<f32>()?.iter().all(|v| v.is_nan()));
    Ok(())
}

#[test]
fn reshape_reads_huge_dimensions_as_sizes_not_as_minus_one() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = T::arange(0, 6, 1, DType::I64, &cpu)?;
    // usize::MAX was read as -1 and the shape inferred as [3, 2].
    let err = message(x.reshape([usize::MAX, 2]));
    assert!(
        err.starts_with("reshape") && err.contains("[18446744073709551615, 2]"),
        "{err}"
    );
    let err = message(x.reshape([usize::MAX / 2 + 1, 2]));
    assert!(err.contains("isize::MAX"), "{err}");
    let err = message(x.reshape([1usize << 62, 4]));
    assert!(err.contains("overflows"), "{err}");
    // Also in an empty tensor, where the product is 0.
    let empty = T::zeros([0], DType::F32, &cpu)?;
    assert!(empty.reshape([usize::MAX, 0]).is_err());
    assert_eq!(
        empty.reshape([isize::MAX as usize, 0])?.shape(),
        &[isize::MAX as usize, 0]
    );
    assert_eq!(x.reshape([-1, 2])?.shape(), &[3, 2]);
    Ok(())
}
