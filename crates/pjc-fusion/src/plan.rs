//! The kernel plan: which instructions fuse into which loop kernel, which run as
//! library calls (GEMM, convolution, the few ops without a kernel yet) or
//! collectives, and which buffers they read and write.
//!
//! Fusion is output-driven (XLA's loop and input fusion): a value gets its own
//! buffer when a non-fusible op, a second consumer (unless it is cheap index
//! work), a broadcast-like consumer of expensive work, or the function's results
//! need it; every other fusible value is recomputed inside its consumer's
//! kernel at the coordinates the consumer needs — data movement becomes index
//! arithmetic. A `reduce` or `reduce_window` is the root of a reduction kernel
//! into which its elementwise producers fuse.

use pjc_plan::kernel::{compute_type, BufferArg, CmpDir, IndexOp, Kernel, Node, NodeId, ReduceKind, Reduction};
use pjc_plan::{Buffer, BufferKind, Plan, Step};
use pjc_dialects::{Fusion, TypeRule};
use pjc_ir::{Attrs, BinaryOp, DType, Function, InstData, Opcode, TensorType, Value, ValueDef};
use std::collections::{HashMap, HashSet};

pub use control::plan_program;

mod control;
mod forms;
mod scatter;
mod sort;

/// Planning failures inside one instruction (programs the code generator
/// does not handle yet); [`plan`] locates them as [`Unplannable`].
#[derive(Clone, Debug, PartialEq)]
pub struct PlanError(pub String);

/// Why a function has no plan.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unplannable {
    /// A construct the planner does not handle, at the value it defines.
    #[error("in @{func}, %{value}: {msg}")]
    Construct { func: String, value: String, msg: String },
    /// Sizes past what a plan can address (2^64 bytes).
    #[error("{0}")]
    TooBig(String),
}

impl From<pjc_ir::AttrError> for PlanError {
    fn from(e: pjc_ir::AttrError) -> PlanError {
        PlanError(e.0)
    }
}

/// Computed inside its consumers' loop kernels (the op table's fusion role).
fn is_fusible(op: Opcode) -> bool {
    op.def().fusion == Fusion::Loop
}

/// Whether a consumer lets its operand fuse into its kernel.
fn fuses_operands(op: Opcode) -> bool {
    matches!(op.def().fusion, Fusion::Loop | Fusion::ReductionRoot)
}

/// The longest chain of fused producers one kernel recomputes: a longer chain
/// is cut by storing the value that reaches this depth (bitwise the same
/// results: fused ops round per op exactly as stored ones do). XLA bounds its
/// fusions similarly; here it also keeps the recursive body builder's stack
/// depth independent of the program's length.
pub const MAX_FUSION_DEPTH: usize = 256;

/// Builds the plan of `f` (a single-device `func` or a per-device `spmd func`
/// without calls, transforms or control flow; a program with control flow is
/// planned with its bodies by [`plan_program`]).
///
/// A program with a value of more than 2^64 bytes, or whose buffers together
/// (as `plan_memory` aligns them) exceed 2^64 bytes, has no plan: byte sizes,
/// arena offsets and the peak are u64, and loop extents and strides are derived
/// from the shapes.
pub fn plan(f: &Function) -> Result<Plan, Unplannable> {
    let mut plan = plan_function(f)?;
    reject_unresolved(f, &plan)?;
    crate::schedule::schedule(&mut plan);
    Ok(plan)
}

/// `plan` of a function alone: control flow needs its bodies.
fn reject_unresolved(f: &Function, plan: &Plan) -> Result<(), Unplannable> {
    match plan.steps.iter().find(|s| matches!(s, Step::Control(_))) {
        None => Ok(()),
        Some(_) => {
            let inst = f.body.iter().map(|&i| &f.insts[i]).find(|d| d.op.is_control()).expect("a control step comes from a control op");
            Err(Unplannable::Construct {
                func: f.name.clone(),
                value: f.values[inst.results[0]].name.clone(),
                msg: format!("unsupported: '{}' planned without its bodies (pjc_fusion::plan_program plans a program with control flow)", inst.op),
            })
        }
    }
}

