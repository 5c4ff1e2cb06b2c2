//! How the CUDA backend runs a `convolution` library step through cuDNN
//! (legacy API: `cudnnConvolution{Forward,BackwardData,BackwardFilter}` on
//! Nd tensor and filter descriptors), decided from the step alone, like
//! XLA's GPU convolution rewriter: the PIR convolution is pattern-matched
//! onto one of cuDNN's three operations by reading its attributes.
//!
//! - **Forward**: no input (`lhs`) dilation and no batch groups. cuDNN's x is
//!   the input (`b` → N, `f` → C), w the kernel (`o` → K, `i` → C/G), y the
//!   result; strides, kernel dilation and feature groups as they are.
//! - **Backward data** (the input gradient JAX writes: input dilated by the
//!   forward stride, a reversed kernel with swapped features): some
//!   `lhs_dilation` > 1 with unit window strides and no batch groups. cuDNN's
//!   dy is the input, dx the result, cuDNN's stride is `lhs_dilation`, its
//!   padding `rhs_dilation·(R-1) - lo`, and the kernel is read in
//!   `CUDNN_CONVOLUTION` mode (cuDNN flips it back: no reversing copy). With
//!   feature groups the kernel is copied into cuDNN's `[K, C/G, ..]` order.
//! - **Backward filter** (the kernel gradient JAX writes: input batch and
//!   feature swapped, the output gradient as the kernel, forward stride as
//!   `rhs_dilation`, forward dilation as `window_strides`, forward feature
//!   groups as `batch_group_count`): a convolution that does not look like a
//!   forward one (XLA's test: batch, output features and a kernel no larger
//!   than the output) and has no feature groups.
//!
//! cuDNN takes symmetric, non-negative padding and checks that the output
//! size follows from the input's. Where a PIR padding does not fit, the
//! input is copied into a zeroed window of the step's scratch (explicit
//! padding; negative padding crops), or the backward-data result is
//! computed one position longer and cropped, as XLA's padding legalization
//! does. Tensors are passed with their strides when they are packed NCHW or
//! NHWC (any `dims` order that is one of these); otherwise, and for a filter
//! not packed as `[K, C/G, ..]` or `[K, .., C/G]`, they are copied into the
//! scratch (`cudnnTransformTensor`) before or after the call. 1-D
//! convolutions get a unit spatial dimension (cuDNN wants 2 or 3).
//!
//! Not mapped (the step runs its generated device kernel, as when libcudnn is
//! absent): integer dtypes, a result dtype other than the operands'
//! (bf16 × bf16 → f32), more than 3 spatial dims, empty operands, backward
//! data with window strides, batch groups, a negative cuDNN padding or a
//! high padding longer than the stride allows, batch groups in a forward
//! convolution, and (rather than a wrong mapping) any size over `i32`.
//!
//! One numeric difference (shared with XLA on GPUs): cuDNN skips padding and
//! dilation holes, where the spec multiplies them by the kernel (0 × inf is
//! NaN there, 0 on cuDNN).
//!
//! [`emulate`] computes what cuDNN would from a mapping, on the host: the
//! tests run it against the reference convolution for every attribute
//! family of the repository's programs.

use pjc_ir::{Attrs, DType, InstData, Opcode, TensorType};

/// Which cuDNN operation a convolution step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvKind {
    /// y = conv(x, w).
    Forward,
    /// dx from dy and w.
    BackwardData,
    /// dw from x and dy.
    BackwardFilter,
}

impl ConvKind {
    /// The cuDNN routine.
    pub fn routine(self) -> &'static str {
        match self {
            ConvKind::Forward => "ConvolutionForward",
            ConvKind::BackwardData => "ConvolutionBackwardData",
            ConvKind::BackwardFilter => "ConvolutionBackwardFilter",
        }
    }
}

/// Where a view's elements live: one of the step's buffers or its scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Lhs,
    Rhs,
    Out,
    Scratch,
}

/// A strided view: element `idx` at `offset + Σ idx[d]·strides[d]` of `place`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub place: Place,
    pub offset: usize,
    pub dims: Vec<usize>,
    pub strides: Vec<usize>,
}

/// A `cudnnTransformTensor` copy between two views of equal dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copy {
    pub src: View,
    pub dst: View,
}

/// One convolution step as cuDNN runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudnnConv {
    pub kind: ConvKind,
    /// The dtype of every operand (f32, f64, f16, bf16); computation in f64
    /// for f64, else f32.
    pub dtype: DType,
    /// `CUDNN_CONVOLUTION` (the filter read flipped) rather than
    /// `CUDNN_CROSS_CORRELATION`.
    pub flip: bool,
    pub groups: usize,
    /// Per cuDNN spatial dim (2 or 3 of them).
    pub pad: Vec<usize>,
    pub stride: Vec<usize>,
    pub dilation: Vec<usize>,
    /// x `[N, C, spatial..]`, w `[K, C/G, spatial..]`, y `[N, K, spatial..]`,
    /// each packed in `nhwc` (true: channels last) or NCHW order.
    pub x: View,
    pub w: View,
    pub y: View,
    pub nhwc: bool,
    /// Elements of scratch the copies use.
    pub scratch: usize,
    /// Whether the scratch is zeroed before the copies in (explicit padding).
    pub zero_scratch: bool,
    /// Copies into the scratch before the call, and out of it after.
    pub before: Vec<Copy>,
    pub after: Vec<Copy>,
}

impl std::fmt::Display for CudnnConv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(
            f,
            "cuDNN {}{} {} {} x=[{}] w=[{}] y=[{}] pad=[{}] stride=[{}] dilation=[{}]",
            self.kind.routine(),
            if self.flip { " (flipped filter)" } else { "" },
            self.dtype,
            if self.nhwc { "NHWC" } else { "NCHW" },
            list(&self.x.dims),
            list(&self.w.dims),
            list(&self.y.dims),
            list(&self.pad),
            list(&self.stride),
            list(&self.dilation)
        )?;
        if self.groups > 1 {
            write!(f, " groups={}", self.groups)?;
        }
        if !self.before.is_empty() || !self.after.is_empty() {
            write!(f, " +{} copies", self.before.len() + self.after.len())?;
        }
        Ok(())
    }
}

