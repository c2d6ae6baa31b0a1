//! Loading a module's state by dotted name, with every missing, unexpected or mis-shaped entry
//! reported at once.

use crate::module::Module;
use crate::param::Param;
use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;
use std::collections::HashMap;

/// How strictly [`load_state_dict`] matches names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strictness {
    /// Every parameter and buffer must be given, and nothing else (PyTorch's `strict=True`).
    #[default]
    Strict,
    /// Load what matches; missing and unexpected names are allowed (shapes must still agree).
    Lenient,
}

/// What a lenient load left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Names of the module's parameters and buffers that were not given.
    pub missing: Vec<String>,
    /// Given names the module does not have.
    pub unexpected: Vec<String>,
}

/// Sets the module's parameters and buffers from `(name, tensor)` pairs, by dotted name (PyTorch's
/// `load_state_dict`). Tensors are cast to each parameter's dtype. With [`Strictness::Strict`], any
/// missing or unexpected name is an error; a shape mismatch always is. The error lists every offender,
/// and nothing is changed unless everything matches.
///
/// ```
/// use nabla_nn::{Linear, Module, load_state_dict, Strictness};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let layer = Linear::new(2, 1, true, DType::F32, &mut Generator::new(0), &cpu)?;
/// let state = vec![
///     ("weight".to_string(), Tensor::from_vec(vec![1.0f32, 2.0], [1, 2], &cpu)?),
///     ("bias".to_string(), Tensor::from_vec(vec![0.5f32], [1], &cpu)?),
/// ];
/// load_state_dict(&layer, &state, Strictness::Strict)?;
/// assert_eq!(layer.weight.value().to_vec::<f32>()?, vec![1.0, 2.0]);
/// let err = load_state_dict(&layer, &state[..1], Strictness::Strict).unwrap_err();
/// assert!(err.to_string().contains("missing: bias"));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn load_state_dict<B: Backend, M: Module<B> + ?Sized>(
    module: &M,
    state: &[(String, Tensor<B>)],
    strictness: Strictness,
) -> Result<LoadReport> {
    const OP: &str = "load_state_dict";
    let mut targets: Vec<(String, Param<B>)> = Vec::new();
    module.visit("", &mut |name, p| {
        targets.push((name.to_string(), p.clone()))
    });
    let given: HashMap<&str, &Tensor<B>> = state.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let known: HashMap<&str, &Param<B>> = targets.iter().map(|(n, p)| (n.as_str(), p)).collect();

    let mut report = LoadReport::default();
    let mut mismatched = Vec::new();
    let mut updates = Vec::new();
    for (name, param) in &targets {
        match given.get(name.as_str()) {
            None => report.missing.push(name.clone()),
            Some(t) if t.shape() != param.shape().as_slice() => mismatched.push(format!(
                "{name}: expected {:?}, got {:?}",
                param.shape(),
                t.shape()
            )),
            Some(t) => updates.push((param, (*t).clone())),
        }
    }
    for (name, _) in state {
        if !known.contains_key(name.as_str()) {
            report.unexpected.push(name.clone());
        }
    }
    let strict = strictness == Strictness::Strict;
    if !mismatched.is_empty()
        || (strict && (!report.missing.is_empty() || !report.unexpected.is_empty()))
    {
        let mut parts = Vec::new();
        if strict && !report.missing.is_empty() {
            parts.push(format!("missing: {}", report.missing.join(", ")));
        }
        if strict && !report.unexpected.is_empty() {
            parts.push(format!("unexpected: {}", report.unexpected.join(", ")));
        }
        if !mismatched.is_empty() {
            parts.push(format!("wrong shape: {}", mismatched.join("; ")));
        }
        return Err(Error::invalid(
            OP,
            format!("the state does not fit the module ({})", parts.join("; ")),
        ));
    }
    // Casts first, so a failing cast changes nothing.
    let updates = updates
        .into_iter()
        .map(|(p, t)| {
            let dtype = p.data().dtype();
            Ok((
                p,
                if t.dtype() == dtype {
                    t
                } else {
                    t.cast(dtype)?
                },
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    for (p, t) in updates {
        p.set(t.detach())?;
    }
    Ok(report)
}

/// Moves a model to another backend: copies every parameter and buffer of `src` into `dst`, a model of
/// the same architecture built on `backend`, by dotted name (all names and shapes must match; on error
/// nothing in `dst` changes). Build the model once per backend and transfer its state, as
/// `model.to(device)` does in PyTorch.
///
/// ```
/// use nabla_nn::{Linear, Module, transfer_state};
/// use nabla_core::{DType, Generator, MemoryTracked};
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let tracked = MemoryTracked::new(CpuBackend::new());
/// let mut rng = Generator::new(0);
/// let here = Linear::new(3, 2, true, DType::F32, &mut rng, &cpu)?;
/// let there = Linear::new(3, 2, true, DType::F32, &mut rng, &tracked)?;
/// transfer_state(&here, &there, &tracked)?;
/// assert_eq!(here.weight.value().to_vec::<f32>()?, there.weight.value().to_vec::<f32>()?);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn transfer_state<B: Backend, B2: Backend, M, M2>(src: &M, dst: &M2, backend: &B2) -> Result<()>
where
    M: Module<B> + ?Sized,
    M2: Module<B2> + ?Sized,
{
    let state = src
        .state_dict()
        .into_iter()
        .map(|(name, t)| Ok((name, t.to_backend(backend)?)))
        .collect::<Result<Vec<_>>>()?;
    load_state_dict(dst, &state, Strictness::Strict).map(|_| ())
}