/// The plan of `f` alone: its control-flow steps name their bodies, whose
/// blocks [`plan_program`] fills.
pub(crate) fn plan_function(f: &Function) -> Result<Plan, Unplannable> {
    // Uses of each value.
    let mut users: HashMap<Value, Vec<Opcode>> = HashMap::new();
    for &i in &f.body {
        let inst = &f.insts[i];
        if inst.op.def().fusion == Fusion::Unplanned && !inst.op.is_control() {
            return Err(Unplannable::Construct {
                func: f.name.clone(),
                value: f.values[inst.results[0]].name.clone(),
                msg: format!("unsupported: '{}' in code generation (calls are inlined and transforms expanded first)", inst.op),
            });
        }
        for &v in &inst.operands {
            users.entry(v).or_default().push(inst.op);
        }
    }
    let results: HashSet<Value> = f.ret.iter().copied().collect();
    // Which values get a buffer.
    let mut materialize: HashMap<Value, bool> = HashMap::new();
    // How deep the kernel body builder recurses to compute each value (0 for a
    // value read from its buffer): bounded by MAX_FUSION_DEPTH, so planning
    // and code generation never recurse as deep as the program is long.
    let mut depth: HashMap<Value, usize> = HashMap::new();
    for &p in &f.params {
        materialize.insert(p, true);
    }
    for &i in &f.body {
        let inst = &f.insts[i];
        let v = inst.results[0];
        let no_uses = vec![];
        let uses = users.get(&v).unwrap_or(&no_uses);
        let d = 1 + inst.operands.iter().map(|o| depth.get(o).copied().unwrap_or(0)).max().unwrap_or(0);
        let def = inst.op.def();
        let need = !is_fusible(inst.op)
            || results.contains(&v)
            || uses.iter().any(|&u| !fuses_operands(u))
            || (uses.len() > 1 && !def.cheap)
            || (!def.cheap && uses.iter().any(|&u| u.def().replicates))
            || (inst.op == Opcode::Constant && inst.literal.as_ref().is_some_and(|l| !l.shape.is_empty()))
            || d >= MAX_FUSION_DEPTH;
        materialize.insert(v, need);
        depth.insert(v, if need { 0 } else { d });
        // Ops with several results (sort, top_k) are library steps: each
        // result gets a buffer.
        for &r in &inst.results[1..] {
            materialize.insert(r, true);
            depth.insert(r, 0);
        }
    }
    let mut total: u64 = 0;
    for (v, d) in f.values.iter() {
        let too_big = || Unplannable::TooBig(format!("unsupported: %{} ({}) needs more than 2^64 bytes per device", d.name, d.ty));
        let bytes = d.ty.checked_bytes().ok_or_else(too_big)?;
        if materialize.get(&v).copied().unwrap_or(false) {
            let aligned = crate::memory::aligned_size(bytes).ok_or_else(too_big)?;
            total = total.checked_add(aligned).ok_or_else(|| {
                Unplannable::TooBig(format!("unsupported: the buffers of @{} together need more than 2^64 bytes per device", f.name))
            })?;
        }
    }
    // The mesh axes `axis_index` reads, in order of first use: one buffer of
    // this device's indices along them, written by the backend.
    let mut axes: Vec<String> = vec![];
    for &i in &f.body {
        let inst = &f.insts[i];
        if inst.op == Opcode::AxisIndex {
            let a = Attrs::with_ranks(inst, &[]).ident("axis").map_err(|e| Unplannable::Construct {
                func: f.name.clone(),
                value: f.values[inst.results[0]].name.clone(),
                msg: e.0,
            })?;
            if !axes.contains(&a) {
                axes.push(a);
            }
        }
    }
    let mut p = Planner { f, buffers: vec![], steps: vec![], buffer_of: HashMap::new(), materialize, axes: axes.clone(), axis_buffer: None };
    let params: Vec<usize> = f
        .params
        .iter()
        .enumerate()
        .map(|(i, &v)| p.new_buffer(v, BufferKind::Param(i)))
        .collect();
    if !axes.is_empty() {
        let ty = TensorType::new(DType::I32, vec![axes.len() as u64]);
        p.axis_buffer = Some(p.temp_buffer("axis_indices", ty, BufferKind::AxisIndices(axes)));
    }
    for &i in &f.body {
        let inst = &f.insts[i];
        let v = inst.results[0];
        if !p.materialize[&v] {
            continue;
        }
        if inst.op == Opcode::Constant && inst.literal.as_ref().is_some_and(|l| !l.shape.is_empty()) {
            p.new_buffer(v, BufferKind::Constant(inst.literal.clone().unwrap()));
            continue;
        }
        let located = |e: PlanError| Unplannable::Construct { func: f.name.clone(), value: f.values[v].name.clone(), msg: e.0 };
        if inst.op.is_control() {
            p.control(inst).map_err(located)?;
            continue;
        }
        match inst.op.def().fusion {
            Fusion::Collective => {
                let input = p.buffer_of[&inst.operands[0]];
                let output = p.new_buffer(v, BufferKind::Temp);
                p.steps.push(Step::Collective { inst: inst.detached(), input, output, done: None });
            }
            Fusion::Library => {
                // Products read their operands in place: one that GEMM cannot
                // read with strides is first copied into (batch, rows, columns)
                // order by a kernel, and the product's dimensions follow.
                let (lib, inputs) = p.library_operands(inst).map_err(located)?;
                let outputs: Vec<usize> = inst.results.iter().map(|&r| p.new_buffer(r, BufferKind::Temp)).collect();
                let device = p.device_kernels(inst, &outputs).map_err(located)?;
                p.steps.push(Step::Library { inst: lib, inputs, outputs, device });
            }
            Fusion::MultiKernel => p.multi_kernel(inst).map_err(located)?,
            Fusion::Loop | Fusion::ReductionRoot => p
                .finish(v, |b, coords| match inst.op {
                    Opcode::Reduce => b.reduce(inst, coords),
                    Opcode::ReduceWindow => b.reduce_window(inst, coords),
                    _ => Ok((b.value_inst(inst, coords)?, None)),
                })
                .map_err(located)?,
            Fusion::Unplanned => unreachable!("rejected above"),
        }
    }
    let results = f.ret.iter().map(|v| p.buffer_of[v]).collect();
    Ok(Plan { name: f.name.clone(), buffers: p.buffers, steps: p.steps, params, results })
}

