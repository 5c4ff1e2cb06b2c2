//! Host tensors: a row-major buffer of one PIR dtype plus its shape, and the
//! reference kernels that the interpreter (and later the runtime's tests) use.
//!
//! Kernels favour obviously-correct code over speed: floats are computed in f64
//! and rounded once to the element type (through f32 for f16/bf16, so that
//! "compute in f32, round once" holds); integers are computed in i128 and wrapped
//! to the element width.

mod tensor;
pub use tensor::{collapse, gemm_order, round_to_dtype, strides, wrap_to_dtype, Buf, Lanes, Scalar, Tensor, TensorError};

// Reductions, contractions, windows and collective combining (reference kernels).
mod collective;
mod conv;
mod dot;
mod reduce;
mod sort;
mod window;
pub use collective::{combine, combine_le_into};
pub use conv::{conv_geometry, conv_output_shape, convolution, parse_conv_dims, ConvDims, ConvGeometry};
pub use dot::dot_general;
pub use reduce::{argmax, argmin, reduce};
pub use sort::{sort, sort_order, top_k};
pub use window::{reduce_window, select_and_scatter_add, window_output_shape};

/// The one numeric comparison of computed and expected tensors (tests).
pub mod compare;
mod elementwise;
mod io;
mod memory;
pub use memory::{available_memory, parse_size};
mod structural;
pub use elementwise::{binary, bitcast_convert, clamp, compare, convert, iota, select, unary};
pub use io::{buf_from_le_bytes, buf_le_bytes, buf_to_le_bytes, decode_npy, npy_layout, read_named, safetensors_layouts, safetensors_to_bytes as safetensors_bytes, RawLayout, read_npy, read_safetensors, write_atomically, write_npy, write_outputs, write_safetensors};
pub use structural::{
    broadcast, concat, dynamic_slice, dynamic_update_slice, gather, index_along, pad, reshape, reverse, scatter,
    scatter_add, slice, stack, transpose,
};
