//! Worked examples of the whole `Tensor` API on the CPU backend: each test reads as a short tutorial and
//! checks the exact values.

use nabla_core::{Conv2dParams, DType, Generator, Result, Scalar};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Indexer, PrintOptions, Tensor, s};

type T = Tensor<CpuBackend>;

fn cpu() -> CpuBackend {
    CpuBackend::new()
}

#[test]
fn constructors() -> Result<()> {
    let cpu = cpu();
    let x = T::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &cpu)?;
    assert_eq!(
        (x.shape(), x.rank(), x.numel(), x.dtype()),
        (&[2usize, 3][..], 2, 6, DType::F32)
    );
    assert_eq!(x.dim(-1)?, 3);
    assert_eq!(x.dims().dims(), &[2, 3]);
    assert!(x.is_contiguous());

    let s = T::scalar(2.5, DType::F64, &cpu)?;
    assert_eq!((s.rank(), s.item::<f64>()?), (0, 2.5));
    assert_eq!(T::scalar(3, DType::I32, &cpu)?.to_scalar()?, Scalar::I64(3));

    assert_eq!(
        T::zeros([2], DType::I64, &cpu)?.to_vec::<i64>()?,
        vec![0, 0]
    );
    assert_eq!(
        T::ones([3], DType::U8, &cpu)?.to_vec::<u8>()?,
        vec![1, 1, 1]
    );
    assert_eq!(
        T::full([2], true, DType::Bool, &cpu)?.to_vec::<bool>()?,
        vec![true, true]
    );
    assert_eq!(
        T::full([2], -1.5, DType::F64, &cpu)?.to_vec::<f64>()?,
        vec![-1.5, -1.5]
    );
    assert_eq!(x.zeros_like()?.to_vec::<f32>()?, vec![0.0; 6]);
    assert_eq!(x.ones_like()?.shape(), &[2, 3]);
    assert_eq!(x.full_like(7)?.to_vec::<f32>()?, vec![7.0; 6]);

    assert_eq!(
        T::arange(0, 5, 1, DType::I64, &cpu)?.to_vec::<i64>()?,
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        T::arange(10, 0, -3, DType::I32, &cpu)?.to_vec::<i32>()?,
        vec![10, 7, 4, 1]
    );
    assert_eq!(
        T::arange(0.0, 1.0, 0.25, DType::F32, &cpu)?.to_vec::<f32>()?,
        vec![0.0, 0.25, 0.5, 0.75]
    );
    assert_eq!(T::arange(0, 0, 1, DType::F32, &cpu)?.shape(), &[0]);
    assert_eq!(
        T::linspace(0.0, 1.0, 5, DType::F64, &cpu)?.to_vec::<f64>()?,
        vec![0.0, 0.25, 0.5, 0.75, 1.0]
    );
    assert_eq!(
        T::linspace(2.0, 3.0, 1, DType::F64, &cpu)?.to_vec::<f64>()?,
        vec![2.0]
    );
    assert_eq!(T::linspace(2.0, 3.0, 0, DType::F64, &cpu)?.shape(), &[0]);
    assert_eq!(
        T::eye(3, DType::I64, &cpu)?.to_vec2::<i64>()?,
        vec![vec![1, 0, 0], vec![0, 1, 0], vec![0, 0, 1]]
    );
    Ok(())
}

#[test]
fn seeded_random_tensors() -> Result<()> {
    let cpu = cpu();
    let (mut g1, mut g2) = (Generator::new(7), Generator::new(7));
    let a = T::randn([4, 4], DType::F32, &mut g1, &cpu)?;
    let b = T::randn([4, 4], DType::F32, &mut g2, &cpu)?;
    assert_eq!(
        a.to_vec::<f32>()?,
        b.to_vec::<f32>()?,
        "same seed, same numbers"
    );
    let c = T::randn([4, 4], DType::F32, &mut g1, &cpu)?;
    assert_ne!(
        a.to_vec::<f32>()?,
        c.to_vec::<f32>()?,
        "the generator moves on"
    );
    let u = T::uniform([1000], -2.0, 3.0, DType::F64, &mut g1, &cpu)?;
    assert!(u.to_vec::<f64>()?.iter().all(|v| (-2.0..3.0).contains(v)));
    let coin = T::bernoulli([1000], 0.25, DType::Bool, &mut g1, &cpu)?;
    let heads = coin.to_vec::<bool>()?.iter().filter(|&&b| b).count();
    assert!(
        (180..320).contains(&heads),
        "{heads} heads of 1000 at p = 0.25"
    );
    Ok(())
}