struct Planner<'a> {
    f: &'a Function,
    buffers: Vec<Buffer>,
    steps: Vec<Step>,
    buffer_of: HashMap<Value, usize>,
    materialize: HashMap<Value, bool>,
    /// The mesh axes of the `axis_indices` buffer, and that buffer.
    axes: Vec<String>,
    axis_buffer: Option<usize>,
}

/// Builds one kernel body.
struct Body<'a> {
    f: &'a Function,
    buffer_of: &'a HashMap<Value, usize>,
    materialize: &'a HashMap<Value, bool>,
    axes: &'a [String],
    axis_buffer: Option<usize>,
    nodes: Vec<Node>,
    types: Vec<DType>,
    inputs: Vec<BufferArg>,
    memo: HashMap<(Value, Vec<NodeId>), NodeId>,
    consts: HashMap<(i128, DType), NodeId>,
    fuses: Vec<String>,
    /// The values already named in `fuses`.
    fused: HashSet<Value>,
    /// Position in `inputs` of each buffer read.
    input_of: HashMap<usize, usize>,
}

/// What a body builder returns: the node stored (or combined, with the reduction).
type Built = (NodeId, Option<Reduction>);

impl<'a> Planner<'a> {
    fn new_buffer(&mut self, v: Value, kind: BufferKind) -> usize {
        let d = &self.f.values[v];
        let id = self.temp_buffer(&d.name.clone(), d.ty.clone(), kind);
        self.buffer_of.insert(v, id);
        id
    }

    /// A buffer that holds no PIR value (a temporary between the kernels of one op).
    fn temp_buffer(&mut self, name: &str, ty: TensorType, kind: BufferKind) -> usize {
        self.buffers.push(Buffer { name: name.to_string(), ty, kind });
        self.buffers.len() - 1
    }

