//! Decoding the fixture JSON (see `scripts/gen_numpy_fixtures.py` for the format) into host data,
//! tensors and op parameters.

use nabla_core::half::{bf16, f16};
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{DType, HostData, Scalar};
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;
use serde_json::Value;

/// A tensor on the CPU backend.
pub type T = Tensor<CpuBackend>;

/// One decoded array: dtype, shape and row-major data, plus the view steps to apply after upload.
pub struct Array {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: HostData,
    pub view: Vec<Value>,
}

/// One fixture case.
pub struct Case {
    /// `file#index`, for reports.
    pub origin: String,
    pub name: String,
    pub op: String,
    pub params: Value,
    pub inputs: Vec<Array>,
    pub expected: Array,
    pub exact: bool,
    pub signed_zero: bool,
}

/// Decodes a float: a JSON number or one of the strings `"nan"`, `"inf"`, `"-inf"`, `"-0.0"`.
pub fn float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "-0.0" => Ok(-0.0),
            other => Err(format!("bad float string {other:?}")),
        },
        other => Err(format!("expected a float, got {other}")),
    }
}

fn int(v: &Value) -> Result<i64, String> {
    v.as_i64()
        .ok_or_else(|| format!("expected an integer, got {v}"))
}

fn complex(v: &Value) -> Result<Complex64, String> {
    match v.as_array().map(|a| a.as_slice()) {
        Some([re, im]) => Ok(Complex64::new(float(re)?, float(im)?)),
        _ => Err(format!("expected a [re, im] pair, got {v}")),
    }
}

fn map<X>(data: &[Value], f: impl Fn(&Value) -> Result<X, String>) -> Result<Vec<X>, String> {
    data.iter().map(f).collect()
}

fn narrow_int<X: TryFrom<i64>>(v: &Value) -> Result<X, String> {
    let i = int(v)?;
    X::try_from(i).map_err(|_| format!("integer {i} out of range for its dtype"))
}

/// Decodes `{dtype, shape, data, view?}`.
pub fn array(v: &Value) -> Result<Array, String> {
    let name = v["dtype"].as_str().ok_or("array without a dtype")?;
    let dtype = DType::from_name(name).ok_or_else(|| format!("unknown dtype {name:?}"))?;
    let shape = v["shape"]
        .as_array()
        .ok_or("array without a shape")?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or(format!("bad dimension {d}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let data = v["data"].as_array().ok_or("array without data")?;
    if data.len() != shape.iter().product::<usize>() {
        return Err(format!("{} values for shape {shape:?}", data.len()));
    }
    let host = match dtype {
        DType::F16 => HostData::F16(map(data, |x| float(x).map(f16::from_f64))?),
        DType::BF16 => HostData::BF16(map(data, |x| float(x).map(bf16::from_f64))?),
        DType::F32 => HostData::F32(map(data, |x| float(x).map(|f| f as f32))?),
        DType::F64 => HostData::F64(map(data, float)?),
        DType::C64 => HostData::C64(map(data, |x| {
            complex(x).map(|c| Complex32::new(c.re as f32, c.im as f32))
        })?),
        DType::C128 => HostData::C128(map(data, complex)?),
        DType::I32 => HostData::I32(map(data, narrow_int::<i32>)?),
        DType::I64 => HostData::I64(map(data, int)?),
        DType::U8 => HostData::U8(map(data, narrow_int::<u8>)?),
        DType::Bool => HostData::Bool(map(data, |x| {
            x.as_bool()
                .ok_or_else(|| format!("expected a bool, got {x}"))
        })?),
    };
    let view = match &v["view"] {
        Value::Null => Vec::new(),
        Value::Array(steps) => steps.clone(),
        other => return Err(format!("bad view {other}")),
    };
    Ok(Array {
        dtype,
        shape,
        data: host,
        view,
    })
}

/// Decodes one case of a fixture file.
pub fn case(origin: String, v: &Value) -> Result<Case, String> {
    let name = v["name"].as_str().ok_or("case without a name")?.to_string();
    let op = v["op"].as_str().ok_or("case without an op")?.to_string();
    let inputs = v["inputs"]
        .as_array()
        .ok_or("case without inputs")?
        .iter()
        .map(array)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Case {
        origin,
        name,
        op,
        params: v["params"].clone(),
        inputs,
        expected: array(&v["expected"])?,
        exact: v["exact"].as_bool().unwrap_or(false),
        signed_zero: v["signed_zero"].as_bool().unwrap_or(false),
    })
}

/// Uploads an input and applies its view steps (the same steps the generator applied in NumPy).
pub fn tensor(a: &Array, cpu: &CpuBackend) -> Result<T, String> {
    let mut t = Tensor::from_host(a.data.clone(), a.shape.clone(), cpu).map_err(nabla)?;
    for step in &a.view {
        let s = step
            .as_array()
            .ok_or_else(|| format!("bad view step {step}"))?;
        let kind = s.first().and_then(Value::as_str).unwrap_or("");
        let arg = |i: usize| s.get(i).cloned().unwrap_or(Value::Null);
        t = match kind {
            "slice" => t.slice(
                isize_of(&arg(1))?,
                opt_isize(&arg(2))?,
                opt_isize(&arg(3))?,
                isize_of(&arg(4))?,
            ),
            "permute" => t.permute(&isizes(&arg(1))?),
            "transpose" => t.transpose(isize_of(&arg(1))?, isize_of(&arg(2))?),
            "reshape" => t.reshape(isizes(&arg(1))?),
            "flip" => t.flip(&isizes(&arg(1))?),
            "broadcast_to" => t.broadcast_to(usizes(&arg(1))?),
            "unsqueeze" => t.unsqueeze(isize_of(&arg(1))?),
            "squeeze" => t.squeeze(isize_of(&arg(1))?),
            other => return Err(format!("unknown view step {other:?}")),
        }
        .map_err(nabla)?;
    }
    Ok(t)
}

/// Formats a nabla error for a report.
pub fn nabla(e: nabla_core::Error) -> String {
    format!("nabla error: {e}")
}

pub fn isize_of(v: &Value) -> Result<isize, String> {
    v.as_i64()
        .map(|i| i as isize)
        .ok_or_else(|| format!("expected an integer, got {v}"))
}

fn opt_isize(v: &Value) -> Result<Option<isize>, String> {
    if v.is_null() {
        Ok(None)
    } else {
        isize_of(v).map(Some)
    }
}

pub fn isizes(v: &Value) -> Result<Vec<isize>, String> {
    v.as_array()
        .ok_or_else(|| format!("expected a list of integers, got {v}"))?
        .iter()
        .map(isize_of)
        .collect()
}

pub fn usizes(v: &Value) -> Result<Vec<usize>, String> {
    v.as_array()
        .ok_or_else(|| format!("expected a list of sizes, got {v}"))?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or(format!("bad size {d}"))
        })
        .collect()
}

