//! Maps a fixture's `op` and `params` onto the `Tensor` API.

use super::decode::{Case, Params, T, nabla, tensor};
use nabla_core::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;

/// Every op name the fixtures may use.
pub const KNOWN_OPS: &[&str] = &[
    "binary",
    "compare",
    "unary",
    "where",
    "cast",
    "reduce",
    "any",
    "all",
    "argmax",
    "argmin",
    "cumsum",
    "matmul",
    "view",
    "pad",
    "concatenate",
    "stack",
    "take_along_axis",
    "index_select",
    "scatter_add",
    "one_hot",
    "sort",
    "topk",
    "linspace",
    "arange",
    "eye",
    "full",
];

fn binary_op(name: &str) -> Result<BinaryOp, String> {
    BinaryOp::ALL
        .into_iter()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("unknown binary op {name:?}"))
}

fn compare_op(name: &str) -> Result<CompareOp, String> {
    CompareOp::ALL
        .into_iter()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("unknown comparison {name:?}"))
}

fn unary_op(name: &str) -> Result<UnaryOp, String> {
    UnaryOp::ALL
        .into_iter()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("unknown unary op {name:?}"))
}

/// Picks the values or the indices of a `(values, indices)` pair.
fn pick(pair: (T, T), output: &str) -> Result<T, String> {
    match output {
        "values" => Ok(pair.0),
        "indices" => Ok(pair.1),
        other => Err(format!("unknown output {other:?}")),
    }
}

/// Runs the case's op on its inputs and returns the result tensor (not yet read back).
pub fn run(case: &Case, cpu: &CpuBackend) -> Result<T, String> {
    let p = Params(&case.params);
    let xs = case
        .inputs
        .iter()
        .map(|a| tensor(a, cpu))
        .collect::<Result<Vec<_>, _>>()?;
    let arg = |i: usize| {
        xs.get(i)
            .ok_or_else(|| format!("{} needs input {i}", case.op))
    };
    let out = match case.op.as_str() {
        "binary" => arg(0)?.binary(binary_op(p.str("op")?)?, arg(1)?),
        "compare" => arg(0)?.compare(compare_op(p.str("op")?)?, arg(1)?),
        "unary" => arg(0)?.unary(unary_op(p.str("op")?)?),
        "where" => arg(0)?.where_(arg(1)?, arg(2)?),
        "cast" => arg(0)?.cast(p.dtype("dtype")?),
        "reduce" => {
            let (x, axes, keep) = (arg(0)?, p.axes("axes")?, p.bool("keepdims")?);
            match p.str("op")? {
                "sum" => x.reduce(ReduceOp::Sum, &axes, keep),
                "prod" => x.reduce(ReduceOp::Prod, &axes, keep),
                "max" => x.reduce(ReduceOp::Max, &axes, keep),
                "min" => x.reduce(ReduceOp::Min, &axes, keep),
                "mean" => x.mean(&axes, keep),
                other => return Err(format!("unknown reduction {other:?}")),
            }
        }
        "any" => arg(0)?.any(&p.axes("axes")?, p.bool("keepdims")?),
        "all" => arg(0)?.all(&p.axes("axes")?, p.bool("keepdims")?),
        "argmax" => arg(0)?.argmax(p.isize("axis")?, p.bool("keepdims")?),
        "argmin" => arg(0)?.argmin(p.isize("axis")?, p.bool("keepdims")?),
        "cumsum" => arg(0)?.cumsum(p.isize("axis")?),
        "matmul" => arg(0)?.matmul(arg(1)?),
        "view" => {
            // The view itself is read back by the comparison; also materialise it and check that the copy
            // is a dense row-major buffer.
            let view = arg(0)?;
            let dense = view.contiguous().map_err(nabla)?;
            if !dense.is_contiguous() {
                return Err(format!(
                    "contiguous() returned a non-contiguous layout {:?}",
                    dense.layout()
                ));
            }
            let (a, b) = (
                view.to_host().map_err(nabla)?,
                dense.to_host().map_err(nabla)?,
            );
            if a != b {
                return Err(format!(
                    "reading the view gave {a:?} but its contiguous copy holds {b:?}"
                ));
            }
            Ok(view.clone())
        }
        "pad" => arg(0)?.pad(&p.pads("pads")?, p.scalar("value")?),
        "concatenate" => Tensor::cat(&xs.iter().collect::<Vec<_>>(), p.isize("axis")?),
        "stack" => Tensor::stack(&xs.iter().collect::<Vec<_>>(), p.isize("axis")?),
        "take_along_axis" => arg(0)?.gather(p.isize("axis")?, arg(1)?),
        "index_select" => arg(0)?.index_select(p.isize("axis")?, arg(1)?),
        "scatter_add" => arg(0)?.scatter_add(p.isize("axis")?, arg(1)?, arg(2)?),
        "one_hot" => arg(0)?.one_hot(p.usize("classes")?, p.dtype("dtype")?),
        "sort" => {
            let pair = arg(0)?
                .sort(p.isize("axis")?, p.bool("descending")?)
                .map_err(nabla)?;
            return pick(pair, p.str("output")?);
        }
        "topk" => {
            let pair = arg(0)?
                .topk(p.usize("k")?, p.isize("axis")?, p.bool("largest")?)
                .map_err(nabla)?;
            return pick(pair, p.str("output")?);
        }
        "linspace" => Tensor::linspace(
            p.f64("start")?,
            p.f64("end")?,
            p.usize("n")?,
            p.dtype("dtype")?,
            cpu,
        ),
        "arange" => Tensor::arange(
            p.scalar("start")?,
            p.scalar("end")?,
            p.scalar("step")?,
            p.dtype("dtype")?,
            cpu,
        ),
        "eye" => Tensor::eye(p.usize("n")?, p.dtype("dtype")?, cpu),
        "full" => Tensor::full(
            super::decode::usizes(&case.params["shape"])?,
            p.scalar("value")?,
            p.dtype("dtype")?,
            cpu,
        ),
        other => return Err(format!("unknown op {other:?}")),
    };
    out.map_err(nabla)
}