    fn body(&self) -> Body<'_> {
        Body {
            f: self.f,
            buffer_of: &self.buffer_of,
            materialize: &self.materialize,
            axes: &self.axes,
            axis_buffer: self.axis_buffer,
            nodes: vec![],
            types: vec![],
            inputs: vec![],
            memo: HashMap::new(),
            consts: HashMap::new(),
            fuses: vec![],
            fused: HashSet::new(),
            input_of: HashMap::new(),
        }
    }

    /// A kernel over `shape` writing `output`: `build` gets the body and the
    /// output coordinates and returns the stored node (and the reduction).
    fn build(
        &self,
        name: String,
        shape: &[u64],
        output: BufferArg,
        value: Value,
        build: impl FnOnce(&mut Body, &[NodeId]) -> Result<Built, PlanError>,
    ) -> Result<Kernel, PlanError> {
        self.build_outputs(name, shape, vec![output], &[value], |b, c| {
            let (n, reduce) = build(b, c)?;
            Ok((vec![n], reduce))
        })
    }

    /// A kernel over `shape` writing several outputs of that shape (the
    /// results of one op, `values`): `build` returns one stored node per output.
    fn build_outputs(
        &self,
        name: String,
        shape: &[u64],
        outputs: Vec<BufferArg>,
        values: &[Value],
        build: impl FnOnce(&mut Body, &[NodeId]) -> Result<(Vec<NodeId>, Option<Reduction>), PlanError>,
    ) -> Result<Kernel, PlanError> {
        let mut b = self.body();
        let coords: Vec<NodeId> = (0..shape.len()).map(|k| b.push(Node::Coord(k), DType::I64)).collect();
        let (results, reduce) = build(&mut b, &coords)?;
        for &v in values {
            b.fuses.push(format!("%{}", self.f.values[v].name));
        }
        Ok(Kernel {
            name,
            shape: shape.to_vec(),
            reduce,
            inputs: b.inputs,
            outputs,
            nodes: b.nodes,
            types: b.types,
            results,
            fuses: b.fuses,
        })
    }

    fn kernel_name(&self, v: Value, suffix: &str) -> String {
        format!("k{}_{}{suffix}", self.steps.len(), sanitize(&self.f.values[v].name))
    }

    /// The kernel that writes value `v`'s own (new) buffer, pushed as the
    /// next step: an op's only kernel, or the last of a multi-kernel op's.
    fn finish(&mut self, v: Value, build: impl FnOnce(&mut Body, &[NodeId]) -> Result<Built, PlanError>) -> Result<(), PlanError> {
        let ty = self.f.values[v].ty.clone();
        // The output buffer comes after the body's inputs (its id is known
        // before building: the next one).
        let output = BufferArg { buffer: self.buffers.len(), dtype: ty.dtype };
        let k = self.build(self.kernel_name(v, ""), &ty.shape, output, v, build)?;
        self.new_buffer(v, BufferKind::Temp);
        self.steps.push(Step::Kernel(k));
        Ok(())
    }
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

fn row_major_strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

