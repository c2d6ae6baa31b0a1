//! A short tour of nabla's tensors: `cargo run --release --example tensors`.
//!
//! Creation, broadcasting arithmetic, zero-copy views, reductions, matrix products, indexing and
//! gathering, sorting, seeded random numbers, dtype casts, printing, and errors as values.

use nabla::prelude::*;

/// Prints a section title.
fn section(title: &str) {
    println!(
        "\n== {title} {}",
        "=".repeat(60usize.saturating_sub(title.len()))
    );
}

/// Prints `label` and the tensor, the tensor's continuation lines aligned under its first line.
fn show(label: &str, t: &CpuTensor) {
    let pad = " ".repeat(label.len() + 3);
    let text = t.to_string().replace('\n', &format!("\n{pad}"));
    println!("{label} = {text}");
}

fn main() -> nabla::Result<()> {
    let cpu = CpuBackend::new();

    section("Creating tensors");
    let a = Tensor::arange(0.0, 6.0, 1.0, DType::F32, &cpu)?.reshape([2, 3])?;
    show("a", &a);
    show("zeros", &Tensor::zeros([2, 2], DType::F64, &cpu)?);
    show(
        "linspace",
        &Tensor::linspace(0.0, 1.0, 5, DType::F32, &cpu)?,
    );
    show("eye", &Tensor::eye(3, DType::I64, &cpu)?);
    let v = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], [3], &cpu)?;
    show("v", &v);
    println!(
        "a has shape {:?}, dtype {}, {} elements",
        a.shape(),
        a.dtype(),
        a.numel()
    );

    section("Arithmetic with broadcasting");
    // Operators work on references and return Result: shapes are checked at run time.
    show("a + v", &(&a + &v)?); // [2, 3] + [3] broadcasts over rows
    show("a * 2 - 1", &((&a * 2.0)? - 1.0)?);
    let col = Tensor::from_vec(vec![1.0f32, -1.0], [2, 1], &cpu)?;
    show("a * col", &(&a * &col)?); // [2, 3] * [2, 1] broadcasts over columns
    show("exp(a / 5)", &(&a / 5.0)?.exp()?);
    show("relu(a - 2)", &(&a - 2.0)?.maximum(0)?);

    section("Views share storage");
    let t = a.t()?; // transpose: new strides, same buffer
    show("a.t()", &t);
    println!("a.t() shares a's buffer: {}", t.shares_storage_with(&a));
    let rev = a.slice(1, None, None, -1)?; // a[:, ::-1], a negative stride
    show("a[:, ::-1]", &rev);
    println!(
        "a[:, ::-1] shares a's buffer: {}",
        rev.shares_storage_with(&a)
    );
    let second_col = a.i((.., 1))?; // a[:, 1]
    show("a[:, 1]", &second_col);
    let dense = t.contiguous()?; // materialise only when asked
    println!(
        "a.t().contiguous() is a copy: shares = {}, contiguous = {}",
        dense.shares_storage_with(&a),
        dense.is_contiguous()
    );

    section("Reductions");
    show("a.sum(axis 0)", &a.sum(&[0], false)?);
    show("a.mean(axis 1, keepdims)", &a.mean(&[1], true)?);
    show("a.max()", &a.max_all()?);
    show("a.argmax(axis 1)", &a.argmax(1, false)?);
    show("a.cumsum(axis 1)", &a.cumsum(1)?);
    println!(
        "sum of everything as a number: {}",
        a.sum_all()?.item::<f32>()?
    );

    section("Matrix products");
    show("a @ a.T", &a.matmul(&t)?);
    let batch = Tensor::ones([4, 3, 2], DType::F32, &cpu)?;
    let prod = a.matmul(&batch)?; // [2, 3] @ [4, 3, 2]: the batch axis broadcasts
    println!("[2, 3] @ [4, 3, 2] -> {:?}", prod.shape());

    section("Indexing and gathering");
    let table = Tensor::arange(0, 12, 1, DType::I64, &cpu)?.reshape([4, 3])?;
    show("table", &table);
    let rows = Tensor::from_vec(vec![3i64, 0, 3], [3], &cpu)?;
    show("rows 3, 0, 3", &table.index_select(0, &rows)?);
    let picks = Tensor::from_vec(vec![2i64, 0, 1, 2], [4, 1], &cpu)?;
    show("one per row", &table.gather(1, &picks)?); // np.take_along_axis
    let labels = Tensor::from_vec(vec![0i64, 2, 1], [3], &cpu)?;
    show("one_hot", &labels.one_hot(3, DType::F32)?);

    section("Sorting");
    let scores = Tensor::from_vec(vec![0.3f32, 0.9, 0.1, 0.9, 0.5], [5], &cpu)?;
    let (sorted, order) = scores.sort(0, true)?; // stable: ties keep their order
    show("sorted (descending)", &sorted);
    show("order", &order);
    let (top, at) = scores.topk(2, 0, true)?;
    show("top-2", &top);
    show("top-2 at", &at);

    section("Random numbers from a seeded generator");
    let mut rng = Generator::new(42); // explicit state: no global RNG
    let noise = Tensor::randn([2, 4], DType::F32, &mut rng, &cpu)?;
    show("randn", &noise);
    let again = Tensor::randn([2, 4], DType::F32, &mut Generator::new(42), &cpu)?;
    println!(
        "same seed, same numbers: {}",
        noise.to_vec::<f32>()? == again.to_vec::<f32>()?
    );
    show(
        "rand in [0, 1)",
        &Tensor::rand([5], DType::F64, &mut rng, &cpu)?,
    );

    section("Casting between dtypes");
    let x = Tensor::from_vec(vec![-1.7f64, -0.5, 0.5, 2.5, 300.9], [5], &cpu)?;
    show("x", &x);
    show("x as int32 (truncates)", &x.cast(DType::I32)?);
    show("x.round() (half to even)", &x.round()?);
    show(
        "x as int64 as uint8 (wraps)",
        &x.cast(DType::I64)?.cast(DType::U8)?,
    );
    show("x > 0", &x.gt(0)?);

    section("Printing large tensors");
    // More than 1000 elements: only the corners are read back and printed.
    let big = Tensor::randn([100, 100], DType::F32, &mut rng, &cpu)?;
    show("big", &big);

    section("Errors are values");
    let w = Tensor::ones([3, 4], DType::F32, &cpu)?;
    match &a + &w {
        Ok(_) => println!("unexpected: [2, 3] + [3, 4] succeeded"),
        Err(e) => println!("a + w failed as it should:\n  {e}"),
    }
    match a.matmul(&a) {
        Ok(_) => println!("unexpected: [2, 3] @ [2, 3] succeeded"),
        Err(e) => println!("a @ a failed as it should:\n  {e}"),
    }
    match a.sum(&[2], false) {
        Ok(_) => println!("unexpected: axis 2 of a matrix exists"),
        Err(e) => println!("a.sum(axis 2) failed as it should:\n  {e}"),
    }
    Ok(())
}
