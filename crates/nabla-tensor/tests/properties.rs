//! Property tests of the `Tensor` API on the CPU backend against plain Rust references, over random
//! shapes (rank 0 to 4, dimensions 0 to 4, so empty tensors included), NumPy broadcasting and
//! non-contiguous inputs (permuted, flipped, stepped and broadcast views). Each family also checks that
//! an op on a view agrees with the same op on a contiguous copy.

#[path = "properties/elementwise.rs"]
mod elementwise;
#[path = "properties/large.rs"]
mod large;
#[path = "properties/linalg.rs"]
mod linalg;
#[path = "properties/movement.rs"]
mod movement;
#[path = "properties/random.rs"]
mod random;
#[path = "properties/reductions.rs"]
mod reductions;
#[path = "properties/support.rs"]
mod support;
