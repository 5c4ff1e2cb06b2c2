"""XLA's AutoSharding on this machine's CPU backend, for docs/benchmarks.md.

    .venv-jax/bin/python benches/autoshard/xla_auto.py

jax 0.10.2 has no `jax.sharding.AUTO` any more, so this sets XLA's own build
options (`use_auto_spmd_partitioning`, the mesh shape and ids) on the
StableHLO of the Megatron MLP (benches/partition/megatron_mlp.pir) lowered
with its shardings removed, compiles it for 4 host devices, and prints the
parameters' shardings XLA chose and the passes it ran (AutoSharding is a
pass of XLA's GPU/TPU pipelines; the CPU pipeline may not run it).
"""
import os, sys, time, re, tempfile
DUMP = tempfile.mkdtemp()
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count=4 --xla_dump_to={DUMP} --xla_dump_hlo_pass_re=.*"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from jax._src import compiler
from jax._src.lib import _jax
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
jax.config.update("jax_use_shardy_partitioner", False)
print("jax", jax.__version__, len(jax.devices()))
mesh = jax.make_mesh((2, 2), ("data", "model"))
def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2
shapes = [(64,256),(256,1024),(1024,256)]
args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
rep = NamedSharding(mesh, P())
low = jax.jit(mlp, in_shardings=(rep,)*3, out_shardings=rep).lower(*args)
text = low.as_text()
text = re.sub(r'mhlo\.sharding = "[^"]*"', '', text)
text = re.sub(r'\{\s*\}', '', text)
text = re.sub(r'\{\s*,\s*', '{', text)
text = re.sub(r',\s*\}', '}', text)
backend = jax.devices()[0].client
opts = compiler.get_compile_options(num_replicas=1, num_partitions=4, device_assignment=np.arange(4).reshape(1,4))
bo = opts.executable_build_options
bo.use_auto_spmd_partitioning = True
bo.use_shardy_partitioner = False
bo.auto_spmd_partitioning_mesh_shape = [2, 2]
bo.auto_spmd_partitioning_mesh_ids = [0, 1, 2, 3]
with mlir.make_ir_context() as ctx:
    mod = ir.Module.parse(text)
    t = time.time()
    try:
        exe = backend.compile_and_load(mod, executable_devices=_jax.DeviceList(tuple(jax.devices())), compile_options=opts)
        print("compiled in %.3f s" % (time.time() - t))
        hlo = exe.hlo_modules()[0].to_string()
        print("parameters as compiled:")
        for line in hlo.splitlines():
            if " parameter(" in line and "sharding=" in line and "ENTRY" not in line:
                print("   ", line.strip()[:160])
        passes = sorted({f.split(".", 3)[-1].split(".after_")[0] for f in os.listdir(os.path.join(DUMP)) if ".after_" in f})
        ran = [f for f in os.listdir(DUMP) if "auto_sharding" in f or "auto-sharding" in f]
        print("pipelines run:", ", ".join(sorted({p.split(".")[0] for p in passes})))
        print("AutoSharding pass run:", "yes" if ran else "no")
    except Exception as e:
        print("ERROR:", type(e).__name__, str(e)[:3000])