#[test]
fn reading_back_and_moving_between_backends() -> Result<()> {
    let cpu = cpu();
    let x = T::from_vec(vec![1i64, 2, 3, 4], [2, 2], &cpu)?;
    assert_eq!(x.to_vec2::<i64>()?, vec![vec![1, 2], vec![3, 4]]);
    assert_eq!(x.to_host()?.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    let y = x.t()?.to_backend(&CpuBackend::new())?;
    assert_eq!(y.to_vec::<i64>()?, vec![1, 3, 2, 4]);
    assert!(y.is_contiguous() && !y.shares_storage_with(&x));
    let h = T::from_vec(vec![0.5f32, 1.5], [2], &cpu)?.cast(DType::F16)?;
    assert_eq!(h.cast(DType::F32)?.to_vec::<f32>()?, vec![0.5, 1.5]);
    Ok(())
}

#[test]
fn operators_on_references_values_and_numbers() -> Result<()> {
    let cpu = cpu();
    let a = T::from_vec(vec![1.0f64, 2.0, 3.0], [3], &cpu)?;
    let b = T::from_vec(vec![4.0f64, 5.0, 6.0], [3], &cpu)?;
    assert_eq!((&a + &b)?.to_vec::<f64>()?, vec![5.0, 7.0, 9.0]);
    assert_eq!((&b - &a)?.to_vec::<f64>()?, vec![3.0, 3.0, 3.0]);
    assert_eq!((&a * &b)?.to_vec::<f64>()?, vec![4.0, 10.0, 18.0]);
    assert_eq!((&b / &a)?.to_vec::<f64>()?, vec![4.0, 2.5, 2.0]);
    assert_eq!((&b % &a)?.to_vec::<f64>()?, vec![0.0, 1.0, 0.0]);
    assert_eq!(
        (a.clone() + b.clone())?.to_vec::<f64>()?,
        vec![5.0, 7.0, 9.0]
    );
    assert_eq!((a.clone() * &b)?.to_vec::<f64>()?, vec![4.0, 10.0, 18.0]);
    assert_eq!((&a - b.clone())?.to_vec::<f64>()?, vec![-3.0, -3.0, -3.0]);
    // A number on either side adopts the tensor's dtype.
    assert_eq!((&a * 2.0)?.to_vec::<f64>()?, vec![2.0, 4.0, 6.0]);
    assert_eq!((&a + 1)?.to_vec::<f64>()?, vec![2.0, 3.0, 4.0]);
    assert_eq!((1.0 - &a)?.to_vec::<f64>()?, vec![0.0, -1.0, -2.0]);
    assert_eq!((6.0 / &a)?.to_vec::<f64>()?, vec![6.0, 3.0, 2.0]);
    assert_eq!((2 * a.clone())?.to_vec::<f64>()?, vec![2.0, 4.0, 6.0]);
    assert_eq!((-&a)?.to_vec::<f64>()?, vec![-1.0, -2.0, -3.0]);
    assert_eq!((-a.clone())?.to_vec::<f64>()?, vec![-1.0, -2.0, -3.0]);
    // Integer semantics follow NumPy: floor division and a remainder with the divisor's sign.
    let i = T::from_vec(vec![-7i64, 7, -7, 7], [4], &cpu)?;
    let d = T::from_vec(vec![2i64, -2, -2, 2], [4], &cpu)?;
    assert_eq!((&i / &d)?.to_vec::<i64>()?, vec![-4, -4, 3, 3]);
    assert_eq!((&i % &d)?.to_vec::<i64>()?, vec![1, -1, -1, 1]);
    assert_eq!((10 - &i)?.to_vec::<i64>()?, vec![17, 3, 17, 3]);
    // Broadcasting: [2, 1] with [3] gives [2, 3].
    let col = T::from_vec(vec![10.0f32, 20.0], [2, 1], &cpu)?;
    let row = T::from_vec(vec![1.0f32, 2.0, 3.0], [3], &cpu)?;
    assert_eq!(
        (&col + &row)?.to_vec2::<f32>()?,
        vec![vec![11.0, 12.0, 13.0], vec![21.0, 22.0, 23.0]]
    );
    Ok(())
}

#[test]
fn elementwise_methods_and_comparisons() -> Result<()> {
    let cpu = cpu();
    let x = T::from_vec(vec![-1.0f64, 0.0, 2.0], [3], &cpu)?;
    assert_eq!(x.abs()?.to_vec::<f64>()?, vec![1.0, 0.0, 2.0]);
    assert_eq!(x.sign()?.to_vec::<f64>()?, vec![-1.0, 0.0, 1.0]);
    assert_eq!(x.square()?.to_vec::<f64>()?, vec![1.0, 0.0, 4.0]);
    assert_eq!(x.exp()?.log()?.to_vec::<f64>()?.len(), 3);
    assert_eq!(x.maximum(0)?.to_vec::<f64>()?, vec![0.0, 0.0, 2.0]);
    assert_eq!(
        x.minimum(&x.neg()?)?.to_vec::<f64>()?,
        vec![-1.0, 0.0, -2.0]
    );
    assert_eq!(x.clamp(-0.5, 1.0)?.to_vec::<f64>()?, vec![-0.5, 0.0, 1.0]);
    assert_eq!(x.pow(2)?.to_vec::<f64>()?, vec![1.0, 0.0, 4.0]);
    assert_eq!(x.gt(0)?.to_vec::<bool>()?, vec![false, false, true]);
    assert_eq!(x.le(0.0)?.to_vec::<bool>()?, vec![true, true, false]);
    assert_eq!(x.eq(&x)?.logical_not()?.to_vec::<bool>()?, vec![false; 3]);
    let relu = x.gt(0)?.where_(&x, 0.0)?;
    assert_eq!(relu.to_vec::<f64>()?, vec![0.0, 0.0, 2.0]);
    let nan = T::from_vec(vec![f32::NAN, 1.0, f32::INFINITY], [3], &cpu)?;
    assert_eq!(nan.isnan()?.to_vec::<bool>()?, vec![true, false, false]);
    assert_eq!(nan.isfinite()?.to_vec::<bool>()?, vec![false, true, false]);
    let z = T::from_vec(
        vec![nabla_core::num_complex::Complex64::new(3.0, -4.0)],
        [1],
        &cpu,
    )?;
    assert_eq!(z.abs()?.to_vec::<f64>()?, vec![5.0]);
    assert_eq!(z.imag()?.to_vec::<f64>()?, vec![-4.0]);
    Ok(())
}

#[test]
fn chaining_a_softmax() -> Result<()> {
    let cpu = cpu();
    let logits = T::from_vec(vec![1.0f64, 2.0, 3.0, 1.0, 1.0, 1.0], [2, 3], &cpu)?;
    let shifted = (&logits - &logits.max(&[-1], true)?)?;
    let e = shifted.exp()?;
    let p = (&e / &e.sum(&[-1], true)?)?;
    let rows = p.to_vec2::<f64>()?;
    let z = 1.0 + (-1.0f64).exp() + (-2.0f64).exp();
    let want = [(-2.0f64).exp() / z, (-1.0f64).exp() / z, 1.0 / z];
    for (g, w) in rows[0].iter().zip(want) {
        assert!((g - w).abs() < 1e-15);
    }
    assert!(rows[1].iter().all(|v| (v - 1.0 / 3.0).abs() < 1e-15));
    assert_eq!(p.argmax(-1, false)?.to_vec::<i64>()?, vec![2, 0]);
    Ok(())
}

#[test]
fn reductions() -> Result<()> {
    let cpu = cpu();
    let x = T::from_vec(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], [2, 3], &cpu)?;
    assert_eq!(x.sum(&[0], false)?.to_vec::<f32>()?, vec![5.0, 7.0, 9.0]);
    assert_eq!(
        x.sum(&[1], true)?.to_vec2::<f32>()?,
        vec![vec![9.0], vec![12.0]]
    );
    assert_eq!(x.sum_all()?.item::<f32>()?, 21.0);
    assert_eq!(x.prod(&[-1], false)?.to_vec::<f32>()?, vec![15.0, 48.0]);
    assert_eq!(x.max(&[0], false)?.to_vec::<f32>()?, vec![4.0, 5.0, 6.0]);
    assert_eq!(x.min_all()?.item::<f32>()?, 1.0);
    assert_eq!(x.max_all()?.item::<f32>()?, 6.0);
    assert_eq!(x.mean(&[0, 1], false)?.item::<f32>()?, 3.5);
    assert_eq!(x.mean_all()?.item::<f32>()?, 3.5);
    assert_eq!(x.argmax(1, false)?.to_vec::<i64>()?, vec![1, 2]);
    assert_eq!(x.argmin(0, true)?.to_vec2::<i64>()?, vec![vec![0, 1, 0]]);
    assert_eq!(
        x.cumsum(1)?.to_vec::<f32>()?,
        vec![1.0, 6.0, 9.0, 4.0, 6.0, 12.0]
    );
    assert_eq!(
        x.gt(4)?.any(&[1], false)?.to_vec::<bool>()?,
        vec![true, true]
    );
    assert_eq!(
        x.gt(1)?.all(&[0], false)?.to_vec::<bool>()?,
        vec![false, true, true]
    );
    let flags = T::from_vec(vec![true, false, true], [3], &cpu)?;
    assert_eq!(
        flags.sum_all()?.item::<i64>()?,
        2,
        "bool sums count in int64"
    );
    assert_eq!(
        T::zeros([0], DType::F64, &cpu)?.sum_all()?.item::<f64>()?,
        0.0
    );
    Ok(())
}

