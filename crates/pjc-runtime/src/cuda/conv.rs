//! Convolutions through cuDNN on the CUDA backend: the calls of one
//! `pjc_host::cudnn::CudnnConv` (the compiler's mapping, read here, never
//! re-derived): descriptors made once per step, an algorithm chosen once by
//! cuDNN's heuristics (deterministic ones only, so reruns are bitwise
//! equal), then per run: zero the scratch if the mapping pads explicitly,
//! `cudnnTransformTensor` copies in, the convolution, copies out. Every
//! call is enqueued on the backend's stream.
//!
//! Math mode: `CUDNN_FMA_MATH` for f32 and f64 (no TF32, spec section 11),
//! `CUDNN_TENSOR_OP_MATH` for bf16/f16 (tensor cores, f32 accumulation).

use cudarc::cudnn::sys as dnn;
use pjc_host::cudnn::{ConvKind, CudnnConv, Place, View};
use pjc_ir::DType;
use std::ffi::{c_int, c_void, CStr};

/// Most workspace one convolution may take (bytes).
const WORKSPACE_LIMIT: usize = 1 << 30;

fn check(s: dnn::cudnnStatus_t, what: &str) -> Result<(), String> {
    if s == dnn::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cuDNN returns a static string for any status.
    let msg = unsafe {
        let p = dnn::cudnnGetErrorString(s);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(format!("{what} failed: {s:?} ({msg})"))
}

/// A cuDNN handle bound to one stream.
pub struct Dnn {
    handle: dnn::cudnnHandle_t,
    /// cuDNN's version code (e.g. 91000), for messages.
    pub version: usize,
}

impl Dnn {
    /// A handle whose calls go on `stream` (cuDNN must be loaded:
    /// `libs::ensure_cudnn`).
    pub fn new(stream: cudarc::driver::sys::CUstream, version: usize) -> Result<Dnn, String> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: cuDNN is loaded; the handle is written by the call.
        unsafe {
            check(dnn::cudnnCreate(&mut handle), "cudnnCreate")?;
            let dnn = Dnn { handle, version };
            check(
                dnn::cudnnSetStream(handle, stream as dnn::cudaStream_t),
                "cudnnSetStream",
            )?;
            Ok(dnn)
        }
    }
}

impl Drop for Dnn {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { dnn::cudnnDestroy(self.handle) };
    }
}

fn data_type(d: DType) -> dnn::cudnnDataType_t {
    match d {
        DType::F64 => dnn::cudnnDataType_t::CUDNN_DATA_DOUBLE,
        DType::F16 => dnn::cudnnDataType_t::CUDNN_DATA_HALF,
        DType::BF16 => dnn::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
        _ => dnn::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

fn ints(v: &[usize]) -> Vec<c_int> {
    v.iter().map(|&x| x as c_int).collect()
}

struct Tensor(dnn::cudnnTensorDescriptor_t);

impl Tensor {
    fn new(dtype: DType, v: &View) -> Result<Tensor, String> {
        let mut d = std::ptr::null_mut();
        // SAFETY: the descriptor is created, then set from arrays of nbDims.
        unsafe {
            check(
                dnn::cudnnCreateTensorDescriptor(&mut d),
                "cudnnCreateTensorDescriptor",
            )?;
            let t = Tensor(d);
            let (dims, strides) = (ints(&v.dims), ints(&v.strides));
            check(
                dnn::cudnnSetTensorNdDescriptor(
                    d,
                    data_type(dtype),
                    dims.len() as c_int,
                    dims.as_ptr(),
                    strides.as_ptr(),
                ),
                "cudnnSetTensorNdDescriptor",
            )?;
            Ok(t)
        }
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // SAFETY: created by `new`.
        let _ = unsafe { dnn::cudnnDestroyTensorDescriptor(self.0) };
    }
}

struct Filter(dnn::cudnnFilterDescriptor_t);

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: created by `Call::new`.
        let _ = unsafe { dnn::cudnnDestroyFilterDescriptor(self.0) };
    }
}

