//! Host tensors: a row-major buffer of one PIR dtype plus its shape, and the
//! reference kernels that the interpreter (and later the runtime's tests) use.
//!
//! Kernels favour obviously-correct code over speed: floats are computed in f64
//! and rounded once to the element type (through f32 for f16/bf16, so that
//! "compute in f32, round once" holds); integers are computed in i128 and wrapped
//! to the element width.

mod tensor;
pub use tensor::{round_to_dtype, strides, wrap_to_dtype, Buf, Lanes, Scalar, Tensor, TensorError};
