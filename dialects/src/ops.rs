//! The op table: every PIR op (spec sections 7–9) declared once, as data.
//!
//! The parser looks ops up here by name, the printer prints attributes in the
//! order declared here and omits those equal to their default, and the
//! verifier checks operand counts, operand dtype classes, attribute kinds and
//! applies the result-type rule named here. The planner reads each op's
//! [`Fusion`] role and traits, sharding propagation its factor rule, and the
//! collectives their [`CollectiveKind`].
//!
//! Adding an elementwise op is one line in [`ops!`] below, built with `unary(..)`
//! or `binary(..)`: the macro also makes it a [`UnaryOp`] or [`BinaryOp`], whose
//! arithmetic `pjc-tensor` (the reference) and `pjc-codegen` (x86-64 and PTX)
//! match on exhaustively — so the compiler names every place that still needs
//! the new op's arithmetic, and no stage can fall through to a panic.

use crate::attr::{self, attr, req, AttrDef, AttrDefault as D, AttrKind as K};
use crate::dtype::DClass;
use crate::kinds::CollectiveKind;
use crate::sharding::{self as S, Custom, ShardingRule};

/// How many operands an op takes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Arity {
    Exactly(usize),
    AtLeast(usize),
}

/// How the result type is obtained.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum TypeRule {
    /// All operands share one type; the result has it.
    Elementwise,
    /// All operands share one type; the result is `pred` of that shape.
    ElementwiseToPred,
    /// The result type must be written; op-specific checks relate it to the operands.
    Written,
    /// Inferred by op-specific code (shape arithmetic from attributes).
    Inferred,
    /// The shape is inferred; a written result type may pick the dtype
    /// (`dot_general`, `convolution`: the result precision; `argmax`/`argmin`:
    /// i32 or i64).
    DtypeFromWritten,
    /// Given by the called function (`call`, `grad`, `vmap`) or the bodies
    /// (`while`, `scan`, `switch`); may have several results.
    Callee,
}

/// Which functions an op names, and where they sit in its text.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Callees {
    /// None.
    None,
    /// One: `call @f(%a)`, `grad`, `vmap`, `scan @step(%h, %xs)`.
    One,
    /// A condition and a body: `while @cond, @body(%a)`.
    CondBody,
    /// One or more branches after an index operand: `switch %i, @b0, @b1(%a)`.
    Branches,
}

impl TypeRule {
    /// Whether building the op needs (or may use) the written result type.
    pub fn uses_written_type(self) -> bool {
        matches!(self, TypeRule::Written | TypeRule::DtypeFromWritten)
    }
}

/// Where an op may appear.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Context {
    /// Anywhere.
    Any,
    /// Only in a `spmd func` (collectives, section 8).
    SpmdOnly,
}

/// What the fusion planner (`pjc-fusion`) makes of an op.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Fusion {
    /// Recomputed inside the loop kernel of each consumer, at the coordinates
    /// the consumer needs: elementwise arithmetic, and data movement as index
    /// arithmetic.
    Loop,
    /// The root of a reduction kernel, into which its loop-fusible producers fuse.
    ReductionRoot,
    /// A step of its own: a library routine over whole buffers (with the same
    /// computation as a generated kernel for devices without the routine).
    Library,
    /// Several generated kernels in sequence over stored operands, with
    /// temporaries between them (argmax/argmin: the extreme, then its first
    /// index; select_and_scatter_add: window maxima, selected positions, the
    /// scatter): the operands are stored so every kernel reads the same values.
    MultiKernel,
    /// A runtime collective.
    Collective,
    /// Never reaches the planner: calls are inlined and transforms expanded first.
    Unplanned,
}

