//! Owns the Python extension `nabla_rs._nabla`: tensor class, ops, NumPy/DLPack, transforms.
//! Must not depend on `nabla-train`, `nabla-distributed` or the facade; wgpu only by feature.
//!
//! `nabla_rs._nabla`: the extension module behind the `nabla_rs` Python package (PyO3, abi3 for
//! CPython 3.10+). The Rust half holds the tensor class, the ops, NumPy and DLPack exchange and
//! the transforms on flat lists of tensors; the Python half (`python/nabla_rs`) adds pytrees,
//! `argnums` and the PyTorch- and JAX-style front ends.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.

mod amp;
mod convert;
mod custom;
mod dlpack;
mod dtype;
mod error;
mod grads;
mod index;
mod init_utils;
mod json;
mod layer_calls;
mod layers;
mod linalg;
mod losses;
mod matrices;
mod methods;
mod nn;
mod onnx;
mod ops;
mod optim;
mod optim_state;
mod sched;
mod select;
mod special;
mod tensor;
mod transforms;
mod value;

use pyo3::prelude::*;

#[pymodule]
fn _nabla(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<ops::GradMode>()?;
    m.add_class::<ops::Autocast>()?;
    m.add_class::<amp::PyGradScaler>()?;
    m.add_class::<transforms::CompiledProgram>()?;
    m.add_class::<transforms::PyPullback>()?;
    m.add_class::<convert::HostBuffer>()?;
    for d in dtype::all_dtypes() {
        m.add(d.dtype.name(), d)?;
    }
    ops::add_catalogue(m)?;
    m.add_function(wrap_pyfunction!(ops::tensor, m)?)?;
    m.add_function(wrap_pyfunction!(ops::from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(ops::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(ops::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ops::ones, m)?)?;
    m.add_function(wrap_pyfunction!(ops::full, m)?)?;
    m.add_function(wrap_pyfunction!(ops::zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(ops::ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(ops::arange, m)?)?;
    m.add_function(wrap_pyfunction!(ops::linspace, m)?)?;
    m.add_function(wrap_pyfunction!(ops::eye, m)?)?;
    m.add_function(wrap_pyfunction!(ops::manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(ops::get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_keyed_draw, m)?)?;
    m.add_function(wrap_pyfunction!(ops::set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(ops::rand, m)?)?;
    m.add_function(wrap_pyfunction!(ops::randn, m)?)?;
    m.add_function(wrap_pyfunction!(ops::concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(ops::stack, m)?)?;
    m.add_function(wrap_pyfunction!(ops::where_, m)?)?;
    m.add_function(wrap_pyfunction!(ops::matmul, m)?)?;
    m.add_function(wrap_pyfunction!(ops::einsum, m)?)?;
    m.add_function(wrap_pyfunction!(ops::is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::_set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_init_thread_pool, m)?)?;
    m.add_function(wrap_pyfunction!(ops::is_autocast_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(transforms::_vjp, m)?)?;
    m.add_function(wrap_pyfunction!(grads::_autograd_grad, m)?)?;
    m.add_function(wrap_pyfunction!(transforms::_jvp, m)?)?;
    m.add_function(wrap_pyfunction!(transforms::_jacobian, m)?)?;
    m.add_function(wrap_pyfunction!(transforms::_vmap, m)?)?;
    m.add_function(wrap_pyfunction!(transforms::_compile, m)?)?;
    m.add_function(wrap_pyfunction!(custom::_custom_call, m)?)?;
    m.add_function(wrap_pyfunction!(custom::_checkpoint, m)?)?;
    m.add_submodule(&linalg::linalg_module(m.py())?)?;
    m.add_submodule(&linalg::fft_module(m.py())?)?;
    m.add_submodule(&special::special_module(m.py())?)?;
    m.add_submodule(&nn::nn_module(m.py())?)?;
    m.add_submodule(&onnx::onnx_module(m.py())?)?;
    m.add_submodule(&optim::optim_module(m.py())?)?;
    Ok(())
}