impl<'a> Body<'a> {
    fn push(&mut self, n: Node, t: DType) -> NodeId {
        self.nodes.push(n);
        self.types.push(t);
        self.nodes.len() - 1
    }
    fn int(&mut self, x: i128) -> NodeId {
        if let Some(&n) = self.consts.get(&(x, DType::I64)) {
            return n;
        }
        let n = self.push(Node::ConstInt(x, DType::I64), DType::I64);
        self.consts.insert((x, DType::I64), n);
        n
    }
    fn ix(&mut self, op: IndexOp, a: NodeId, b: NodeId) -> NodeId {
        self.push(Node::Index { op, a, b }, DType::I64)
    }
    fn ty(&self, v: Value) -> &'a TensorType {
        &self.f.values[v].ty
    }

    /// f16/bf16 ops compute in f32 and round once to the element type, per op
    /// (spec section 11), also inside fused chains.
    fn round_narrow(&mut self, n: NodeId, d: DType) -> NodeId {
        if matches!(d, DType::F16 | DType::BF16) {
            self.push(Node::Convert { x: n, to: d }, DType::F32)
        } else {
            n
        }
    }

    /// The linear row-major index of `coords` in `shape`.
    fn linear(&mut self, coords: &[NodeId], shape: &[u64]) -> NodeId {
        let strides = row_major_strides(shape);
        let mut acc = self.int(0);
        for (k, &c) in coords.iter().enumerate() {
            if shape[k] == 1 {
                continue;
            }
            let s = self.int(strides[k] as i128);
            let t = self.ix(IndexOp::Mul, c, s);
            acc = self.ix(IndexOp::Add, acc, t);
        }
        acc
    }

    /// Coordinates of linear index `lin` in `shape`.
    fn delinearize(&mut self, lin: NodeId, shape: &[u64]) -> Vec<NodeId> {
        let strides = row_major_strides(shape);
        (0..shape.len())
            .map(|k| {
                let s = self.int(strides[k] as i128);
                let q = self.ix(IndexOp::Div, lin, s);
                let n = self.int(shape[k] as i128);
                self.ix(IndexOp::Rem, q, n)
            })
            .collect()
    }

    /// 1 if 0 <= rel < n, else 0 (i64).
    fn in_range(&mut self, rel: NodeId, n: u64) -> NodeId {
        let zero = self.int(0);
        let neg = self.ix(IndexOp::Lt, rel, zero);
        let n = self.int(n as i128);
        let lt = self.ix(IndexOp::Lt, rel, n);
        let one = self_one(self);
        let ok_neg = self.ix(IndexOp::Sub, one, neg);
        self.ix(IndexOp::Mul, ok_neg, lt)
    }

    /// The product of two 0/1 flags (`None` is true).
    fn and_flag(&mut self, acc: Option<NodeId>, ok: NodeId) -> Option<NodeId> {
        Some(match acc {
            None => ok,
            Some(v) => self.ix(IndexOp::Mul, v, ok),
        })
    }

    /// Clamp an i64 node into [lo, hi].
    fn clamp(&mut self, x: NodeId, lo: i128, hi: i128) -> NodeId {
        let l = self.int(lo);
        let h = self.int(hi);
        let a = self.ix(IndexOp::Max, x, l);
        self.ix(IndexOp::Min, a, h)
    }

    /// An integer scalar value (an index operand) as i64.
    fn index_value(&mut self, v: Value) -> Result<NodeId, PlanError> {
        let x = self.value(v, &[])?;
        Ok(self.push(Node::Convert { x, to: DType::I64 }, DType::I64))
    }

    /// Element `index` of plan buffer `buffer` (of element type `dtype`).
    fn load_buffer(&mut self, buffer: usize, dtype: DType, index: NodeId) -> NodeId {
        let input = match self.input_of.get(&buffer) {
            Some(&i) => i,
            None => {
                self.inputs.push(BufferArg { buffer, dtype });
                self.input_of.insert(buffer, self.inputs.len() - 1);
                self.inputs.len() - 1
            }
        };
        self.push(Node::Load { input, index }, compute_type(dtype))
    }

    /// The node computing value `v` at `coords`.
    fn value(&mut self, v: Value, coords: &[NodeId]) -> Result<NodeId, PlanError> {
        let key = (v, coords.to_vec());
        if let Some(&n) = self.memo.get(&key) {
            return Ok(n);
        }
        let n = if self.materialize.get(&v).copied().unwrap_or(true) {
            let buffer = self.buffer_of[&v];
            let shape = self.ty(v).shape.clone();
            let index = self.linear(coords, &shape);
            self.load_buffer(buffer, self.ty(v).dtype, index)
        } else {
            let ValueDef::Result(i, _) = self.f.values[v].def else { unreachable!("parameters are materialized") };
            let inst = &self.f.insts[i];
            if self.fused.insert(v) {
                self.fuses.push(format!("%{}", self.f.values[v].name));
            }
            self.value_inst(inst, coords)?
        };
        self.memo.insert(key, n);
        Ok(n)
    }

    /// `inst`'s attributes, defaults applied.
    fn attrs<'i>(&self, inst: &'i InstData) -> Attrs<'i> {
        let tys: Vec<&TensorType> = inst.operands.iter().map(|&o| self.ty(o)).collect();
        Attrs::new(inst, &tys)
    }

    /// The node computing `inst`'s result at `coords` (fusible ops only).
    fn value_inst(&mut self, inst: &InstData, coords: &[NodeId]) -> Result<NodeId, PlanError> {
        let out = self.ty(inst.results[0]).clone();
        let ct = compute_type(out.dtype);
        let op = inst.op;
        let opnd = |k: usize| inst.operands[k];
        Ok(match op {
            Opcode::Constant => {
                let lit = inst.literal.as_ref().unwrap();
                match lit.elems[0] {
                    pjc_ir::Number::Int(i) if out.dtype.is_int() => self.push(Node::ConstInt(i, out.dtype), out.dtype),
                    pjc_ir::Number::Int(i) => self.push(Node::ConstFloat(i as f64, ct), ct),
                    pjc_ir::Number::Float(x) => self.push(Node::ConstFloat(x, ct), ct),
                    pjc_ir::Number::Bool(b) => self.push(Node::ConstBool(b), DType::Pred),
                }
            }
            Opcode::Iota => {
                let dim = self.attrs(inst).index("dim")?;
                self.push(Node::Convert { x: coords[dim], to: out.dtype }, ct)
            }
            Opcode::Compare => {
                let dir = self.attrs(inst).ident("dir")?;
                let dir = CmpDir::parse(&dir).ok_or_else(|| PlanError(format!("compare direction '{dir}'")))?;
                let a = self.value(opnd(0), coords)?;
                let b = self.value(opnd(1), coords)?;
                self.push(Node::Compare { dir, a, b }, DType::Pred)
            }
            Opcode::Select => {
                let pc: Vec<NodeId> = if self.ty(opnd(0)).is_scalar() { vec![] } else { coords.to_vec() };
                let c = self.value(opnd(0), &pc)?;
                let a = self.value(opnd(1), coords)?;
                let b = self.value(opnd(2), coords)?;
                self.push(Node::Select { cond: c, a, b }, ct)
            }
            Opcode::Clamp => {
                let lc: Vec<NodeId> = if self.ty(opnd(0)).is_scalar() { vec![] } else { coords.to_vec() };
                let hc: Vec<NodeId> = if self.ty(opnd(2)).is_scalar() { vec![] } else { coords.to_vec() };
                let lo = self.value(opnd(0), &lc)?;
                let x = self.value(opnd(1), coords)?;
                let hi = self.value(opnd(2), &hc)?;
                let m = self.push(Node::Binary { op: BinaryOp::Max, a: x, b: lo }, ct);
                self.push(Node::Binary { op: BinaryOp::Min, a: m, b: hi }, ct)
            }
            Opcode::Convert => {
                let x = self.value(opnd(0), coords)?;
                self.push(Node::Convert { x, to: out.dtype }, ct)
            }
            Opcode::BitcastConvert => {
                let x = self.value(opnd(0), coords)?;
                let from = self.ty(opnd(0)).dtype;
                self.push(Node::Bitcast { x, from, to: out.dtype }, ct)
            }
            _ if op.unary().is_some() => {
                let x = self.value(opnd(0), coords)?;
                let t = if op.def().rule == TypeRule::ElementwiseToPred { DType::Pred } else { ct };
                let n = self.push(Node::Unary { op: op.unary().unwrap(), x }, t);
                self.round_narrow(n, out.dtype)
            }
            _ if op.binary().is_some() => {
                let a = self.value(opnd(0), coords)?;
                let b = self.value(opnd(1), coords)?;
                let n = self.push(Node::Binary { op: op.binary().unwrap(), a, b }, ct);
                self.round_narrow(n, out.dtype)
            }
            Opcode::Broadcast => {
                let dims = self.attrs(inst).ints("dims")?;
                let src = self.ty(opnd(0)).clone();
                let zero = self.int(0);
                let c: Vec<NodeId> = dims
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| if src.shape[i] == 1 { zero } else { coords[d as usize] })
                    .collect();
                self.value(opnd(0), &c)?
            }
            Opcode::Reshape => {
                let src = self.ty(opnd(0)).shape.clone();
                let lin = self.linear(coords, &out.shape);
                let c = self.delinearize(lin, &src);
                self.value(opnd(0), &c)?
            }
            Opcode::Transpose => {
                let perm = self.attrs(inst).ints("perm")?;
                let mut c = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    c[p as usize] = coords[i];
                }
                self.value(opnd(0), &c)?
            }
            Opcode::Slice => {
                let (start, stride) = (self.attrs(inst).ints("start")?, self.attrs(inst).ints("stride")?);
                let mut c = vec![];
                for (k, &x) in coords.iter().enumerate() {
                    let s = self.int(stride[k] as i128);
                    let m = self.ix(IndexOp::Mul, x, s);
                    let o = self.int(start[k] as i128);
                    c.push(self.ix(IndexOp::Add, m, o));
                }
                self.value(opnd(0), &c)?
            }
            Opcode::Reverse => {
                let dims = self.attrs(inst).ints("dims")?;
                let mut c = coords.to_vec();
                for &d in &dims {
                    let n = self.int(out.shape[d as usize] as i128 - 1);
                    c[d as usize] = self.ix(IndexOp::Sub, n, coords[d as usize]);
                }
                self.value(opnd(0), &c)?
            }
            Opcode::Pad => {
                let (low, interior) = (self.attrs(inst).ints("low")?, self.attrs(inst).ints("interior")?);
                let src = self.ty(opnd(0)).shape.clone();
                let mut c = vec![];
                let mut valid: Option<NodeId> = None;
                for k in 0..coords.len() {
                    let lo = self.int(low[k] as i128);
                    let rel = self.ix(IndexOp::Sub, coords[k], lo);
                    let step = self.int(interior[k] as i128 + 1);
                    let q = self.ix(IndexOp::Div, rel, step);
                    let r = self.ix(IndexOp::Rem, rel, step);
                    // valid iff rel >= 0 (so q >= 0), q < n, and r == 0
                    let zero = self.int(0);
                    let neg = self.ix(IndexOp::Lt, rel, zero);
                    let one = self_one(self);
                    let ok_neg = self.ix(IndexOp::Sub, one, neg);
                    let in_q = self.in_range(q, src[k]);
                    let bad_r = self.ix(IndexOp::Min, r, one);
                    let ok_r = self.ix(IndexOp::Sub, one, bad_r);
                    let ok = self.ix(IndexOp::Mul, ok_neg, in_q);
                    let ok = self.ix(IndexOp::Mul, ok, ok_r);
                    valid = self.and_flag(valid, ok);
                    c.push(self.clamp(q, 0, src[k] as i128 - 1));
                }
                let x = self.value(opnd(0), &c)?;
                let pv = self.value(opnd(1), &[])?;
                match valid {
                    None => x,
                    Some(valid) => {
                        let one = self_one(self);
                        let cond = self.push(Node::Compare { dir: CmpDir::Eq, a: valid, b: one }, DType::Pred);
                        self.push(Node::Select { cond, a: x, b: pv }, ct)
                    }
                }
            }
            Opcode::Concat => {
                let dim = self.attrs(inst).index("dim")?;
                // Walk parts from the last: value = select(c < start_k, earlier, part_k).
                let mut starts = vec![];
                let mut acc = 0u64;
                for &o in &inst.operands {
                    starts.push(acc);
                    acc += self.ty(o).shape[dim];
                }
                let mut result: Option<NodeId> = None;
                for (k, &o) in inst.operands.iter().enumerate() {
                    let size = self.ty(o).shape[dim] as i128;
                    let s = self.int(starts[k] as i128);
                    let rel = self.ix(IndexOp::Sub, coords[dim], s);
                    let mut c = coords.to_vec();
                    c[dim] = self.clamp(rel, 0, size - 1);
                    let x = self.value(o, &c)?;
                    result = Some(match result {
                        None => x,
                        Some(prev) => {
                            let cond = self.push(Node::Compare { dir: CmpDir::Lt, a: coords[dim], b: s }, DType::Pred);
                            self.push(Node::Select { cond, a: prev, b: x }, ct)
                        }
                    });
                }
                result.unwrap()
            }
            Opcode::DynamicSlice => {
                let src = self.ty(opnd(0)).shape.clone();
                let mut c = vec![];
                for k in 0..coords.len() {
                    let s = self.index_value(inst.operands[1 + k])?;
                    let s = self.clamp(s, 0, (src[k] - out.shape[k]) as i128);
                    c.push(self.ix(IndexOp::Add, s, coords[k]));
                }
                self.value(opnd(0), &c)?
            }
            Opcode::DynamicUpdateSlice => {
                let upd = self.ty(opnd(1)).shape.clone();
                let mut uc = vec![];
                let mut inside: Option<NodeId> = None;
                for k in 0..coords.len() {
                    let s = self.index_value(inst.operands[2 + k])?;
                    let s = self.clamp(s, 0, (out.shape[k] - upd[k]) as i128);
                    let rel = self.ix(IndexOp::Sub, coords[k], s);
                    let ok = self.in_range(rel, upd[k]);
                    inside = self.and_flag(inside, ok);
                    uc.push(self.clamp(rel, 0, upd[k] as i128 - 1));
                }
                let u = self.value(opnd(1), &uc)?;
                let a = self.value(opnd(0), coords)?;
                match inside {
                    None => u,
                    Some(inside) => {
                        let one = self_one(self);
                        let cond = self.push(Node::Compare { dir: CmpDir::Eq, a: inside, b: one }, DType::Pred);
                        self.push(Node::Select { cond, a: u, b: a }, ct)
                    }
                }
            }
            Opcode::Gather => {
                let axis = self.attrs(inst).index("axis")?;
                let table = self.ty(opnd(0)).shape.clone();
                let ir = self.ty(opnd(1)).rank();
                let ic = coords[axis..axis + ir].to_vec();
                let raw = self.value(opnd(1), &ic)?;
                let idx = self.push(Node::Convert { x: raw, to: DType::I64 }, DType::I64);
                let idx = self.clamp(idx, 0, table[axis] as i128 - 1);
                let mut c = coords[..axis].to_vec();
                c.push(idx);
                c.extend_from_slice(&coords[axis + ir..]);
                self.value(opnd(0), &c)?
            }
            Opcode::AxisIndex => {
                let axis = self.attrs(inst).ident("axis")?;
                let (Some(buffer), Some(pos)) = (self.axis_buffer, self.axes.iter().position(|a| *a == axis)) else {
                    return Err(PlanError(format!("internal error: no axis index buffer for axis '{axis}'")));
                };
                let index = self.int(pos as i128);
                self.load_buffer(buffer, DType::I32, index)
            }
            op => return Err(PlanError(format!("unsupported: '{op}' cannot be fused into a loop kernel"))),
        })
    }

    /// A `reduce` kernel: output coords, then the reduced dims' coords.
    fn reduce(&mut self, inst: &InstData, out: &[NodeId]) -> Result<(NodeId, Option<Reduction>), PlanError> {
        let src = self.ty(inst.operands[0]).clone();
        let dims = self.attrs(inst).ints("dims")?;
        let kind = self.attrs(inst).reduce_kind()?;
        let mut c = vec![0; src.rank()];
        let (mut k, mut r) = (0, out.len());
        let mut rshape = vec![];
        for d in 0..src.rank() {
            if dims.contains(&(d as i64)) {
                c[d] = self.push(Node::Coord(r), DType::I64);
                rshape.push(src.shape[d]);
                r += 1;
            } else {
                c[d] = out[k];
                k += 1;
            }
        }
        let x = self.value(inst.operands[0], &c)?;
        Ok((x, Some(Reduction { shape: rshape, kind, acc: accumulator(src.dtype, kind) })))
    }

    /// A `reduce_window` kernel: output coords, then window coords; padding
    /// positions hold the kind's identity.
    fn reduce_window(&mut self, inst: &InstData, out: &[NodeId]) -> Result<(NodeId, Option<Reduction>), PlanError> {
        let src = self.ty(inst.operands[0]).clone();
        let window = self.attrs(inst).ints("window")?;
        let strides = self.attrs(inst).ints("strides")?;
        let padding = self.attrs(inst).pairs("padding")?;
        let kind = self.attrs(inst).reduce_kind()?;
        let (c, valid) = self.window_position(out, &src.shape, &strides, &padding);
        let x = self.value(inst.operands[0], &c)?;
        let ct = compute_type(src.dtype);
        let idn = self.identity(kind, src.dtype);
        let v = self.push(Node::Select { cond: valid, a: x, b: idn }, ct);
        let rshape = window.iter().map(|&w| w as u64).collect();
        Ok((v, Some(Reduction { shape: rshape, kind, acc: accumulator(src.dtype, kind) })))
    }
}

fn self_one(b: &mut Body) -> NodeId {
    b.int(1)
}

/// The accumulator type of a reduction: at least f32 for float sums and products.
fn accumulator(d: DType, kind: ReduceKind) -> DType {
    match (d, kind) {
        (DType::F16 | DType::BF16, _) => DType::F32,
        (d, _) => d,
    }
}
