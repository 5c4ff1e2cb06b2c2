//! Placeholder until the CUDA backend lands: no GPU support in this build.

use crate::backend::Backend;
use crate::world::World;
use crate::RuntimeError;
use pjc_fusion::plan::Plan;
use pjc_host::PtxModule;
use pjc_ir::Mesh;

pub fn probe() -> Result<usize, String> {
    Err("this build of the pjc runtime has no CUDA backend".into())
}

pub fn gpus() -> Result<Vec<crate::devices::GpuInfo>, String> {
    Err(probe().unwrap_err())
}

pub fn local_rank(world: &World) -> usize {
    world.rank()
}

pub struct CudaBackend;

impl CudaBackend {
    pub fn new(_plan: &Plan, _ptx: &PtxModule, _world: &World, _mesh: &Mesh) -> Result<CudaBackend, RuntimeError> {
        Err(RuntimeError::Env(probe().unwrap_err()))
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn set_param(&mut self, _i: usize, _t: &pjc_tensor::Tensor) -> Result<(), RuntimeError> {
        unreachable!()
    }
    fn run(&mut self) -> Result<(), RuntimeError> {
        unreachable!()
    }
    fn result(&mut self, _k: usize) -> Result<pjc_tensor::Tensor, RuntimeError> {
        unreachable!()
    }
    fn carry(&mut self, _pairs: &[(usize, usize)]) -> Result<(), RuntimeError> {
        unreachable!()
    }
}