struct ConvDesc(dnn::cudnnConvolutionDescriptor_t);

impl Drop for ConvDesc {
    fn drop(&mut self) {
        // SAFETY: created by `Call::new`.
        let _ = unsafe { dnn::cudnnDestroyConvolutionDescriptor(self.0) };
    }
}

enum Algo {
    Forward(dnn::cudnnConvolutionFwdAlgo_t),
    Data(dnn::cudnnConvolutionBwdDataAlgo_t),
    Filter(dnn::cudnnConvolutionBwdFilterAlgo_t),
}

/// One convolution step, ready to enqueue.
pub struct Call {
    conv: CudnnConv,
    x: Tensor,
    y: Tensor,
    w: Filter,
    desc: ConvDesc,
    before: Vec<(Tensor, Tensor)>,
    after: Vec<(Tensor, Tensor)>,
    algo: Algo,
    workspace: usize,
}

/// The step's device pointers: its lhs, rhs and result buffers and the
/// scratch (staging, then workspace).
pub struct Ptrs {
    pub lhs: u64,
    pub rhs: u64,
    pub out: u64,
    pub scratch: u64,
}

fn align(n: usize) -> usize {
    n.div_ceil(256) * 256
}

impl Call {
    /// Descriptors and algorithm of `conv`.
    pub fn new(h: &Dnn, conv: &CudnnConv) -> Result<Call, String> {
        let dt = conv.dtype;
        let x = Tensor::new(dt, &conv.x)?;
        let y = Tensor::new(dt, &conv.y)?;
        let fmt = if conv.nhwc {
            dnn::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC
        } else {
            dnn::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW
        };
        let compute = if dt == DType::F64 {
            dnn::cudnnDataType_t::CUDNN_DATA_DOUBLE
        } else {
            dnn::cudnnDataType_t::CUDNN_DATA_FLOAT
        };
        let math = if matches!(dt, DType::F16 | DType::BF16) {
            dnn::cudnnMathType_t::CUDNN_TENSOR_OP_MATH
        } else {
            dnn::cudnnMathType_t::CUDNN_FMA_MATH
        };
        let mode = if conv.flip {
            dnn::cudnnConvolutionMode_t::CUDNN_CONVOLUTION
        } else {
            dnn::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION
        };
        let copies = |cs: &[pjc_host::cudnn::Copy]| -> Result<Vec<(Tensor, Tensor)>, String> {
            cs.iter()
                .map(|c| Ok((Tensor::new(dt, &c.src)?, Tensor::new(dt, &c.dst)?)))
                .collect()
        };
        let (before, after) = (copies(&conv.before)?, copies(&conv.after)?);
        let (mut wd, mut cd) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: descriptors are created before they are set; arrays have
        // the lengths passed.
        let (w, desc) = unsafe {
            check(
                dnn::cudnnCreateFilterDescriptor(&mut wd),
                "cudnnCreateFilterDescriptor",
            )?;
            let w = Filter(wd);
            let wdims = ints(&conv.w.dims);
            check(
                dnn::cudnnSetFilterNdDescriptor(
                    wd,
                    data_type(dt),
                    fmt,
                    wdims.len() as c_int,
                    wdims.as_ptr(),
                ),
                "cudnnSetFilterNdDescriptor",
            )?;
            check(
                dnn::cudnnCreateConvolutionDescriptor(&mut cd),
                "cudnnCreateConvolutionDescriptor",
            )?;
            let desc = ConvDesc(cd);
            let (p, s, d) = (ints(&conv.pad), ints(&conv.stride), ints(&conv.dilation));
            check(
                dnn::cudnnSetConvolutionNdDescriptor(
                    cd,
                    p.len() as c_int,
                    p.as_ptr(),
                    s.as_ptr(),
                    d.as_ptr(),
                    mode,
                    compute,
                ),
                "cudnnSetConvolutionNdDescriptor",
            )?;
            check(
                dnn::cudnnSetConvolutionGroupCount(cd, conv.groups as c_int),
                "cudnnSetConvolutionGroupCount",
            )?;
            check(
                dnn::cudnnSetConvolutionMathType(cd, math),
                "cudnnSetConvolutionMathType",
            )?;
            (w, desc)
        };
        let (algo, workspace) = choose(h, conv.kind, &x, &w, &desc, &y)?;
        Ok(Call {
            conv: conv.clone(),
            x,
            y,
            w,
            desc,
            before,
            after,
            algo,
            workspace,
        })
    }