#[test]
fn views_share_storage() -> Result<()> {
    let cpu = cpu();
    let x = T::arange(0, 24, 1, DType::I64, &cpu)?.reshape([2, 3, 4])?;
    let views = [
        x.t()?,
        x.permute(&[2, 0, 1])?,
        x.transpose(0, -1)?,
        x.unsqueeze(1)?,
        x.unsqueeze(1)?.squeeze(1)?,
        x.i((.., 0..1))?.squeeze_all()?,
        x.slice(2, None, None, -2)?,
        x.narrow(1, 1, 2)?,
        x.select_index(0, -1)?,
        x.flip(&[0, 2])?,
        x.reshape([6, -1])?,
        x.flatten(0, 1)?,
        x.i((1, s(..).step(-1), Indexer::NewAxis))?,
        x.i(0)?.broadcast_to([5, 3, 4])?,
    ];
    for v in &views {
        assert!(v.shares_storage_with(&x), "{v:?}");
    }
    assert_eq!(x.permute(&[2, 0, 1])?.shape(), &[4, 2, 3]);
    assert_eq!(
        x.slice(2, None, None, -2)?.i((0, 0))?.to_vec::<i64>()?,
        vec![3, 1]
    );
    assert_eq!(
        x.flip(&[0, 2])?.i((0, 0))?.to_vec::<i64>()?,
        vec![15, 14, 13, 12]
    );
    let split = x.split(2, 1)?;
    assert_eq!(
        split.iter().map(|p| p.shape()[1]).collect::<Vec<_>>(),
        vec![2, 1]
    );
    assert!(split.iter().all(|p| p.shares_storage_with(&x)));
    let chunks = x.chunk(2, -1)?;
    assert_eq!(chunks[1].i((0, 0))?.to_vec::<i64>()?, vec![2, 3]);
    // A reshape that no strided view can express copies.
    let copied = x.t()?.reshape([-1])?;
    assert!(!copied.shares_storage_with(&x));
    assert_eq!(copied.i(s(..4))?.to_vec::<i64>()?, vec![0, 4, 8, 1]);
    assert!(x.t()?.contiguous()?.is_contiguous());
    Ok(())
}