/// Everything the front end and later passes know about one op.
#[derive(Copy, Clone, Debug)]
pub struct OpDef {
    /// Spelling in PIR text.
    pub name: &'static str,
    pub arity: Arity,
    /// Dtype class of the data operands (checked on operand 0, and on all operands for
    /// elementwise ops).
    pub operands: DClass,
    /// Attributes, in the order the printer writes them.
    pub attrs: &'static [AttrDef],
    pub rule: TypeRule,
    pub context: Context,
    /// Elementwise: result element i depends only on operand elements i.
    pub elementwise: bool,
    /// Takes a literal instead of operands (`constant`).
    pub literal: bool,
    /// Names a function (`call @f(...)`, `grad`, `vmap`) or bodies (control flow).
    pub callee: bool,
    /// Which functions it names (`Callees::None` exactly when `callee` is false).
    pub callees: Callees,
    /// Control flow (section 7.1): bodies run in a loop or by an index.
    pub control: bool,
    /// Expanded by the compiler before sharding (section 9).
    pub transform: bool,
    /// Which collective it is (section 8), if it is one.
    pub collective: Option<CollectiveKind>,
    /// The planner's treatment.
    pub fusion: Fusion,
    /// Cheap enough to recompute in every consumer (index work, constants,
    /// conversions): a value with several consumers stays fused.
    pub cheap: bool,
    /// Reads each operand element several times (broadcast-like): an
    /// expensive producer is stored rather than recomputed per read.
    pub replicates: bool,
    /// Factor rule for sharding propagation (see [`ShardingRule`]).
    pub sharding: ShardingRule,
    /// One line for documentation and `--help`-like listings.
    pub summary: &'static str,
}

const fn base(name: &'static str, summary: &'static str) -> OpDef {
    OpDef {
        name,
        arity: Arity::Exactly(1),
        operands: DClass::Any,
        attrs: &[],
        rule: TypeRule::Inferred,
        context: Context::Any,
        elementwise: false,
        literal: false,
        callee: false,
        callees: Callees::None,
        control: false,
        transform: false,
        collective: None,
        fusion: Fusion::Library,
        cheap: false,
        replicates: false,
        sharding: ShardingRule::Manual,
        summary,
    }
}

/// An elementwise op: fused into loop kernels, one factor per dimension.
const fn elementwise(d: OpDef) -> OpDef {
    OpDef { elementwise: true, fusion: Fusion::Loop, sharding: crate::sharding::ELEMENTWISE, ..d }
}

/// A one-operand elementwise op over the given dtype class: a [`UnaryOp`].
const fn unary(name: &'static str, operands: DClass, summary: &'static str) -> OpDef {
    elementwise(OpDef { operands, rule: TypeRule::Elementwise, ..base(name, summary) })
}

/// A [`UnaryOp`] whose result is `pred` (a test on each element).
const fn unary_test(name: &'static str, operands: DClass, summary: &'static str) -> OpDef {
    OpDef { rule: TypeRule::ElementwiseToPred, ..unary(name, operands, summary) }
}

/// A two-operand elementwise op over the given dtype class: a [`BinaryOp`].
const fn binary(name: &'static str, operands: DClass, summary: &'static str) -> OpDef {
    elementwise(OpDef { arity: Arity::Exactly(2), operands, rule: TypeRule::Elementwise, ..base(name, summary) })
}

const fn op(
    name: &'static str,
    arity: Arity,
    attrs: &'static [AttrDef],
    rule: TypeRule,
    sharding: ShardingRule,
    summary: &'static str,
) -> OpDef {
    OpDef { arity, attrs, rule, sharding, ..base(name, summary) }
}

/// Data movement the planner fuses as index arithmetic.
const fn index(d: OpDef) -> OpDef {
    OpDef { fusion: Fusion::Loop, ..d }
}

const fn collective(name: &'static str, kind: CollectiveKind, attrs: &'static [AttrDef], summary: &'static str) -> OpDef {
    OpDef { attrs, context: Context::SpmdOnly, collective: Some(kind), fusion: Fusion::Collective, ..base(name, summary) }
}

const fn calling(name: &'static str, attrs: &'static [AttrDef], transform: bool, summary: &'static str) -> OpDef {
    OpDef {
        arity: Arity::AtLeast(0),
        attrs,
        rule: TypeRule::Callee,
        callee: true,
        callees: Callees::One,
        transform,
        fusion: Fusion::Unplanned,
        sharding: if transform { ShardingRule::Transform } else { ShardingRule::Call },
        ..base(name, summary)
    }
}

