//! The PIR dialect, declared as data: element types, attribute schemas and the op
//! table. Every later stage (parser, printer, verifier, interpreter, sharding
//! propagation, partitioner) reads these declarations instead of keeping its own
//! list of ops.

// The `ops!` table is munched one entry per expansion step.
#![recursion_limit = "256"]

pub mod attr;
pub mod dtype;
pub mod kinds;
pub mod ops;
pub mod ring;
pub mod sharding;

pub use attr::{AttrDef, AttrDefault, AttrError, AttrKind};
pub use dtype::{DClass, DType};
pub use kinds::{CollectiveKind, ReduceKind, ScatterKind};
pub use ops::{Arity, BinaryOp, Callees, Context, Fusion, OpDef, Opcode, TypeRule, UnaryOp};
pub use sharding::{FactorKind, ShardingRule};