#[test]
fn joining_and_padding() -> Result<()> {
    let cpu = cpu();
    let a = T::from_vec(vec![1i32, 2], [1, 2], &cpu)?;
    let b = T::from_vec(vec![3i32, 4, 5, 6], [2, 2], &cpu)?;
    assert_eq!(
        T::cat(&[&a, &b], 0)?.to_vec2::<i32>()?,
        vec![vec![1, 2], vec![3, 4], vec![5, 6]]
    );
    assert_eq!(T::stack(&[&a, &a], 0)?.shape(), &[2, 1, 2]);
    assert_eq!(T::stack(&[&a, &a], -1)?.to_vec::<i32>()?, vec![1, 1, 2, 2]);
    assert_eq!(
        a.pad(&[(1, 0), (0, 2)], -1)?.to_vec2::<i32>()?,
        vec![vec![-1, -1, -1, -1], vec![1, 2, -1, -1]]
    );
    Ok(())
}

#[test]
fn index_ops_and_sorting() -> Result<()> {
    let cpu = cpu();
    let x = T::from_vec(vec![10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0], [2, 3], &cpu)?;
    let idx = T::from_vec(vec![2i64, 0], [2, 1], &cpu)?;
    assert_eq!(x.gather(1, &idx)?.to_vec::<f32>()?, vec![30.0, 40.0]);
    let rows = T::from_vec(vec![1i64, 1, 0], [3], &cpu)?;
    assert_eq!(x.index_select(0, &rows)?.shape(), &[3, 3]);
    assert_eq!(
        x.index_select(1, &T::from_vec(vec![-1i32], [1], &cpu)?)?
            .to_vec::<f32>()?,
        vec![30.0, 60.0]
    );
    let acc = T::zeros([3], DType::F32, &cpu)?;
    let src = T::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [4], &cpu)?;
    let at = T::from_vec(vec![0i64, 2, 0, 2], [4], &cpu)?;
    assert_eq!(
        acc.scatter_add(0, &at, &src)?.to_vec::<f32>()?,
        vec![4.0, 0.0, 6.0]
    );
    assert_eq!(
        acc.index_add(0, &at, &src)?.to_vec::<f32>()?,
        vec![4.0, 0.0, 6.0]
    );
    let labels = T::from_vec(vec![2i64, 0], [2], &cpu)?;
    assert_eq!(
        labels.one_hot(3, DType::F32)?.to_vec2::<f32>()?,
        vec![vec![0.0, 0.0, 1.0], vec![1.0, 0.0, 0.0]]
    );
    let v = T::from_vec(vec![3i64, 1, 2, 1], [4], &cpu)?;
    let (sorted, order) = v.sort(0, false)?;
    assert_eq!(
        (sorted.to_vec::<i64>()?, order.to_vec::<i64>()?),
        (vec![1, 1, 2, 3], vec![1, 3, 2, 0])
    );
    assert_eq!(v.argsort(0, true)?.to_vec::<i64>()?, vec![0, 2, 1, 3]);
    let (top, at) = v.topk(2, 0, true)?;
    assert_eq!(
        (top.to_vec::<i64>()?, at.to_vec::<i64>()?),
        (vec![3, 2], vec![0, 2])
    );
    Ok(())
}