    /// Scratch bytes the step needs: its staging copies, then the workspace.
    pub fn scratch_bytes(&self) -> usize {
        align(self.conv.scratch * self.conv.dtype.size_bytes()) + self.workspace
    }

    /// Enqueues the step on the handle's stream.
    ///
    /// # Safety
    /// The pointers are the step's buffers (of the plan's types) and a
    /// scratch of [`Call::scratch_bytes`].
    pub unsafe fn run(
        &self,
        h: &Dnn,
        p: &Ptrs,
        stream: cudarc::driver::sys::CUstream,
    ) -> Result<(), String> {
        let c = &self.conv;
        let elem = c.dtype.size_bytes() as u64;
        let ptr = |v: &View| -> u64 {
            let base = match v.place {
                Place::Lhs => p.lhs,
                Place::Rhs => p.rhs,
                Place::Out => p.out,
                Place::Scratch => p.scratch,
            };
            base + v.offset as u64 * elem
        };
        let staging = align(c.scratch * c.dtype.size_bytes());
        if c.zero_scratch && c.scratch > 0 {
            cudarc::driver::result::memset_d8_async(
                p.scratch,
                0,
                c.scratch * c.dtype.size_bytes(),
                stream,
            )
            .map_err(|e| format!("clearing the convolution scratch: {e}"))?;
        }
        let (one_f, zero_f, one_d, zero_d) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
        let (one, zero) = if c.dtype == DType::F64 {
            (
                &one_d as *const f64 as *const c_void,
                &zero_d as *const f64 as *const c_void,
            )
        } else {
            (
                &one_f as *const f32 as *const c_void,
                &zero_f as *const f32 as *const c_void,
            )
        };
        let copy = |cp: &pjc_host::cudnn::Copy, d: &(Tensor, Tensor)| {
            check(
                dnn::cudnnTransformTensor(
                    h.handle,
                    one,
                    d.0 .0,
                    ptr(&cp.src) as *const c_void,
                    zero,
                    d.1 .0,
                    ptr(&cp.dst) as *mut c_void,
                ),
                "cudnnTransformTensor",
            )
        };
        for (cp, d) in c.before.iter().zip(&self.before) {
            copy(cp, d)?;
        }
        let ws = (p.scratch + staging as u64) as *mut c_void;
        let (x, w, y) = (
            ptr(&c.x) as *mut c_void,
            ptr(&c.w) as *mut c_void,
            ptr(&c.y) as *mut c_void,
        );
        let s = match self.algo {
            Algo::Forward(a) => dnn::cudnnConvolutionForward(
                h.handle,
                one,
                self.x.0,
                x,
                self.w.0,
                w,
                self.desc.0,
                a,
                ws,
                self.workspace,
                zero,
                self.y.0,
                y,
            ),
            Algo::Data(a) => dnn::cudnnConvolutionBackwardData(
                h.handle,
                one,
                self.w.0,
                w,
                self.y.0,
                y,
                self.desc.0,
                a,
                ws,
                self.workspace,
                zero,
                self.x.0,
                x,
            ),
            Algo::Filter(a) => dnn::cudnnConvolutionBackwardFilter(
                h.handle,
                one,
                self.x.0,
                x,
                self.y.0,
                y,
                self.desc.0,
                a,
                ws,
                self.workspace,
                zero,
                self.w.0,
                w,
            ),
        };
        check(s, c.kind.routine())?;
        for (cp, d) in c.after.iter().zip(&self.after) {
            copy(cp, d)?;
        }
        Ok(())
    }
}

