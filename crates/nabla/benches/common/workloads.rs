//! The benchmark workloads of issue 2, shared by the criterion benchmarks (`benches/tensor_ops.rs`) and
//! the JSON timing report (`examples/bench_report.rs`) that `scripts/bench_compare.py` compares with NumPy
//! and JAX. The names here are the ones the script uses for its own implementations.

use nabla::prelude::*;

/// What a workload computes.
#[derive(Clone, Copy, Debug)]
pub enum Work {
    /// `[batch, m, k] @ [batch, k, n]` (no batch axis when `batch` is `None`).
    Matmul {
        dtype: DType,
        batch: Option<usize>,
        m: usize,
        k: usize,
        n: usize,
    },
    /// `a + b` on two contiguous f32 vectors.
    Add { len: usize },
    /// `exp(a)` on a contiguous f32 vector.
    Exp { len: usize },
    /// `x.sum(axis)` of a contiguous `[rows, cols]` f32 matrix.
    SumAxis {
        axis: isize,
        rows: usize,
        cols: usize,
    },
    /// `x.t().contiguous()` of a `[rows, cols]` f32 matrix.
    TransposeCopy { rows: usize, cols: usize },
}

/// One named workload with its arithmetic and memory traffic (for GFLOP/s and GB/s).
#[derive(Clone, Debug)]
pub struct Workload {
    /// Stable name, shared with the comparison script.
    pub name: String,
    /// Criterion group: `matmul`, `elementwise`, `reduce` or `movement`.
    pub group: &'static str,
    /// Floating-point operations per run (matmuls only, else 0).
    pub flops: f64,
    /// Bytes read and written per run (memory-bound ops only, else 0).
    pub bytes: f64,
    /// The computation.
    pub work: Work,
}

/// Every workload of the issue, in report order.
pub fn all() -> Vec<Workload> {
    let mut out = Vec::new();
    let mm = |dtype: DType, batch: Option<usize>, s: usize, name: String| Workload {
        name,
        group: "matmul",
        flops: 2.0 * (batch.unwrap_or(1) * s * s * s) as f64,
        bytes: 0.0,
        work: Work::Matmul {
            dtype,
            batch,
            m: s,
            k: s,
            n: s,
        },
    };
    for s in [256, 512, 1024, 2048] {
        out.push(mm(DType::F32, None, s, format!("matmul_f32_{s}")));
    }
    out.push(mm(DType::F64, None, 1024, "matmul_f64_1024".into()));
    out.push(mm(DType::F32, Some(64), 128, "bmm_f32_64x128x128".into()));
    for (len, tag) in [(1 << 20, "1M"), (1 << 24, "16M")] {
        out.push(Workload {
            name: format!("add_f32_{tag}"),
            group: "elementwise",
            flops: 0.0,
            bytes: 12.0 * len as f64,
            work: Work::Add { len },
        });
    }
    for (len, tag) in [(1 << 20, "1M"), (1 << 24, "16M")] {
        out.push(Workload {
            name: format!("exp_f32_{tag}"),
            group: "elementwise",
            flops: 0.0,
            bytes: 8.0 * len as f64,
            work: Work::Exp { len },
        });
    }
    let (rows, cols) = (4096, 4096);
    for axis in [0, 1] {
        out.push(Workload {
            name: format!("sum_axis{axis}_f32_4096x4096"),
            group: "reduce",
            flops: 0.0,
            bytes: 4.0 * (rows * cols) as f64,
            work: Work::SumAxis { axis, rows, cols },
        });
    }
    out.push(Workload {
        name: "transpose_copy_f32_4096x4096".into(),
        group: "movement",
        flops: 0.0,
        bytes: 8.0 * (rows * cols) as f64,
        work: Work::TransposeCopy { rows, cols },
    });
    out
}

/// Deterministic values in `[-1, 1]` made on the host, so that preparing inputs needs no kernel.
fn values(len: usize, salt: usize) -> Vec<f64> {
    (0..len)
        .map(|i| {
            let h = (i.wrapping_add(salt).wrapping_mul(2_654_435_761)) >> 7;
            (h % 2001) as f64 / 1000.0 - 1.0
        })
        .collect()
}

fn tensor(shape: &[usize], dtype: DType, salt: usize, cpu: &CpuBackend) -> Result<CpuTensor> {
    let len = shape.iter().product();
    let v = values(len, salt);
    match dtype {
        DType::F64 => Tensor::from_vec(v, shape.to_vec(), cpu),
        _ => Tensor::from_vec(
            v.iter().map(|&x| x as f32).collect::<Vec<f32>>(),
            shape.to_vec(),
            cpu,
        )?
        .cast(dtype),
    }
}

/// A workload with its inputs in place, ready to be timed.
pub struct Prepared {
    work: Work,
    a: CpuTensor,
    b: Option<CpuTensor>,
}

impl Workload {
    /// Creates the inputs (not part of the timed work).
    pub fn prepare(&self, cpu: &CpuBackend) -> Result<Prepared> {
        let (a, b) = match self.work {
            Work::Matmul {
                dtype,
                batch,
                m,
                k,
                n,
            } => {
                let (sa, sb) = match batch {
                    Some(bt) => (vec![bt, m, k], vec![bt, k, n]),
                    None => (vec![m, k], vec![k, n]),
                };
                (
                    tensor(&sa, dtype, 1, cpu)?,
                    Some(tensor(&sb, dtype, 2, cpu)?),
                )
            }
            Work::Add { len } => (
                tensor(&[len], DType::F32, 1, cpu)?,
                Some(tensor(&[len], DType::F32, 2, cpu)?),
            ),
            Work::Exp { len } => (tensor(&[len], DType::F32, 1, cpu)?, None),
            Work::SumAxis { rows, cols, .. } | Work::TransposeCopy { rows, cols } => {
                (tensor(&[rows, cols], DType::F32, 1, cpu)?, None)
            }
        };
        Ok(Prepared {
            work: self.work,
            a,
            b,
        })
    }
}

impl Prepared {
    /// Runs the workload once and waits for the result.
    pub fn run(&self) -> Result<CpuTensor> {
        let b = || {
            self.b
                .as_ref()
                .ok_or_else(|| Error::invalid("bench", "workload needs a second input"))
        };
        let out = match self.work {
            Work::Matmul { .. } => self.a.matmul(b()?)?,
            Work::Add { .. } => (&self.a + b()?)?,
            Work::Exp { .. } => self.a.exp()?,
            Work::SumAxis { axis, .. } => self.a.sum(&[axis], false)?,
            Work::TransposeCopy { .. } => self.a.t()?.contiguous()?,
        };
        out.backend().synchronize()?;
        Ok(out)
    }
}