/// Control flow (section 7.1): results typed by the bodies' signatures.
const fn control(name: &'static str, callees: Callees, attrs: &'static [AttrDef], summary: &'static str) -> OpDef {
    OpDef {
        arity: Arity::AtLeast(1),
        attrs,
        rule: TypeRule::Callee,
        callee: true,
        callees,
        control: true,
        fusion: Fusion::Unplanned,
        sharding: ShardingRule::ControlFlow,
        ..base(name, summary)
    }
}

const fn numeric(d: OpDef) -> OpDef {
    OpDef { operands: DClass::Numeric, ..d }
}

use Arity::{AtLeast, Exactly};
use DClass::{Any, Float, Int, IntOrPred, Numeric};
use TypeRule::{DtypeFromWritten, Inferred, Written};

const WINDOW: &[AttrDef] = &[
    req("window", K::IntList),
    attr("strides", K::IntList, D::Ones),
    attr("padding", K::PadList, D::ZeroPairs),
];

/// Declares the op table. Each entry `Variant = DEF;` becomes an [`Opcode`]
/// variant whose [`Opcode::def`] is `DEF`; an entry written `Variant =
/// unary(..)` or `unary_test(..)` is also a [`UnaryOp`], one written `Variant =
/// binary(..)` a [`BinaryOp`]. The entries are munched one at a time into the
/// three lists, then emitted together, so the enums keep declaration order.
macro_rules! ops {
    (@munch [$($all:tt)*] [$($un:ident)*] [$($bin:ident)*]) => {
        ops!(@emit [$($all)*] [$($un)*] [$($bin)*]);
    };
    (@munch [$($all:tt)*] [$($un:ident)*] [$($bin:ident)*] $variant:ident = unary($($a:tt)*); $($rest:tt)*) => {
        ops!(@munch [$($all)* $variant = unary($($a)*);] [$($un)* $variant] [$($bin)*] $($rest)*);
    };
    (@munch [$($all:tt)*] [$($un:ident)*] [$($bin:ident)*] $variant:ident = unary_test($($a:tt)*); $($rest:tt)*) => {
        ops!(@munch [$($all)* $variant = unary_test($($a)*);] [$($un)* $variant] [$($bin)*] $($rest)*);
    };
    (@munch [$($all:tt)*] [$($un:ident)*] [$($bin:ident)*] $variant:ident = binary($($a:tt)*); $($rest:tt)*) => {
        ops!(@munch [$($all)* $variant = binary($($a)*);] [$($un)*] [$($bin)* $variant] $($rest)*);
    };
    (@munch [$($all:tt)*] [$($un:ident)*] [$($bin:ident)*] $variant:ident = $def:expr; $($rest:tt)*) => {
        ops!(@munch [$($all)* $variant = $def;] [$($un)*] [$($bin)*] $($rest)*);
    };
    (@emit [$( $variant:ident = $def:expr; )*] [$($un:ident)*] [$($bin:ident)*]) => {
        /// Every PIR op. The declaration of each is [`Opcode::def`].
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        pub enum Opcode { $( $variant, )* }

        impl Opcode {
            /// Every op, in declaration order.
            pub const ALL: &'static [Opcode] = &[ $( Opcode::$variant, )* ];

            /// The op's declaration.
            pub fn def(self) -> &'static OpDef {
                match self { $( Opcode::$variant => { const DEF: OpDef = $def; &DEF } )* }
            }

            /// The op as a [`UnaryOp`], if it is one.
            pub fn unary(self) -> Option<UnaryOp> {
                match self { $( Opcode::$un => Some(UnaryOp::$un), )* _ => None }
            }

            /// The op as a [`BinaryOp`], if it is one.
            pub fn binary(self) -> Option<BinaryOp> {
                match self { $( Opcode::$bin => Some(BinaryOp::$bin), )* _ => None }
            }
        }

        /// The one-operand elementwise arithmetic ops (the table's `unary`
        /// entries): what a kernel's `Unary` node computes. Code that gives their
        /// arithmetic matches on this enum exhaustively.
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
        pub enum UnaryOp { $( $un, )* }

        impl UnaryOp {
            pub const ALL: &'static [UnaryOp] = &[ $( UnaryOp::$un, )* ];
            pub fn opcode(self) -> Opcode {
                match self { $( UnaryOp::$un => Opcode::$un, )* }
            }
        }

        /// The two-operand elementwise arithmetic ops (the table's `binary`
        /// entries): what a kernel's `Binary` node computes.
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
        pub enum BinaryOp { $( $bin, )* }

        impl BinaryOp {
            pub const ALL: &'static [BinaryOp] = &[ $( BinaryOp::$bin, )* ];
            pub fn opcode(self) -> Opcode {
                match self { $( BinaryOp::$bin => Opcode::$bin, )* }
            }
        }
    };
    ($($entries:tt)*) => {
        ops!(@munch [] [] [] $($entries)*);
    };
}

