//! The PIR dialect, declared as data: element types, attribute schemas and the op
//! table. Every later stage (parser, printer, verifier, interpreter, sharding
//! propagation, partitioner) reads these declarations instead of keeping its own
//! list of ops.

pub mod attr;
pub mod dtype;
pub mod ops;
pub mod sharding;

pub use attr::{AttrDef, AttrDefault, AttrKind};
pub use dtype::{DClass, DType};
pub use ops::{Arity, Context, OpDef, Opcode, TypeRule};
pub use sharding::ShardingRule;