fn row_major(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Packed strides of `dims` ([A, B, spatial..]) in NCHW or NHWC order.
fn packed(dims: &[usize], nhwc: bool) -> Vec<usize> {
    let order: Vec<usize> = if nhwc {
        std::iter::once(0)
            .chain(2..dims.len())
            .chain(std::iter::once(1))
            .collect()
    } else {
        (0..dims.len()).collect()
    };
    let mut st = vec![0; dims.len()];
    let mut acc = 1;
    for &d in order.iter().rev() {
        st[d] = acc;
        acc *= dims[d];
    }
    st
}

/// Whether `v` is packed in that order (strides of unit dims are free).
fn is_packed(v: &View, nhwc: bool) -> bool {
    let p = packed(&v.dims, nhwc);
    v.dims
        .iter()
        .zip(&v.strides)
        .zip(&p)
        .all(|((&n, &s), &q)| n <= 1 || s == q)
}

/// The view of buffer `place` (of `shape`) with cuDNN dims at positions
/// `a`, `b`, then `sp`.
fn view(place: Place, shape: &[usize], a: usize, b: usize, sp: &[usize]) -> View {
    let st = row_major(shape);
    let pos: Vec<usize> = [a, b].into_iter().chain(sp.iter().copied()).collect();
    View {
        place,
        offset: 0,
        dims: pos.iter().map(|&p| shape[p]).collect(),
        strides: pos.iter().map(|&p| st[p]).collect(),
    }
}

/// How the input window of one spatial dim reaches cuDNN (forward and
/// backward filter, where the input is read at `o·s + r·d - lo`).
enum Window {
    /// The input as it is, with symmetric padding `p`.
    Direct(usize),
    /// The input positions `[start, start + len)` (negative: zeros), copied
    /// into the scratch; cuDNN padding 0.
    Explicit { start: i64, len: usize },
}

/// `size` input positions, padding `(lo, hi)`, and `slack`: the positions at
/// the high end that no window reaches (`(padded - window) mod stride`).
fn window(size: usize, lo: i64, hi: i64, slack: i64, stride: usize) -> Window {
    let spare = slack + lo - hi;
    if lo >= 0 && spare >= 0 && spare < stride as i64 {
        Window::Direct(lo as usize)
    } else {
        Window::Explicit {
            start: -lo,
            len: (size as i64 + lo + hi - slack) as usize,
        }
    }
}

struct Builder {
    nhwc: bool,
    scratch: usize,
    zero_scratch: bool,
    before: Vec<Copy>,
    after: Vec<Copy>,
}

impl Builder {
    fn stage(&mut self, dims: &[usize]) -> View {
        let v = View {
            place: Place::Scratch,
            offset: self.scratch,
            strides: packed(dims, self.nhwc),
            dims: dims.to_vec(),
        };
        self.scratch += dims.iter().product::<usize>();
        v
    }

    /// `v` as cuDNN reads or writes it: itself when packed, else a scratch
    /// copy (made before the call for an input, copied back after it for the
    /// result).
    fn operand(&mut self, v: View, written: bool) -> View {
        if is_packed(&v, self.nhwc) {
            let strides = packed(&v.dims, self.nhwc);
            return View { strides, ..v };
        }
        let s = self.stage(&v.dims);
        let c = if written {
            Copy {
                src: s.clone(),
                dst: v,
            }
        } else {
            Copy {
                src: v,
                dst: s.clone(),
            }
        };
        if written {
            self.after.push(c)
        } else {
            self.before.push(c)
        }
        s
    }

    /// The input `x` (dims [N, C, spatial..]) with each spatial dim as
    /// `windows` says: explicit windows are copied into a zeroed scratch.
    fn input(&mut self, x: View, windows: &[Window]) -> View {
        if windows.iter().all(|w| matches!(w, Window::Direct(_))) {
            return self.operand(x, false);
        }
        let mut dims = x.dims.clone();
        let mut src = x.clone();
        let mut dst_start = vec![0usize; x.dims.len()];
        for (k, w) in windows.iter().enumerate() {
            let d = k + 2;
            let (start, len) = match *w {
                Window::Direct(_) => (0, x.dims[d]),
                Window::Explicit { start, len } => (start, len),
            };
            dims[d] = len;
            // The input positions inside the window.
            let lo = start.max(0);
            let hi = (start + len as i64).min(x.dims[d] as i64);
            src.offset += lo as usize * x.strides[d];
            src.dims[d] = (hi - lo).max(0) as usize;
            dst_start[d] = (lo - start) as usize;
        }
        let s = self.stage(&dims);
        self.zero_scratch = true;
        if src.dims.iter().all(|&n| n > 0) {
            let offset = s.offset
                + dst_start
                    .iter()
                    .zip(&s.strides)
                    .map(|(a, b)| a * b)
                    .sum::<usize>();
            let dst = View {
                place: Place::Scratch,
                offset,
                dims: src.dims.clone(),
                strides: s.strides.clone(),
            };
            self.before.push(Copy { src, dst });
        }
        s
    }
}

/// Adds unit spatial dims up to 2 (cuDNN takes 2-D and 3-D convolutions).
fn widen(v: &mut View) {
    while v.dims.len() < 4 {
        v.dims.push(1);
        v.strides.push(1);
    }
}

/// What cuDNN makes of library step `inst` (operands `a`, `b`, result
/// `out`), or `None` where the step keeps its device kernel (module docs).
pub fn cudnn_step(
    inst: &InstData,
    a: &TensorType,
    b: &TensorType,
    out: &TensorType,
) -> Option<CudnnConv> {
    if inst.op != Opcode::Convolution
        || a.dtype != b.dtype
        || a.dtype != out.dtype
        || !matches!(a.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    {
        return None;
    }
    let shape = |t: &TensorType| -> Vec<usize> { t.shape.iter().map(|&x| x as usize).collect() };
    let (xs, ks, os) = (shape(a), shape(b), shape(out));
    if [&xs, &ks, &os].iter().any(|s| s.contains(&0)) {
        return None;
    }
    let at = Attrs::new(inst, &[a, b]);
    let dims = pjc_tensor::parse_conv_dims(&at.string("dims").ok()?, xs.len()).ok()?;
    let g = pjc_tensor::conv_geometry(
        &xs,
        &ks,
        &dims,
        &at.indices("window_strides").ok()?,
        &at.pairs("padding").ok()?,
        &at.indices("lhs_dilation").ok()?,
        &at.indices("rhs_dilation").ok()?,
        at.index("feature_group_count").ok()?,
        at.index("batch_group_count").ok()?,
    )
    .ok()?;
    if g.out_shape != os || g.in_sp.len() > 3 {
        return None;
    }
    let fits = |s: &[usize]| s.iter().product::<usize>() <= i32::MAX as usize;
    if !fits(&xs) || !fits(&ks) || !fits(&os) {
        return None;
    }
    let conv = if g.lhs_dil.iter().any(|&l| l > 1) {
        backward_data(&g, &dims, &xs, &ks, &os)?
    } else if g.fgc == 1 && !looks_like_forward(&g) {
        backward_filter(&g, &dims, &xs, &ks, &os).or_else(|| forward(&g, &dims, &xs, &ks, &os))?
    } else {
        forward(&g, &dims, &xs, &ks, &os)?
    };
    let mut conv = CudnnConv {
        dtype: a.dtype,
        ..conv
    };
    for v in [&mut conv.x, &mut conv.w, &mut conv.y] {
        widen(v);
    }
    // cudnnTransformTensor takes 4 to 8 dims too.
    for cp in conv.before.iter_mut().chain(conv.after.iter_mut()) {
        widen(&mut cp.src);
        widen(&mut cp.dst);
    }
    while conv.pad.len() < 2 {
        conv.pad.push(0);
        conv.stride.push(1);
        conv.dilation.push(1);
    }
    fits(&[conv.scratch]).then_some(conv)
}

/// XLA's test: batch and output features as a forward convolution has them,
/// and a kernel no larger than the output in every spatial dim.
fn looks_like_forward(g: &pjc_tensor::ConvGeometry) -> bool {
    g.bgc == 1 && g.k_sp.iter().zip(&g.out_sp).all(|(k, o)| k <= o)
}

fn slack(size: usize, lo: i64, hi: i64, window: usize, stride: usize, out: usize) -> i64 {
    size as i64 + lo + hi - window as i64 - (stride * (out - 1)) as i64
}

fn forward(
    g: &pjc_tensor::ConvGeometry,
    d: &pjc_tensor::ConvDims,
    xs: &[usize],
    ks: &[usize],
    os: &[usize],
) -> Option<CudnnConv> {
    if g.bgc != 1 {
        return None;
    }
    let n = g.in_sp.len();
    let windows: Vec<Window> = (0..n)
        .map(|k| {
            let (lo, hi) = g.padding[k];
            let eff = g.rhs_dil[k] * (g.k_sp[k] - 1) + 1;
            window(
                g.in_sp[k],
                lo,
                hi,
                slack(g.in_sp[k], lo, hi, eff, g.strides[k], g.out_sp[k]),
                g.strides[k],
            )
        })
        .collect();
    let x = view(
        Place::Lhs,
        xs,
        d.input_batch,
        d.input_feature,
        &d.input_spatial,
    );
    let mut bld = Builder {
        nhwc: !is_packed(&x, false),
        scratch: 0,
        zero_scratch: false,
        before: vec![],
        after: vec![],
    };
    let pad = windows
        .iter()
        .map(|w| if let Window::Direct(p) = w { *p } else { 0 })
        .collect();
    let x = bld.input(x, &windows);
    let w = bld.operand(
        view(
            Place::Rhs,
            ks,
            d.kernel_output_feature,
            d.kernel_input_feature,
            &d.kernel_spatial,
        ),
        false,
    );
    let y = bld.operand(
        view(
            Place::Out,
            os,
            d.output_batch,
            d.output_feature,
            &d.output_spatial,
        ),
        true,
    );
    Some(CudnnConv {
        kind: ConvKind::Forward,
        dtype: DType::F32,
        flip: false,
        groups: g.fgc,
        pad,
        stride: g.strides.clone(),
        dilation: g.rhs_dil.clone(),
        x,
        w,
        y,
        nhwc: bld.nhwc,
        scratch: bld.scratch,
        zero_scratch: bld.zero_scratch,
        before: bld.before,
        after: bld.after,
    })
}

fn backward_filter(
    g: &pjc_tensor::ConvGeometry,
    d: &pjc_tensor::ConvDims,
    xs: &[usize],
    ks: &[usize],
    os: &[usize],
) -> Option<CudnnConv> {
    // cuDNN stride = rhs_dilation, cuDNN dilation = window_strides, taps =
    // the output's spatial sizes, dy = the kernel.
    let n = g.in_sp.len();
    let windows: Vec<Window> = (0..n)
        .map(|k| {
            let (lo, hi) = g.padding[k];
            let (s, dil) = (g.rhs_dil[k], g.strides[k]);
            let eff = dil * (g.out_sp[k] - 1) + 1;
            window(
                g.in_sp[k],
                lo,
                hi,
                slack(g.in_sp[k], lo, hi, eff, s, g.k_sp[k]),
                s,
            )
        })
        .collect();
    let x = view(
        Place::Lhs,
        xs,
        d.input_feature,
        d.input_batch,
        &d.input_spatial,
    );
    let mut bld = Builder {
        nhwc: !is_packed(&x, false),
        scratch: 0,
        zero_scratch: false,
        before: vec![],
        after: vec![],
    };
    let pad = windows
        .iter()
        .map(|w| if let Window::Direct(p) = w { *p } else { 0 })
        .collect();
    let x = bld.input(x, &windows);
    let y = bld.operand(
        view(
            Place::Rhs,
            ks,
            d.kernel_input_feature,
            d.kernel_output_feature,
            &d.kernel_spatial,
        ),
        false,
    );
    let w = bld.operand(
        view(
            Place::Out,
            os,
            d.output_feature,
            d.output_batch,
            &d.output_spatial,
        ),
        true,
    );
    Some(CudnnConv {
        kind: ConvKind::BackwardFilter,
        dtype: DType::F32,
        flip: false,
        groups: g.bgc,
        pad,
        stride: g.rhs_dil.clone(),
        dilation: g.strides.clone(),
        x,
        w,
        y,
        nhwc: bld.nhwc,
        scratch: bld.scratch,
        zero_scratch: bld.zero_scratch,
        before: bld.before,
        after: bld.after,
    })
}

fn backward_data(
    g: &pjc_tensor::ConvGeometry,
    d: &pjc_tensor::ConvDims,
    xs: &[usize],
    ks: &[usize],
    os: &[usize],
) -> Option<CudnnConv> {
    if g.bgc != 1 || g.strides.iter().any(|&s| s != 1) {
        return None;
    }
    let n = g.in_sp.len();
    // Per spatial dim: cuDNN's padding, and the length cuDNN's dx has.
    let mut pad = vec![];
    let mut dx_len = vec![];
    for k in 0..n {
        let (lo, hi) = g.padding[k];
        let (s, dil, r, o) = (
            g.lhs_dil[k] as i64,
            g.rhs_dil[k] as i64,
            g.k_sp[k] as i64,
            g.in_sp[k] as i64,
        );
        let p = dil * (r - 1) - lo;
        if p < 0 {
            return None;
        }
        // The shortest dx whose forward output is dy's size; ours is
        // `hi - lo` longer.
        let shortest = (o - 1) * s + dil * (r - 1) + 1 - 2 * p;
        let diff = hi - lo;
        if diff >= s || shortest <= 0 {
            return None;
        }
        pad.push(p as usize);
        dx_len.push(if diff < 0 {
            shortest as usize
        } else {
            g.out_sp[k]
        });
    }
    let dy = view(
        Place::Lhs,
        xs,
        d.input_batch,
        d.input_feature,
        &d.input_spatial,
    );
    let mut bld = Builder {
        nhwc: !is_packed(&dy, false),
        scratch: 0,
        zero_scratch: false,
        before: vec![],
        after: vec![],
    };
    let y = bld.operand(dy, false);
    // The filter [K = dy features, C/G, taps]: kernel `i` (dy features per
    // group) and `o` (dx features, G blocks of C/G).
    let groups = g.fgc;
    let (ki, ko) = (ks[d.kernel_input_feature], ks[d.kernel_output_feature]);
    let w = if groups == 1 {
        bld.operand(
            view(
                Place::Rhs,
                ks,
                d.kernel_input_feature,
                d.kernel_output_feature,
                &d.kernel_spatial,
            ),
            false,
        )
    } else {
        let st = row_major(ks);
        let cg = ko / groups;
        let mut wdims = vec![ki * groups, cg];
        wdims.extend(d.kernel_spatial.iter().map(|&p| ks[p]));
        let s = bld.stage(&wdims);
        // [G, K/G, C/G, taps] on both sides.
        let split = |dims: &[usize], strides: &[usize]| -> (Vec<usize>, Vec<usize>) {
            let mut dd = vec![groups, ki, dims[1]];
            dd.extend(&dims[2..]);
            let mut ss = vec![ki * strides[0], strides[0], strides[1]];
            ss.extend(&strides[2..]);
            (dd, ss)
        };
        let (cdims, dst_strides) = split(&wdims, &s.strides);
        let mut src_strides = vec![
            cg * st[d.kernel_output_feature],
            st[d.kernel_input_feature],
            st[d.kernel_output_feature],
        ];
        src_strides.extend(d.kernel_spatial.iter().map(|&p| st[p]));
        bld.before.push(Copy {
            src: View {
                place: Place::Rhs,
                offset: 0,
                dims: cdims.clone(),
                strides: src_strides,
            },
            dst: View {
                place: Place::Scratch,
                offset: s.offset,
                dims: cdims,
                strides: dst_strides,
            },
        });
        s
    };
    let dx = view(
        Place::Out,
        os,
        d.output_batch,
        d.output_feature,
        &d.output_spatial,
    );
    let x = if dx_len.iter().zip(&g.out_sp).all(|(a, b)| a == b) {
        bld.operand(dx, true)
    } else {
        // cuDNN writes a longer dx into the scratch; its first positions
        // are the result.
        let mut dims = dx.dims.clone();
        dims[2..].copy_from_slice(&dx_len);
        let s = bld.stage(&dims);
        bld.after.push(Copy {
            src: View {
                dims: dx.dims.clone(),
                ..s.clone()
            },
            dst: dx,
        });
        s
    };
    Some(CudnnConv {
        kind: ConvKind::BackwardData,
        dtype: DType::F32,
        flip: true,
        groups,
        pad,
        stride: g.lhs_dil.clone(),
        dilation: g.rhs_dil.clone(),
        x,
        w,
        y,
        nhwc: bld.nhwc,
        scratch: bld.scratch,
        zero_scratch: bld.zero_scratch,
        before: bld.before,
        after: bld.after,
    })
}

/// Why a mapping is not one cuDNN would accept.
fn check(c: &CudnnConv) -> Result<(), String> {
    let nd = c.x.dims.len();
    if c.w.dims.len() != nd
        || c.y.dims.len() != nd
        || c.pad.len() != nd - 2
        || c.stride.len() != nd - 2
        || c.dilation.len() != nd - 2
    {
        return Err(format!("ranks differ: {c}"));
    }
    if !(4..=5).contains(&nd) {
        return Err(format!("cuDNN takes 4-D and 5-D convolutions: {c}"));
    }
    for v in [&c.x, &c.w, &c.y] {
        if !is_packed(v, c.nhwc) {
            return Err(format!(
                "operand {v:?} is not packed ({})",
                if c.nhwc { "NHWC" } else { "NCHW" }
            ));
        }
    }
    let (n, cc, k) = (c.x.dims[0], c.x.dims[1], c.w.dims[0]);
    if c.y.dims[0] != n || c.y.dims[1] != k || c.w.dims[1] * c.groups != cc || k % c.groups != 0 {
        return Err(format!("feature or batch sizes disagree: {c}"));
    }
    for s in 0..nd - 2 {
        let eff = c.dilation[s] * (c.w.dims[s + 2] - 1) + 1;
        let padded = c.x.dims[s + 2] + 2 * c.pad[s];
        if padded < eff || (padded - eff) / c.stride[s] + 1 != c.y.dims[s + 2] {
            return Err(format!(
                "spatial dim {s}: cuDNN's output size is not y's: {c}"
            ));
        }
    }
    Ok(())
}

/// What cuDNN computes for `c` on these step buffers (f64), checking first
/// that cuDNN would accept the descriptors (packed operands, consistent
/// sizes). `out` starts as NaN: an element neither cuDNN nor a copy writes
/// stays NaN. For tests; the CUDA backend runs the real calls.
pub fn emulate(
    c: &CudnnConv,
    lhs: &[f64],
    rhs: &[f64],
    out_len: usize,
) -> Result<Vec<f64>, String> {
    check(c)?;
    let mut out = vec![f64::NAN; out_len];
    let mut scratch = vec![if c.zero_scratch { 0.0 } else { f64::NAN }; c.scratch];
    let index = |v: &View, flat: usize| -> usize {
        let mut rem = flat;
        let mut at = v.offset;
        for d in (0..v.dims.len()).rev() {
            at += (rem % v.dims[d]) * v.strides[d];
            rem /= v.dims[d];
        }
        at
    };
    fn read<'a>(
        p: Place,
        lhs: &'a [f64],
        rhs: &'a [f64],
        out: &'a [f64],
        scratch: &'a [f64],
    ) -> &'a [f64] {
        match p {
            Place::Lhs => lhs,
            Place::Rhs => rhs,
            Place::Out => out,
            Place::Scratch => scratch,
        }
    }
    let copy = |cp: &Copy, out: &mut Vec<f64>, scratch: &mut Vec<f64>| -> Result<(), String> {
        if !(4..=8).contains(&cp.src.dims.len()) {
            return Err(format!(
                "a copy of {} dims (cudnnTransformTensor takes 4 to 8)",
                cp.src.dims.len()
            ));
        }
        if cp.src.dims != cp.dst.dims {
            return Err(format!(
                "a copy between dims {:?} and {:?}",
                cp.src.dims, cp.dst.dims
            ));
        }
        let total: usize = cp.src.dims.iter().product();
        let vals: Vec<f64> = (0..total)
            .map(|i| read(cp.src.place, lhs, rhs, out, scratch)[index(&cp.src, i)])
            .collect();
        for (i, v) in vals.into_iter().enumerate() {
            let at = index(&cp.dst, i);
            match cp.dst.place {
                Place::Out => out[at] = v,
                Place::Scratch => scratch[at] = v,
                p => return Err(format!("a copy into the step's input {p:?}")),
            }
        }
        Ok(())
    };
    for cp in &c.before {
        copy(cp, &mut out, &mut scratch)?;
    }
    // cuDNN's operation, over the three views.
    let nsp = c.x.dims.len() - 2;
    let (n, cc, k) = (c.x.dims[0], c.x.dims[1], c.w.dims[0]);
    let (cg, kg) = (cc / c.groups, k / c.groups);
    let wsp: Vec<usize> = c.w.dims[2..].to_vec();
    let ysp: Vec<usize> = c.y.dims[2..].to_vec();
    let at = |v: &View, i: &[usize]| -> usize {
        v.offset + i.iter().zip(&v.strides).map(|(a, b)| a * b).sum::<usize>()
    };
    let mut acc: std::collections::HashMap<usize, f64> = std::collections::HashMap::new();
    let (wr, written) = match c.kind {
        ConvKind::Forward => (&c.y, c.y.place),
        ConvKind::BackwardData => (&c.x, c.x.place),
        ConvKind::BackwardFilter => (&c.w, c.w.place),
    };
    // Every element of the written operand is written (zero if no term).
    let total: usize = wr.dims.iter().product();
    for i in 0..total {
        acc.insert(index(wr, i), 0.0);
    }
    let count = |dims: &[usize]| dims.iter().product::<usize>();
    let unflat = |mut f: usize, dims: &[usize]| -> Vec<usize> {
        let mut v = vec![0; dims.len()];
        for d in (0..dims.len()).rev() {
            v[d] = f % dims[d];
            f /= dims[d];
        }
        v
    };
    let src = |v: &View, i: &[usize], out: &[f64], scratch: &[f64]| {
        read(v.place, lhs, rhs, out, scratch)[at(v, i)]
    };
    for ni in 0..n {
        for ki in 0..k {
            let gi = ki / kg;
            for ci in 0..cg {
                let c_full = gi * cg + ci;
                for yf in 0..count(&ysp) {
                    let o = unflat(yf, &ysp);
                    for wf in 0..count(&wsp) {
                        let r = unflat(wf, &wsp);
                        // Input position o·s + r·d - p, in range or none.
                        let mut pos = vec![0usize; nsp];
                        let mut inside = true;
                        for s in 0..nsp {
                            let q = (o[s] * c.stride[s] + r[s] * c.dilation[s]) as i64
                                - c.pad[s] as i64;
                            if q < 0 || q >= c.x.dims[s + 2] as i64 {
                                inside = false;
                                break;
                            }
                            pos[s] = q as usize;
                        }
                        if !inside {
                            continue;
                        }
                        let rf: Vec<usize> = if c.flip {
                            r.iter().zip(&wsp).map(|(a, b)| b - 1 - a).collect()
                        } else {
                            r.clone()
                        };
                        let xi: Vec<usize> = [ni, c_full]
                            .into_iter()
                            .chain(pos.iter().copied())
                            .collect();
                        let wi: Vec<usize> =
                            [ki, ci].into_iter().chain(rf.iter().copied()).collect();
                        let yi: Vec<usize> =
                            [ni, ki].into_iter().chain(o.iter().copied()).collect();
                        let (target, term) = match c.kind {
                            ConvKind::Forward => (
                                at(&c.y, &yi),
                                src(&c.x, &xi, &out, &scratch) * src(&c.w, &wi, &out, &scratch),
                            ),
                            ConvKind::BackwardData => (
                                at(&c.x, &xi),
                                src(&c.y, &yi, &out, &scratch) * src(&c.w, &wi, &out, &scratch),
                            ),
                            ConvKind::BackwardFilter => (
                                at(&c.w, &wi),
                                src(&c.x, &xi, &out, &scratch) * src(&c.y, &yi, &out, &scratch),
                            ),
                        };
                        *acc.get_mut(&target)
                            .ok_or("a term outside the written operand")? += term;
                    }
                }
            }
        }
    }
    for (i, v) in acc {
        match written {
            Place::Out => out[i] = v,
            Place::Scratch => scratch[i] = v,
            p => return Err(format!("cuDNN writes the step's input {p:?}")),
        }
    }
    for cp in &c.after {
        copy(cp, &mut out, &mut scratch)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::AttrValue;

    /// A convolution attribute family: dims, input and kernel shapes,
    /// strides, padding, lhs and rhs dilation, feature and batch groups.
    #[derive(Clone, Copy)]
    pub struct Case {
        pub dims: &'static str,
        pub x: &'static [u64],
        pub k: &'static [u64],
        pub strides: &'static [i64],
        pub padding: &'static [(i64, i64)],
        pub lhs: &'static [i64],
        pub rhs: &'static [i64],
        pub fgc: i64,
        pub bgc: i64,
    }

    const fn c(dims: &'static str, x: &'static [u64], k: &'static [u64]) -> Case {
        Case {
            dims,
            x,
            k,
            strides: &[],
            padding: &[],
            lhs: &[],
            rhs: &[],
            fgc: 1,
            bgc: 1,
        }
    }

    fn inst(c: &Case) -> InstData {
        let mut i = InstData::new(Opcode::Convolution);
        i.set_attr("dims", AttrValue::Str(c.dims.into()));
        let list = |v: &[i64]| AttrValue::int_list(v);
        if !c.strides.is_empty() {
            i.set_attr("window_strides", list(c.strides));
        }
        if !c.padding.is_empty() {
            i.set_attr(
                "padding",
                AttrValue::List(
                    c.padding
                        .iter()
                        .map(|&(a, b)| AttrValue::int_list(&[a, b]))
                        .collect(),
                ),
            );
        }
        if !c.lhs.is_empty() {
            i.set_attr("lhs_dilation", list(c.lhs));
        }
        if !c.rhs.is_empty() {
            i.set_attr("rhs_dilation", list(c.rhs));
        }
        if c.fgc != 1 {
            i.set_attr("feature_group_count", AttrValue::Int(c.fgc));
        }
        if c.bgc != 1 {
            i.set_attr("batch_group_count", AttrValue::Int(c.bgc));
        }
        i
    }

    fn values(n: usize, seed: u64) -> Vec<f64> {
        // Small integers: every sum is exact in f64, so any order agrees.
        (0..n)
            .map(|i| (((i as u64 * 2654435761 + seed * 97) >> 7) % 7) as f64 - 3.0)
            .collect()
    }

    /// The cuDNN mapping of `case` (if any) computes the reference's result.
    fn run(case: &Case, dtype: DType) -> Option<CudnnConv> {
        let us = |v: &[i64]| v.iter().map(|&a| a as usize).collect::<Vec<_>>();
        let dims = pjc_tensor::parse_conv_dims(case.dims, case.x.len()).unwrap();
        let xs: Vec<usize> = case.x.iter().map(|&a| a as usize).collect();
        let ks: Vec<usize> = case.k.iter().map(|&a| a as usize).collect();
        let xv = values(xs.iter().product(), 1);
        let kv = values(ks.iter().product(), 2);
        let t = |s: &[usize], v: &[f64]| {
            pjc_tensor::Tensor::new(s.to_vec(), pjc_tensor::Buf::F64(v.to_vec()))
        };
        let want = pjc_tensor::convolution(
            &t(&xs, &xv),
            &t(&ks, &kv),
            &dims,
            &us(case.strides),
            case.padding,
            &us(case.lhs),
            &us(case.rhs),
            case.fgc as usize,
            case.bgc as usize,
            DType::F64,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.dims));
        let pjc_tensor::Buf::F64(want_v) = &want.data else {
            unreachable!()
        };
        let ty = |s: &[usize]| TensorType::new(dtype, s.iter().map(|&a| a as u64).collect());
        let conv = cudnn_step(&inst(case), &ty(&xs), &ty(&ks), &ty(&want.shape))?;
        let got = emulate(&conv, &xv, &kv, want_v.len())
            .unwrap_or_else(|e| panic!("{} {:?}x{:?}: {e}", case.dims, case.x, case.k));
        assert_eq!(
            &got, want_v,
            "{} {:?} x {:?}: {conv}",
            case.dims, case.x, case.k
        );
        Some(conv)
    }

    /// Forward convolutions of every attribute family the repository's
    /// programs use, and the input and kernel gradients JAX writes for them
    /// (`jax.grad` of `lax.conv_general_dilated`), map onto cuDNN and compute
    /// the reference's result.
    #[test]
    fn convolutions_and_their_gradients_map_onto_cudnn() {
        use ConvKind::*;
        let cases: &[(Case, ConvKind)] = &[
            // ResNet (NHWC, HWIO): the 7x7/2 stem, 3x3 and 1x1 at stride 1, and
            // stride-2 3x3 and 1x1 projections, with the padding JAX's SAME and
            // explicit [[1,1]] give at even sizes.
            (
                Case {
                    strides: &[2, 2],
                    padding: &[(3, 3), (3, 3)],
                    ..c("b01f_01io->b01f", &[2, 16, 16, 3], &[7, 7, 3, 4])
                },
                Forward,
            ),
            (
                Case {
                    strides: &[2, 2],
                    padding: &[(2, 3), (2, 3)],
                    ..c("b01f_01io->b01f", &[2, 16, 16, 3], &[7, 7, 3, 4])
                },
                Forward,
            ),
            (
                Case {
                    padding: &[(1, 1), (1, 1)],
                    ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[3, 3, 3, 4])
                },
                Forward,
            ),
            (c("b01f_01io->b01f", &[2, 8, 8, 3], &[1, 1, 3, 4]), Forward),
            (
                Case {
                    strides: &[2, 2],
                    padding: &[(1, 1), (1, 1)],
                    ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[3, 3, 3, 4])
                },
                Forward,
            ),
            (
                Case {
                    strides: &[2, 2],
                    padding: &[(0, 1), (0, 1)],
                    ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[3, 3, 3, 4])
                },
                Forward,
            ),
            (
                Case {
                    strides: &[2, 2],
                    ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[1, 1, 3, 4])
                },
                Forward,
            ),
            // Their input gradients: dy dilated by the stride, the kernel
            // reversed with i/o swapped ("01oi"), padding k-1-lo and k-1-hi
            // plus the stride's remainder.
            (
                Case {
                    padding: &[(1, 1), (1, 1)],
                    ..c("b01f_01oi->b01f", &[2, 8, 8, 4], &[3, 3, 3, 4])
                },
                Forward,
            ),
            (c("b01f_01oi->b01f", &[2, 8, 8, 4], &[1, 1, 3, 4]), Forward),
            (
                Case {
                    padding: &[(1, 2), (1, 2)],
                    lhs: &[2, 2],
                    ..c("b01f_01oi->b01f", &[2, 4, 4, 4], &[3, 3, 3, 4])
                },
                BackwardData,
            ),
            (
                Case {
                    padding: &[(2, 2), (2, 2)],
                    lhs: &[2, 2],
                    ..c("b01f_01oi->b01f", &[2, 4, 4, 4], &[3, 3, 3, 4])
                },
                BackwardData,
            ),
            (
                Case {
                    padding: &[(0, 1), (0, 1)],
                    lhs: &[2, 2],
                    ..c("b01f_01oi->b01f", &[2, 4, 4, 4], &[1, 1, 3, 4])
                },
                BackwardData,
            ),
            (
                Case {
                    padding: &[(4, 3), (4, 3)],
                    lhs: &[2, 2],
                    ..c("b01f_01oi->b01f", &[2, 8, 8, 4], &[7, 7, 3, 4])
                },
                BackwardData,
            ),
            // Their kernel gradients: x as "f01b", dy as the kernel "i01o",
            // the forward stride as rhs_dilation.
            (
                Case {
                    padding: &[(1, 1), (1, 1)],
                    ..c("f01b_i01o->01bf", &[2, 8, 8, 3], &[2, 8, 8, 4])
                },
                BackwardFilter,
            ),
            (
                c("f01b_i01o->01bf", &[2, 8, 8, 3], &[2, 8, 8, 4]),
                BackwardFilter,
            ),
            (
                Case {
                    padding: &[(1, 0), (1, 0)],
                    rhs: &[2, 2],
                    ..c("f01b_i01o->01bf", &[2, 8, 8, 3], &[2, 4, 4, 4])
                },
                BackwardFilter,
            ),
            (
                Case {
                    padding: &[(0, -1), (0, -1)],
                    rhs: &[2, 2],
                    ..c("f01b_i01o->01bf", &[2, 8, 8, 3], &[2, 4, 4, 4])
                },
                BackwardFilter,
            ),
            (
                Case {
                    padding: &[(3, 2), (3, 2)],
                    rhs: &[2, 2],
                    ..c("f01b_i01o->01bf", &[2, 16, 16, 3], &[2, 8, 8, 4])
                },
                BackwardFilter,
            ),
            // NCHW / OIHW (PyTorch's order), 1-D and 3-D.
            (
                Case {
                    padding: &[(1, 1), (1, 1)],
                    ..c("bf01_oi01->bf01", &[2, 3, 6, 6], &[4, 3, 3, 3])
                },
                Forward,
            ),
            (
                Case {
                    strides: &[2],
                    padding: &[(1, 0)],
                    ..c("bf0_oi0->bf0", &[2, 3, 9], &[4, 3, 3])
                },
                Forward,
            ),
            (
                Case {
                    padding: &[(1, 1), (0, 0), (1, 1)],
                    ..c("b012f_012io->b012f", &[1, 4, 3, 4, 2], &[3, 2, 3, 2, 3])
                },
                Forward,
            ),
            // Dilated (atrous) and its gradients.
            (
                Case {
                    rhs: &[2, 2],
                    padding: &[(2, 2), (2, 2)],
                    ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[3, 3, 3, 4])
                },
                Forward,
            ),
            (
                Case {
                    strides: &[2, 2],
                    padding: &[(2, 2), (2, 2)],
                    ..c("f01b_i01o->01bf", &[2, 8, 8, 3], &[2, 8, 8, 4])
                },
                BackwardFilter,
            ),
            // Grouped and depthwise, forward and both gradients.
            (
                Case {
                    fgc: 2,
                    padding: &[(1, 1), (1, 1)],
                    ..c("b01f_01io->b01f", &[2, 6, 6, 4], &[3, 3, 2, 6])
                },
                Forward,
            ),
            (
                Case {
                    fgc: 4,
                    padding: &[(1, 1), (1, 1)],
                    ..c("b01f_01io->b01f", &[2, 6, 6, 4], &[3, 3, 1, 8])
                },
                Forward,
            ),
            (
                Case {
                    fgc: 2,
                    lhs: &[2, 2],
                    padding: &[(2, 2), (2, 2)],
                    ..c("b01f_01oi->b01f", &[2, 3, 3, 6], &[3, 3, 4, 3])
                },
                BackwardData,
            ),
            (
                Case {
                    bgc: 2,
                    padding: &[(1, 1), (1, 1)],
                    ..c("f01b_i01o->01bf", &[2, 6, 6, 4], &[2, 6, 6, 6])
                },
                BackwardFilter,
            ),
            (
                Case {
                    bgc: 4,
                    padding: &[(1, 1), (1, 1)],
                    ..c("f01b_i01o->01bf", &[2, 6, 6, 4], &[2, 6, 6, 8])
                },
                BackwardFilter,
            ),
            // Other label orders: channels first kernels, batch last.
            (
                Case {
                    padding: &[(1, 1), (1, 1)],
                    ..c("01bf_o01i->b01f", &[6, 6, 2, 3], &[4, 3, 3, 3])
                },
                Forward,
            ),
        ];
        for (case, kind) in cases {
            for dtype in [DType::F32, DType::F64, DType::BF16, DType::F16] {
                let got = run(case, dtype).unwrap_or_else(|| {
                    panic!(
                        "{} {:?} x {:?} has no cuDNN mapping",
                        case.dims, case.x, case.k
                    )
                });
                assert_eq!(got.kind, *kind, "{} {:?}: {got}", case.dims, case.padding);
                assert_eq!(got.dtype, dtype);
            }
        }
    }

    /// What stays on the generated kernel: dtypes and forms cuDNN does not
    /// take, and paddings no legalization here fits.
    #[test]
    fn convolutions_cudnn_does_not_take_fall_back() {
        let base = Case {
            padding: &[(1, 1), (1, 1)],
            ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[3, 3, 3, 4])
        };
        let ty = |d: DType, s: &[u64]| TensorType::new(d, s.to_vec());
        let out: &[u64] = &[2, 8, 8, 4];
        // Integers, and a wider result (bf16 x bf16 -> f32).
        assert!(cudnn_step(
            &inst(&base),
            &ty(DType::I32, base.x),
            &ty(DType::I32, base.k),
            &ty(DType::I32, out)
        )
        .is_none());
        assert!(cudnn_step(
            &inst(&base),
            &ty(DType::BF16, base.x),
            &ty(DType::BF16, base.k),
            &ty(DType::F32, out)
        )
        .is_none());
        // Not a convolution.
        let mut dot = inst(&base);
        dot.op = Opcode::DotGeneral;
        assert!(cudnn_step(
            &dot,
            &ty(DType::F32, base.x),
            &ty(DType::F32, base.k),
            &ty(DType::F32, out)
        )
        .is_none());
        // Four spatial dims.
        assert!(run(
            &c(
                "b0123f_0123io->b0123f",
                &[1, 2, 2, 2, 2, 1],
                &[1, 1, 1, 1, 1, 1]
            ),
            DType::F32
        )
        .is_none());
        // Input dilation with window strides (no cuDNN operation has both).
        assert!(run(
            &Case {
                lhs: &[2, 2],
                strides: &[2, 2],
                ..c("b01f_01io->b01f", &[1, 5, 5, 1], &[3, 3, 1, 1])
            },
            DType::F32
        )
        .is_none());
        // Input gradient whose cuDNN padding would be negative (low padding
        // beyond the kernel).
        assert!(run(
            &Case {
                lhs: &[2, 2],
                padding: &[(3, 3), (3, 3)],
                ..c("b01f_01io->b01f", &[1, 4, 4, 1], &[3, 3, 1, 1])
            },
            DType::F32
        )
        .is_none());
        // Input gradient with a high padding a stride or more beyond the low.
        assert!(run(
            &Case {
                lhs: &[2, 2],
                padding: &[(0, 2), (0, 2)],
                ..c("b01f_01io->b01f", &[1, 4, 4, 1], &[1, 1, 1, 1])
            },
            DType::F32
        )
        .is_none());
        // Batch groups on a forward-looking convolution with feature groups
        // is rejected by the verifier; batch groups with input dilation:
        assert!(run(
            &Case {
                bgc: 2,
                lhs: &[2, 2],
                padding: &[(1, 1), (1, 1)],
                ..c("b01f_01io->b01f", &[2, 3, 3, 1], &[3, 3, 1, 2])
            },
            DType::F32
        )
        .is_none());
    }

    #[test]
    fn packed_layouts_are_passed_as_they_are() {
        // NHWC activations and an OHWI kernel need no copy.
        let case = Case {
            padding: &[(1, 1), (1, 1)],
            ..c("b01f_o01i->b01f", &[2, 8, 8, 3], &[4, 3, 3, 3])
        };
        let conv = run(&case, DType::F32).unwrap();
        assert!(
            conv.nhwc && conv.before.is_empty() && conv.after.is_empty() && conv.scratch == 0,
            "{conv}"
        );
        assert_eq!(
            (conv.x.place, conv.w.place, conv.y.place),
            (Place::Lhs, Place::Rhs, Place::Out)
        );
        // NCHW / OIHW too.
        let case = Case {
            padding: &[(1, 1), (1, 1)],
            ..c("bf01_oi01->bf01", &[2, 3, 8, 8], &[4, 3, 3, 3])
        };
        let conv = run(&case, DType::F32).unwrap();
        assert!(!conv.nhwc && conv.scratch == 0, "{conv}");
        // An HWIO kernel is copied into KRSC order once per call.
        let case = Case {
            padding: &[(1, 1), (1, 1)],
            ..c("b01f_01io->b01f", &[2, 8, 8, 3], &[3, 3, 3, 4])
        };
        let conv = run(&case, DType::F32).unwrap();
        assert_eq!(conv.before.len(), 1, "{conv}");
        assert_eq!(conv.before[0].src.place, Place::Rhs);
        assert_eq!(conv.scratch, 3 * 3 * 3 * 4);
    }
}