/// Typed access to a case's parameters.
pub struct Params<'a>(pub &'a Value);

impl Params<'_> {
    fn get(&self, key: &str) -> Result<&Value, String> {
        self.0
            .get(key)
            .ok_or_else(|| format!("missing parameter {key:?}"))
    }

    pub fn str(&self, key: &str) -> Result<&str, String> {
        let v = self.get(key)?;
        v.as_str()
            .ok_or_else(|| format!("parameter {key:?} is not a string: {v}"))
    }

    pub fn bool(&self, key: &str) -> Result<bool, String> {
        let v = self.get(key)?;
        v.as_bool()
            .ok_or_else(|| format!("parameter {key:?} is not a bool: {v}"))
    }

    pub fn isize(&self, key: &str) -> Result<isize, String> {
        isize_of(self.get(key)?)
    }

    pub fn usize(&self, key: &str) -> Result<usize, String> {
        let v = self.get(key)?;
        v.as_u64()
            .map(|u| u as usize)
            .ok_or_else(|| format!("parameter {key:?} is not a size: {v}"))
    }

    pub fn f64(&self, key: &str) -> Result<f64, String> {
        float(self.get(key)?)
    }

    pub fn dtype(&self, key: &str) -> Result<DType, String> {
        let name = self.str(key)?;
        DType::from_name(name).ok_or_else(|| format!("unknown dtype {name:?}"))
    }

    /// Axes to reduce over; `null` means all (an empty list for the Tensor API).
    pub fn axes(&self, key: &str) -> Result<Vec<isize>, String> {
        match self.get(key)? {
            Value::Null => Ok(Vec::new()),
            v => isizes(v),
        }
    }

    /// A number or bool as a [`Scalar`]: integers stay integers, floats may be special strings.
    pub fn scalar(&self, key: &str) -> Result<Scalar, String> {
        let v = self.get(key)?;
        if let Some(b) = v.as_bool() {
            return Ok(Scalar::Bool(b));
        }
        if let Some(i) = v.as_i64() {
            return Ok(Scalar::I64(i));
        }
        float(v).map(Scalar::F64)
    }

    /// `[[before, after], ...]` padding pairs.
    pub fn pads(&self, key: &str) -> Result<Vec<(usize, usize)>, String> {
        let v = self.get(key)?;
        v.as_array()
            .ok_or_else(|| format!("parameter {key:?} is not a list: {v}"))?
            .iter()
            .map(|p| match usizes(p)?.as_slice() {
                [a, b] => Ok((*a, *b)),
                _ => Err(format!("bad padding pair {p}")),
            })
            .collect()
    }
}
