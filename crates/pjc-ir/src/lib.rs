//! The PIR in-memory representation.
//!
//! A [`Module`] owns [`Function`]s in an arena indexed by [`FuncId`]; each
//! function owns its values and instructions in arenas indexed by the typed
//! handles [`Value`] and [`Inst`], with program order kept separately in
//! `Function::body` (Cranelift's data-flow-graph/layout split). Side tables such
//! as shardings computed by later passes are kept outside the IR, keyed by
//! handle. The op vocabulary is `pjc_dialects::Opcode`; this crate never lists
//! ops except in [`infer`], the one place that knows each op's type rule.

pub mod attrs;
pub mod builder;
pub mod entity;
pub mod infer;
pub mod module;
pub mod replication;
pub mod types;

pub use attrs::Attrs;
pub use entity::{EntityRef, FuncId, Inst, PrimaryMap, Value};
pub use module::{
    Attr, AttrValue, Comments, FuncKind, Function, InstData, Literal, Module, Number, ResultDecl, ValueData,
    ValueDef,
};
pub use pjc_dialects::{AttrError, BinaryOp, CollectiveKind, DType, Opcode, ReduceKind, ScatterKind, UnaryOp};
pub use types::{DimSharding, Mesh, MeshAxis, Sharding, Span, TensorType};
