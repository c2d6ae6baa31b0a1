//! NumPy-style printing (being written).

/// Options that control how tensors print.
#[derive(Clone, Debug)]
pub struct PrintOptions;