#[test]
fn matrix_products_and_convolution() -> Result<()> {
    let cpu = cpu();
    let a = T::arange(1.0, 7.0, 1.0, DType::F64, &cpu)?.reshape([2, 3])?;
    assert_eq!(
        a.matmul(&a.t()?)?.to_vec2::<f64>()?,
        vec![vec![14.0, 32.0], vec![32.0, 77.0]]
    );
    let v = T::from_vec(vec![1.0f64, 0.0, -1.0], [3], &cpu)?;
    assert_eq!(a.matmul(&v)?.to_vec::<f64>()?, vec![-2.0, -2.0]);
    assert_eq!(v.matmul(&v)?.item::<f64>()?, 2.0);
    let batch = T::ones([4, 1, 2, 3], DType::F64, &cpu)?;
    assert_eq!(batch.matmul(&a.t()?)?.shape(), &[4, 1, 2, 2]);
    let img = T::arange(0.0, 16.0, 1.0, DType::F32, &cpu)?.reshape([1, 1, 4, 4])?;
    let k = T::ones([1, 1, 2, 2], DType::F32, &cpu)?;
    let p = Conv2dParams {
        stride: (2, 2),
        ..Default::default()
    };
    assert_eq!(
        img.conv2d(&k, &p)?.to_vec::<f32>()?,
        vec![10.0, 18.0, 42.0, 50.0]
    );
    Ok(())
}

#[test]
fn display_of_a_small_tensor() -> Result<()> {
    let cpu = cpu();
    let x = T::arange(0.0, 6.0, 1.0, DType::F32, &cpu)?.reshape([2, 3])?;
    assert_eq!(
        x.to_string(),
        "tensor([[0.0000, 1.0000, 2.0000],\n        [3.0000, 4.0000, 5.0000]])"
    );
    assert_eq!(
        format!("{}", x.t()?.cast(DType::F64)?),
        "tensor([[0.0000, 3.0000],\n        [1.0000, 4.0000],\n        [2.0000, 5.0000]], dtype=float64)"
    );
    assert_eq!(format!("{:.1}", x.i(1)?), "tensor([3.0, 4.0, 5.0])");
    let opts = PrintOptions {
        threshold: 4,
        edge_items: 1,
        ..Default::default()
    };
    assert_eq!(
        x.format_with(&opts)?,
        "tensor([[0.0000,  ..., 2.0000],\n        [3.0000,  ..., 5.0000]])"
    );
    assert_eq!(
        format!("{x:?}"),
        "Tensor(shape=[2, 3], dtype=float32, device=cpu:0, strides=[3, 1], offset=0)"
    );
    Ok(())
}