ops! {
    // ---- section 7: creation -------------------------------------------------------
    Constant = index(OpDef { arity: Exactly(0), rule: Written, literal: true, cheap: true, sharding: S::SOURCE, ..base("constant", "an array filled from a literal") });
    Iota = index(OpDef { arity: Exactly(0), attrs: &[req("dim", K::Int)], rule: Written, cheap: true, sharding: S::SOURCE, ..base("iota", "the index along one dimension") });

    // ---- section 7: unary elementwise ---------------------------------------------
    Neg = unary("neg", Numeric, "negation (wraps for integers)");
    Abs = unary("abs", Numeric, "absolute value");
    Exp = unary("exp", Float, "e to the x");
    Log = unary("log", Float, "natural logarithm");
    Log1p = unary("log1p", Float, "log(1 + x), accurate near 0");
    Expm1 = unary("expm1", Float, "exp(x) - 1, accurate near 0");
    Sqrt = unary("sqrt", Float, "square root");
    Rsqrt = unary("rsqrt", Float, "1 / sqrt(x)");
    Tanh = unary("tanh", Float, "hyperbolic tangent");
    Logistic = unary("logistic", Float, "1 / (1 + exp(-x))");
    Erf = unary("erf", Float, "the error function");
    Sin = unary("sin", Float, "sine");
    Cos = unary("cos", Float, "cosine");
    Floor = unary("floor", Float, "round toward -inf");
    Ceil = unary("ceil", Float, "round toward +inf");
    Round = unary("round", Float, "round half away from zero");
    RoundEven = unary("round_even", Float, "round half to even");
    Sign = unary("sign", Numeric, "-1, 0 or 1 (keeps -0.0 and NaN)");
    Not = unary("not", IntOrPred, "logical not (pred) or bitwise not (integers)");
    IsFinite = unary_test("is_finite", Float, "true where x is neither inf nor NaN");

    // ---- section 7: binary elementwise --------------------------------------------
    Add = binary("add", Any, "sum (or for pred)");
    Sub = binary("sub", Numeric, "difference");
    Mul = binary("mul", Any, "product (and for pred)");
    Div = binary("div", Numeric, "quotient (integers truncate toward zero)");
    Rem = binary("rem", Numeric, "remainder with the dividend's sign (C fmod)");
    Max = binary("max", Any, "maximum (propagates NaN, -0.0 < +0.0)");
    Min = binary("min", Any, "minimum (propagates NaN, -0.0 < +0.0)");
    Pow = binary("pow", Numeric, "x to the y");
    Atan2 = binary("atan2", Float, "arc tangent of y/x using both signs");
    And = binary("and", IntOrPred, "logical or bitwise and");
    Or = binary("or", IntOrPred, "logical or bitwise or");
    Xor = binary("xor", IntOrPred, "logical or bitwise exclusive or");
    Shl = binary("shl", Int, "shift left");
    Shr = binary("shr", Int, "shift right (arithmetic for signed, logical for unsigned)");

    // ---- section 7: other elementwise ---------------------------------------------
    Clamp = elementwise(OpDef { arity: Exactly(3), operands: Any, ..base("clamp", "min(max(x, lo), hi)") });
    Compare = elementwise(OpDef { arity: Exactly(2), attrs: &[req("dir", K::Enum(attr::COMPARE_DIRS))], rule: TypeRule::ElementwiseToPred, ..base("compare", "elementwise comparison giving pred") });
    Select = elementwise(OpDef { arity: Exactly(3), ..base("select", "pick from the second or third operand by a pred") });
    Convert = elementwise(OpDef { rule: Written, cheap: true, ..base("convert", "change the dtype") });
    BitcastConvert = elementwise(OpDef { rule: Written, cheap: true, ..base("bitcast_convert", "reinterpret the bits as another dtype of the same width") });

    // ---- section 7: shape ops -----------------------------------------------------
    Broadcast = OpDef { cheap: true, replicates: true, ..index(op("broadcast", Exactly(1), &[attr("dims", K::IntList, D::EmptyList)], Written, S::BROADCAST, "operand dim i goes to result dim dims[i]")) };
    Reshape = OpDef { cheap: true, ..index(op("reshape", Exactly(1), &[], Written, ShardingRule::Custom(Custom::Reshape), "same elements, new shape (row-major)")) };
    Transpose = OpDef { cheap: true, ..index(op("transpose", Exactly(1), &[req("perm", K::IntList)], Inferred, S::TRANSPOSE, "result dim i is operand dim perm[i]")) };
    Slice = OpDef { cheap: true, ..index(op("slice", Exactly(1), &[req("start", K::IntList), req("limit", K::IntList), attr("stride", K::IntList, D::Ones)], Inferred, S::SLICE, "a strided rectangular piece")) };
    Concat = index(op("concat", AtLeast(1), &[req("dim", K::Dim)], Inferred, S::CONCAT, "join along one dimension"));
    DynamicSlice = OpDef { replicates: true, ..index(op("dynamic_slice", AtLeast(1), &[req("sizes", K::IntList)], Inferred, S::SLICE, "a piece at run-time start indices (clamped)")) };
    DynamicUpdateSlice = index(op("dynamic_update_slice", AtLeast(2), &[], Inferred, S::DYNAMIC_UPDATE_SLICE, "overwrite a piece at run-time start indices (clamped)"));
    Pad = OpDef { replicates: true, ..index(op("pad", Exactly(2), &[req("low", K::IntList), req("high", K::IntList), attr("interior", K::IntList, D::Zeros)], Inferred, S::PAD, "edge and interior padding with a scalar")) };
    Reverse = OpDef { cheap: true, ..index(op("reverse", Exactly(1), &[req("dims", K::DimList)], Inferred, S::REVERSE, "reverse the order along dims")) };

    // ---- section 7: reductions and contractions -----------------------------------
    Reduce = OpDef { fusion: Fusion::ReductionRoot, ..op("reduce", Exactly(1), &[req("dims", K::DimList), req("kind", K::Enum(attr::REDUCE_KINDS))], Inferred, S::REDUCE, "reduce over dims, removing them") };
    Argmax = OpDef { fusion: Fusion::MultiKernel, ..op("argmax", Exactly(1), &[req("dim", K::Dim)], DtypeFromWritten, S::ARG_REDUCE, "index of the first maximum along dim") };
    Argmin = OpDef { fusion: Fusion::MultiKernel, ..op("argmin", Exactly(1), &[req("dim", K::Dim)], DtypeFromWritten, S::ARG_REDUCE, "index of the first minimum along dim") };
    DotGeneral = numeric(op("dot_general", Exactly(2), &[
        attr("lhs_batch", K::IntList, D::EmptyList), attr("rhs_batch", K::IntList, D::EmptyList),
        attr("lhs_contract", K::IntList, D::EmptyList), attr("rhs_contract", K::IntList, D::EmptyList),
    ], DtypeFromWritten, S::DOT, "batched tensor contraction: batch, lhs free, rhs free"));
    Convolution = numeric(op("convolution", Exactly(2), &[
        req("dims", K::Str),
        attr("window_strides", K::IntList, D::Ones),
        attr("padding", K::PadList, D::ZeroPairs),
        attr("lhs_dilation", K::IntList, D::Ones),
        attr("rhs_dilation", K::IntList, D::Ones),
        attr("feature_group_count", K::Int, D::Int(1)),
        attr("batch_group_count", K::Int, D::Int(1)),
    ], DtypeFromWritten, ShardingRule::Custom(Custom::Convolution), "N-d convolution with XLA dimension labels"));
    ReduceWindow = OpDef { fusion: Fusion::ReductionRoot, replicates: true, ..numeric(op("reduce_window", Exactly(1), &[
        req("kind", K::Enum(attr::WINDOW_KINDS)),
        req("window", K::IntList),
        attr("strides", K::IntList, D::Ones),
        attr("padding", K::PadList, D::ZeroPairs),
    ], Inferred, S::window(0), "sliding-window reduction (pooling)")) };
    SelectAndScatterAdd = OpDef { fusion: Fusion::MultiKernel, ..numeric(op("select_and_scatter_add", Exactly(2), WINDOW, Inferred, S::window(1), "gradient of max pooling")) };
    Gather = OpDef { replicates: true, ..index(op("gather", Exactly(2), &[req("axis", K::Dim)], Inferred, ShardingRule::Custom(Custom::Gather), "numpy take along one axis (indices clamped)")) };
    ScatterAdd = op("scatter_add", Exactly(3), &[req("axis", K::Dim)], Inferred, ShardingRule::Custom(Custom::ScatterAdd), "add updates into base at indices along one axis");
    Scatter = op("scatter", Exactly(3), &[req("axis", K::Dim), req("kind", K::Enum(attr::SCATTER_KINDS))], Inferred, ShardingRule::Custom(Custom::ScatterAdd), "combine updates into base at indices along one axis (set: the last duplicate wins)");
    Sort = op("sort", AtLeast(1), &[req("dim", K::Dim), attr("num_keys", K::Int, D::Int(1)), attr("descending", K::Bool, D::Bool(false))], Inferred, S::SORT, "stable sort of one or more same-shaped operands along dim by the first num_keys");
    TopK = op("top_k", Exactly(1), &[req("k", K::Int)], Inferred, S::TOP_K, "the k largest along the last dim, largest first, and their i32 indices");

    // ---- section 7.1: control flow ------------------------------------------------
    While = control("while", Callees::CondBody, &[], "c = init; while cond(c): c = body(c)");
    Scan = control("scan", Callees::One, &[req("length", K::Int), req("carries", K::Int), attr("reverse", K::Bool, D::Bool(false))], "loop a step over dim 0 of the scanned operands, stacking its outputs (JAX lax.scan)");
    Switch = control("switch", Callees::Branches, &[], "call the branch the clamped index names (JAX lax.switch)");

    // ---- section 8: collectives (spmd func only) ----------------------------------
    AllReduce = collective("all_reduce", CollectiveKind::AllReduce, &[req("axes", K::AxisList), req("kind", K::Enum(attr::COLLECTIVE_KINDS))], "reduce over a device group; every member gets the result");
    AllGather = collective("all_gather", CollectiveKind::AllGather, &[req("axes", K::AxisList), req("dim", K::Dim)], "concatenate the group's shards along dim");
    ReduceScatter = collective("reduce_scatter", CollectiveKind::ReduceScatter, &[req("axes", K::AxisList), req("dim", K::Dim), req("kind", K::Enum(attr::COLLECTIVE_KINDS))], "reduce over the group, keep this device's slice of dim");
    AllToAll = collective("all_to_all", CollectiveKind::AllToAll, &[req("axes", K::AxisList), req("split_dim", K::Dim), req("concat_dim", K::Dim)], "exchange chunks of split_dim, concatenated along concat_dim");
    CollectivePermute = collective("collective_permute", CollectiveKind::CollectivePermute, &[req("axes", K::AxisList), req("shift", K::Int)], "send to the group position shift places ahead");
    AxisIndex = OpDef { arity: Exactly(0), attrs: &[req("axis", K::Axis)], rule: Written, context: Context::SpmdOnly, fusion: Fusion::Loop, cheap: true, ..base("axis_index", "this device's position along a mesh axis") };

    // ---- section 5 and 9: calls and transforms ------------------------------------
    Call = calling("call", &[], false, "call a function of the module");
    Grad = calling("grad", &[req("wrt", K::IntList)], true, "value and gradients of a scalar function (JAX value_and_grad)");
    Vmap = calling("vmap", &[req("in_dims", K::DimOrNoneList), req("out_dims", K::IntList)], true, "map a function over a new dimension (JAX vmap)");
}