/// The first algorithm of cuDNN's heuristic ranking that succeeds, is
/// deterministic and fits the workspace limit, and its workspace.
fn choose(
    h: &Dnn,
    kind: ConvKind,
    x: &Tensor,
    w: &Filter,
    desc: &ConvDesc,
    y: &Tensor,
) -> Result<(Algo, usize), String> {
    const N: usize = 16;
    let mut got: c_int = 0;
    let ok = |status: dnn::cudnnStatus_t, det: dnn::cudnnDeterminism_t, mem: usize| {
        status == dnn::cudnnStatus_t::CUDNN_STATUS_SUCCESS
            && det == dnn::cudnnDeterminism_t::CUDNN_DETERMINISTIC
            && mem <= WORKSPACE_LIMIT
    };
    // SAFETY: the perf arrays hold N entries; cuDNN writes `got` of them.
    unsafe {
        match kind {
            ConvKind::Forward => {
                let mut perf: [dnn::cudnnConvolutionFwdAlgoPerf_t; N] = std::mem::zeroed();
                check(
                    dnn::cudnnGetConvolutionForwardAlgorithm_v7(
                        h.handle,
                        x.0,
                        w.0,
                        desc.0,
                        y.0,
                        N as c_int,
                        &mut got,
                        perf.as_mut_ptr(),
                    ),
                    "cudnnGetConvolutionForwardAlgorithm_v7",
                )?;
                let p = perf[..got.max(0) as usize]
                    .iter()
                    .find(|p| ok(p.status, p.determinism, p.memory))
                    .ok_or(
                        "cuDNN offers no deterministic forward algorithm for this convolution",
                    )?;
                let mut ws = 0;
                check(
                    dnn::cudnnGetConvolutionForwardWorkspaceSize(
                        h.handle, x.0, w.0, desc.0, y.0, p.algo, &mut ws,
                    ),
                    "cudnnGetConvolutionForwardWorkspaceSize",
                )?;
                Ok((Algo::Forward(p.algo), ws))
            }
            ConvKind::BackwardData => {
                let mut perf: [dnn::cudnnConvolutionBwdDataAlgoPerf_t; N] = std::mem::zeroed();
                check(
                    dnn::cudnnGetConvolutionBackwardDataAlgorithm_v7(
                        h.handle,
                        w.0,
                        y.0,
                        desc.0,
                        x.0,
                        N as c_int,
                        &mut got,
                        perf.as_mut_ptr(),
                    ),
                    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                )?;
                let p = perf[..got.max(0) as usize].iter().find(|p| ok(p.status, p.determinism, p.memory)).ok_or("cuDNN offers no deterministic backward-data algorithm for this convolution")?;
                let mut ws = 0;
                check(
                    dnn::cudnnGetConvolutionBackwardDataWorkspaceSize(
                        h.handle, w.0, y.0, desc.0, x.0, p.algo, &mut ws,
                    ),
                    "cudnnGetConvolutionBackwardDataWorkspaceSize",
                )?;
                Ok((Algo::Data(p.algo), ws))
            }
            ConvKind::BackwardFilter => {
                let mut perf: [dnn::cudnnConvolutionBwdFilterAlgoPerf_t; N] = std::mem::zeroed();
                check(
                    dnn::cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                        h.handle,
                        x.0,
                        y.0,
                        desc.0,
                        w.0,
                        N as c_int,
                        &mut got,
                        perf.as_mut_ptr(),
                    ),
                    "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                )?;
                let p = perf[..got.max(0) as usize].iter().find(|p| ok(p.status, p.determinism, p.memory)).ok_or("cuDNN offers no deterministic backward-filter algorithm for this convolution")?;
                let mut ws = 0;
                check(
                    dnn::cudnnGetConvolutionBackwardFilterWorkspaceSize(
                        h.handle, x.0, y.0, desc.0, w.0, p.algo, &mut ws,
                    ),
                    "cudnnGetConvolutionBackwardFilterWorkspaceSize",
                )?;
                Ok((Algo::Filter(p.algo), ws))
            }
        }
    }
}