impl Opcode {
    /// Look an op up by its spelling.
    pub fn from_name(name: &str) -> Option<Opcode> {
        Opcode::ALL.iter().copied().find(|o| o.def().name == name)
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    pub fn is_collective(self) -> bool {
        self.def().collective.is_some()
    }

    /// The collective it is, if it is one.
    pub fn collective(self) -> Option<CollectiveKind> {
        self.def().collective
    }

    /// `call`, `grad` or `vmap`: names a function, results from its signature.
    pub fn is_call_like(self) -> bool {
        self.def().callee
    }

    /// `while`, `scan` or `switch` (section 7.1).
    pub fn is_control(self) -> bool {
        self.def().control
    }

    /// `grad` or `vmap`: expanded before sharding, partitioning and planning.
    pub fn is_transform(self) -> bool {
        self.def().transform
    }
}

impl CollectiveKind {
    /// The collective's op.
    pub fn opcode(self) -> Opcode {
        match self {
            CollectiveKind::AllReduce => Opcode::AllReduce,
            CollectiveKind::AllGather => Opcode::AllGather,
            CollectiveKind::ReduceScatter => Opcode::ReduceScatter,
            CollectiveKind::AllToAll => Opcode::AllToAll,
            CollectiveKind::CollectivePermute => Opcode::CollectivePermute,
        }
    }
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        self.opcode().name()
    }
    pub fn def(self) -> &'static OpDef {
        self.opcode().def()
    }
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        self.opcode().name()
    }
    pub fn def(self) -> &'static OpDef {
        self.opcode().def()
    }
}

impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for UnaryOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for &o in Opcode::ALL {
            assert_eq!(Opcode::from_name(o.name()), Some(o), "{o:?}");
        }
    }

    #[test]
    fn attribute_names_are_unique_per_op() {
        for &o in Opcode::ALL {
            let a = o.def().attrs;
            for i in 0..a.len() {
                for j in 0..i {
                    assert_ne!(a[i].name, a[j].name, "{o}");
                }
            }
        }
    }

    #[test]
    fn every_op_has_a_sharding_rule() {
        // Manual is only right for ops that exist only in spmd funcs.
        for &o in Opcode::ALL {
            let d = o.def();
            assert_eq!(
                d.sharding == ShardingRule::Manual,
                d.context == Context::SpmdOnly,
                "{o} has sharding rule {:?}",
                d.sharding
            );
            assert_eq!(d.sharding == ShardingRule::Transform, d.transform, "{o}");
            assert_eq!(d.sharding == ShardingRule::ControlFlow, d.control, "{o}");
            assert_eq!(d.callee, d.callees != Callees::None, "{o}");
            if d.elementwise {
                assert_eq!(d.sharding, S::ELEMENTWISE, "{o}");
            }
        }
        assert_eq!(Opcode::DotGeneral.def().sharding, S::DOT);
    }

    #[test]
    fn declared_rules_name_declared_attributes_and_groups() {
        use crate::sharding::{DimTest, Dims, Otherwise, Tensor};
        for &o in Opcode::ALL {
            let d = o.def();
            let has = |a: &str| assert!(d.attrs.iter().any(|x| x.name == a), "{o}'s rule reads undeclared attribute '{a}'");
            let operands = match d.arity {
                Exactly(n) | AtLeast(n) => n,
            };
            let tensor = |t: Tensor| {
                if let Tensor::Operand(k) = t {
                    assert!(k < operands.max(1), "{o}'s rule names operand {k}");
                }
            };
            match d.sharding {
                ShardingRule::Einsum(e) => {
                    assert_eq!(e.operands.len(), operands, "{o}: one Dims per operand");
                    assert_eq!(e.results.len(), 1, "{o}");
                    let letters: Vec<char> = e.groups.iter().map(|g| g.letter).collect();
                    for dims in e.operands.iter().chain(e.results) {
                        let used: Vec<char> = match dims {
                            Dims::All(c) => vec![*c],
                            Dims::Seq(cs) => cs.to_vec(),
                            Dims::Placed { at, rest } => {
                                for (_, p) in at.iter() {
                                    has(p.attr());
                                }
                                at.iter().map(|x| x.0).chain(*rest).collect()
                            }
                        };
                        for c in used {
                            assert!(letters.contains(&c), "{o}: group {c} is not declared");
                        }
                    }
                    let reductions = e.groups.iter().any(|g| g.kind == crate::sharding::FactorKind::Reduction);
                    assert_eq!(reductions, e.reduction.is_some(), "{o}: reduction groups need a Reduction");
                }
                ShardingRule::PerDim(p) => {
                    match p.pass {
                        DimTest::NotAt(a) | DimTest::NotIn(a) => has(a),
                        DimTest::Zero(attrs) => attrs.iter().for_each(|a| has(a)),
                        DimTest::TrivialWindow => ["window", "strides", "padding"].iter().for_each(|a| has(a)),
                        DimTest::SameSize(a, b) => {
                            tensor(a);
                            tensor(b);
                        }
                        DimTest::Always | DimTest::NotLast => {}
                    }
                    match p.otherwise {
                        Otherwise::Permutation { sized_by } => tensor(Tensor::Operand(sized_by)),
                        Otherwise::NeedReplication { shared } => shared.iter().for_each(|&t| tensor(t)),
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn unary_and_binary_ops_are_the_plain_elementwise_ones() {
        for &o in Opcode::ALL {
            let d = o.def();
            if let Some(u) = o.unary() {
                assert_eq!(u.opcode(), o);
                assert!(d.elementwise && d.arity == Exactly(1), "{o}");
                assert!(matches!(d.rule, TypeRule::Elementwise | TypeRule::ElementwiseToPred), "{o}");
            }
            if let Some(b) = o.binary() {
                assert_eq!(b.opcode(), o);
                assert!(d.elementwise && d.arity == Exactly(2) && d.rule == TypeRule::Elementwise, "{o}");
            }
        }
        assert_eq!(UnaryOp::ALL.len() + BinaryOp::ALL.len(), 34);
        assert_eq!(Opcode::IsFinite.unary(), Some(UnaryOp::IsFinite));
        assert_eq!(Opcode::Compare.binary(), None);
    }

    #[test]
    fn fusion_roles_agree_with_the_other_declarations() {
        for &o in Opcode::ALL {
            let d = o.def();
            assert_eq!(d.fusion == Fusion::Collective, d.collective.is_some(), "{o}");
            assert_eq!(d.fusion == Fusion::Unplanned, d.callee, "{o}");
            if d.elementwise {
                assert_eq!(d.fusion, Fusion::Loop, "{o}");
            }
            if d.cheap {
                assert_eq!(d.fusion, Fusion::Loop, "{o}: only fused ops are recomputed");
            }
        }
        for k in CollectiveKind::ALL {
            assert_eq!(k.opcode().collective(), Some(k));
        }
        assert!(Opcode::Grad.is_transform() && Opcode::Grad.is_call_like() && !Opcode::Call.is_transform());
    }

    #[test]
    fn written_rule_ops_match_the_spec_list() {
        // Spec section 7: the result type is required for exactly these ops.
        let mut written: Vec<&str> =
            Opcode::ALL.iter().filter(|o| o.def().rule == TypeRule::Written).map(|o| o.name()).collect();
        written.sort();
        assert_eq!(
            written,
            ["axis_index", "bitcast_convert", "broadcast", "constant", "convert", "iota", "reshape"]
        );
    }
}
