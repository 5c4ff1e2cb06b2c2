#!/usr/bin/env python3
"""jax2pir agreement tests: exits non-zero on any failure; the last line is 'N passed, N failed'.

    PJC=target/release/pjc .venv-jax/bin/python tests/jax/run.py [-k SUBSTRING] [--steps N]

1. primitives: small functions (and their gradients) exported and run by `pjc eval`,
   compared with JAX;
2. shard_map: collectives in a spmd func, forward and gradient;
3. errors and literals: an unsupported primitive gives one clear error naming it and the
   user's line; float constants print so that PIR reads the same value;
4. CLI: `python -m jax2pir` on each example gives the committed .pir (every committed
   file is checked by `pjc check`);
5. training: each example compiled with `pjc compile -o` and trained under
   `mpirun --oversubscribe -np N` in loop mode, losses and parameters against JAX.
"""

import os

# JAX needs 8 host devices to run the shard_map references; set before importing jax.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:  # the installed jax2pir (pip install ./python); else the source tree's
    import jax2pir  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import jax2pir  # noqa: E402

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


# ---- 1. primitives -------------------------------------------------------------------
def _primitive_tests():
    import primitives

    for name, fn, args, tol in primitives.CASES + primitives.CASES_V2:
        def t(fn=fn, args=args, tol=tol):
            return f"max error {common.agree(fn, args, rtol=tol):.2e} (rtol {tol})"
        t.__name__ = f"primitive_{name}"
        TESTS.append(t)


_primitive_tests()

# Version 2 cases compiled by `pjc compile` and run as an executable (a compile
# failure fails the test).
COMPILED_V2 = ["scan", "scan_forms", "fori_loop_dynamic", "while_loop", "cond_true", "switch",
               "nested_control_flow", "sort", "top_k", "grad_sort_top_k", "scatter"]


def _compiled_tests():
    import primitives

    cases = {c[0]: c for c in primitives.CASES_V2}
    for name in COMPILED_V2:
        _, fn, args, tol = cases[name]

        # Exact cases stay exact; float ones get the spec's compiled-vs-eval allowance
        # for reassociation (1e-5) on top of the case's own tolerance.
        tol = tol and max(tol, 1e-5)

        def t(fn=fn, args=args, tol=tol):
            return f"max error {common.agree(fn, args, rtol=tol, nproc=1):.2e} (rtol {tol})"
        t.__name__ = f"compiled_{name}"
        TESTS.append(t)


_compiled_tests()


@test
def compiled_data_parallel_control_flow():
    """A batch-split program with control flow compiled for 2 processes: a scan over
    stacked weights that closes over a batch-split value, a cond on a replicated
    predicate, a sort and a scatter along unsplit dimensions."""
    from jax.sharding import PartitionSpec as P

    def step(x, w, i):
        m = jnp.sin(x)
        h, ys = jax.lax.scan(lambda h, wl: (jnp.tanh(h @ wl) * m, jnp.sum(h, axis=1)), x, w)
        h = jax.lax.cond(jnp.sum(w) > 0, lambda v: v * 2.0, jnp.cos, h)
        return jnp.sort(h, axis=1), ys, h.at[:, i].add(1.0)

    x = jnp.asarray(np.random.default_rng(8).standard_normal((8, 6)), jnp.float32)
    w = jnp.asarray(np.random.default_rng(9).standard_normal((3, 6, 6)) * 0.4, jnp.float32)
    i = jnp.array([0, 3, 3], jnp.int32)
    err = common.agree(step, (x, w, i), rtol=1e-5, nproc=2, mesh={"data": 2},
                       in_shardings=(P("data"), None, None), out_shardings=(P("data"), P(None, "data"), P("data")))
    return f"2 processes, max error {err:.2e}"


@test
def random_x64():
    """64-bit random bits, f64 uniforms and an int64 seed (these need jax_enable_x64)."""
    from jax import random

    def rand64(k, s):
        b = random.bits(k, (5, 3), jnp.uint64)
        return ((b >> 32).astype(jnp.uint32), (b & 0xFFFFFFFF).astype(jnp.uint32),
                random.uniform(k, (6,), jnp.float64), random.PRNGKey(s), random.key_data(random.key(s + 7)),
                random.randint(k, (4,), -(2 ** 40), 2 ** 40, jnp.int64) % 1000)

    with jax.enable_x64(True):
        args = (random.PRNGKey(3), jnp.int64(-(2 ** 40) - 5))
        pir = jax2pir.export(rand64, *args)
        assert "u64[5,3]" in pir and "%s: i64[]" in pir, pir[:2000]
        err = common.agree(rand64, args, rtol=0.0)
    return f"u64 bits, f64 uniform, int64 seeds, int64 randint bit-exact (max error {err:.1e})"


# ---- 2. shard_map ----------------------------------------------------------------------
def _mesh():
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("data", "model"))


@test
def shard_map_collectives():
    from jax.sharding import PartitionSpec as P

    def body(x, w):
        s = jax.lax.psum(x @ w, "model")
        g = jax.lax.all_gather(s, "data", axis=0, tiled=True)
        g2 = jax.lax.all_gather(s, "data", axis=1)
        r = jax.lax.ppermute(s, "data", [(i, (i + 1) % 4) for i in range(4)])
        a = jax.lax.all_to_all(s, "data", 0, 1, tiled=True)
        i = jax.lax.axis_index("data")
        m = jax.lax.pmean(s, "data")
        rs = jax.lax.psum_scatter(s, "data", scatter_dimension=1, tiled=True)
        mx = jax.lax.pmax(jnp.max(s), ("data", "model"))
        return s + i, g, g2, m, r, a, rs, mx

    f = jax.shard_map(body, mesh=_mesh(), in_specs=(P("data", None), P(None, "model")),
                      out_specs=(P("data"), P(), P(), P(), P("data"), P("data"), P("data", None), P()),
                      check_vma=False)

    def shmap(x, w):
        return f(x, w)

    x = jnp.asarray(np.random.default_rng(1).standard_normal((16, 8)), jnp.float32)
    w = jnp.asarray(np.random.default_rng(2).standard_normal((8, 8)), jnp.float32)
    pir = jax2pir.export(shmap, x, w)
    assert "spmd func @shard_map0" in pir and "call @shard_map0" in pir
    return f"max error {common.agree(shmap, (x, w)):.2e}"


@test
def shard_map_gradient():
    from jax.sharding import PartitionSpec as P

    def body(x, w):
        s = jax.lax.psum(x @ w, "model")
        g = jax.lax.all_gather(s, "data", axis=0, tiled=True)
        r = jax.lax.ppermute(s, "data", [(i, (i + 1) % 4) for i in range(4)])
        return jax.lax.pmean(jnp.sum(jnp.sin(s * r)) + jnp.sum(g * g) * 1e-3, "data")

    f = jax.shard_map(body, mesh=_mesh(), in_specs=(P("data", None), P(None, "model")), out_specs=P())

    def loss(x, w):
        return f(x, w)

    x = jnp.asarray(np.random.default_rng(3).standard_normal((16, 8)), jnp.float32)
    w = jnp.asarray(np.random.default_rng(4).standard_normal((8, 8)), jnp.float32)
    vg = jax.value_and_grad(loss, argnums=(0, 1))
    return f"max error {common.agree(vg, (x, w), rtol=1e-4):.2e}"


@test
def shard_map_control_flow():
    """Control flow inside a shard_map body: its bodies are spmd funcs (local types,
    collectives allowed), forward and gradient."""
    from jax.sharding import PartitionSpec as P

    def body(x, w):
        def step(h, xs):
            h = jnp.tanh(jax.lax.psum(h @ w, "model") * 0.5 + xs)
            return h, jax.lax.psum(jnp.max(h), "data")
        h, ys = jax.lax.scan(step, x[0], x)
        h = jax.lax.cond(jax.lax.psum(jnp.sum(h), "data") > 0, lambda v: v * 2.0, jnp.sin, h)
        return jax.lax.psum(jnp.sum(h * h) + jnp.sum(ys), "data")

    f = jax.shard_map(body, mesh=_mesh(), in_specs=(P(None, "data"), P()), out_specs=P())

    def loss(x, w):
        return f(x, w)

    x = jnp.asarray(np.random.default_rng(6).standard_normal((3, 8, 8)), jnp.float32)
    w = jnp.asarray(np.random.default_rng(7).standard_normal((8, 8)) * 0.3, jnp.float32)
    vg = jax.value_and_grad(loss, argnums=(0, 1))
    pir = jax2pir.export(vg, x, w)
    assert "spmd func @scan_step.0" in pir and "spmd func @cond" in pir, pir[:3000]
    return f"max error {common.agree(vg, (x, w), rtol=1e-5):.2e}"


@test
def jit_shardings_and_constraint():
    from jax.sharding import NamedSharding, PartitionSpec as P

    mesh = _mesh()

    def f(x, w):
        h = jax.lax.with_sharding_constraint(x @ w, NamedSharding(mesh, P("data", "model")))
        return jnp.tanh(h)

    jf = jax.jit(f, in_shardings=(NamedSharding(mesh, P("data")), NamedSharding(mesh, P(None, "model"))))
    x = jnp.ones((16, 8)) * 0.1
    w = jnp.ones((8, 8)) * 0.2
    pir = jax2pir.export(jf, x, w)
    assert "mesh [data=4, model=2]" in pir, pir
    assert "%x: f32[16,8] on [data, _]" in pir and "%w: f32[8,8] on [_, model]" in pir, pir
    assert "on [data, model]" in pir, pir
    return f"max error {common.agree(jf, (x, w)):.2e}"


# ---- 3. errors and literals ------------------------------------------------------------
@test
def unsupported_primitive_error():
    def uses_lgamma(x):
        return jax.lax.lgamma(x) * 2.0  # the line the error must name

    line = uses_lgamma.__code__.co_firstlineno + 1
    try:
        jax2pir.export(uses_lgamma, jnp.ones(4))
    except jax2pir.UnsupportedError as e:
        msg = str(e)
        assert "'lgamma'" in msg and f"run.py:{line}" in msg, msg
        return msg
    raise AssertionError("no error for lgamma")


@test
def scatter_unsupported_errors():
    """Scatters PIR cannot express: a custom update function, a window along an indexed
    dimension; each error names the form and the user's line."""
    x, i = jnp.ones((5, 4)), jnp.array([0, 2])
    cases = [(lambda x, i: x.at[i].apply(jnp.sin), "x.at[i].apply"),
             (lambda x, i: x.at[i, 1:3].set(jnp.ones((2, 2))), "x.at[i, 1:3].set")]
    msgs = []
    for f, what in cases:
        try:
            jax2pir.export(f, x, i)
            raise AssertionError(f"no error for {what}")
        except jax2pir.UnsupportedError as e:
            assert "'scatter'" in str(e) and what in str(e) and "run.py:" in str(e), str(e)
            msgs.append(str(e).split(": ", 2)[-1])
    return "; ".join(msgs)


@test
def random_unsupported_errors():
    from jax import random

    msgs = []
    try:
        jax2pir.export(lambda s: random.bits(random.key(s, impl="rbg"), (3,)), jnp.int32(0))
        raise AssertionError("no error for the rbg PRNG")
    except jax2pir.UnsupportedError as e:
        assert "'rbg'" in str(e) and "threefry2x32" in str(e), str(e)
        msgs.append(str(e).split(": ", 2)[-1])
    old = jax.config.jax_threefry_partitionable
    jax.config.update("jax_threefry_partitionable", False)
    try:
        jax2pir.export(lambda k: random.bits(k, (3,)), random.PRNGKey(0))
        raise AssertionError("no error with jax_threefry_partitionable=False")
    except jax2pir.UnsupportedError as e:
        assert "jax_threefry_partitionable" in str(e), str(e)
        msgs.append(str(e).split(": ", 2)[-1])
    finally:
        jax.config.update("jax_threefry_partitionable", old)
    return "; ".join(msgs)


@test
def float_literals_round_trip():
    vals = [0.1, 1e-30, 3.4028234663852886e38, 1.1754943508222875e-38, -0.0, 1 / 3,
            16777217.0, 2.5e-05, 123456789.0, float("inf"), -float("inf")]

    def consts(x):
        return [x * np.float32(v) for v in vals] + [jnp.asarray(np.array([0.1, 1e-7, 7.0], np.float32)) * x[0]]

    x = jnp.ones(3)
    pir = jax2pir.export(consts, x)
    got = common.pjc_eval(pir, {"x": np.ones(3, np.float32)})
    want = consts(x)
    for i, w in enumerate(want):
        g = got[f"out0_{i}"]
        if not np.array_equal(np.asarray(g).view(np.uint32), np.asarray(w).view(np.uint32)):
            raise AssertionError(f"constant {i}: pjc {g} != JAX {np.asarray(w)}")
    return f"{len(vals) + 1} constants bitwise equal"


@test
def pytree_names():
    params = {"layer0": {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}, "head": [jnp.ones(2)]}
    names = jax2pir.param_names({"params": params})
    assert names == ["params_head_0", "params_layer0_b", "params_layer0_w"], names
    pir = jax2pir.export(lambda params, x: jax.tree.map(lambda p: p * x, params), params, jnp.float32(2.0),
                         param_names=["", None])
    assert "%layer0_w: f32[2,2]" in pir and "%x: f32[]" in pir, pir
    assert "-> (head_0: f32[2], layer0_b: f32[2], layer0_w: f32[2,2])" in pir, pir
    return "params_layer0_w / layer0_w with param_names=['', None]; results matched to params"


# ---- 4. CLI and committed examples -----------------------------------------------------
EXPORTS = [("jax_mlp", "train_step", "mlp.pir"), ("jax_mlp", "train_step_adam", "mlp_adam.pir"),
           ("jax_flax", "train_step", "flax_multisteps.pir"), ("jax_flax", "train_step_inner", "flax_inner.pir"),
           ("jax_gpt", "train_step", "gpt.pir"), ("jax_resnet", "train_step", "resnet18_small.pir"),
           ("jax_resnet", "train_step_resnet50", "resnet50.pir")]


def _cli_test(example, fn, committed):
    def t():
        d = common.ROOT / "examples" / example
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "m.pir"
            params = [] if "resnet50" in fn else ["--params", Path(tmp) / "p.safetensors"]
            common.run([sys.executable, "-m", "jax2pir", f"{d}/model.py:{fn}", "-o", out, *params])
            common.check(out)
            common.check(d / committed)
            if out.read_text() != (d / committed).read_text():
                raise AssertionError(f"examples/{example}/{committed} is not what the exporter gives "
                                     f"now: regenerate it with examples/{example}/run.sh")
            if not params:
                return f"{committed} up to date, pjc check ok (traced from shapes only)"
            n = len(jax2pir.load_params(Path(tmp) / "p.safetensors"))
        return f"{committed} up to date, pjc check ok, {n} tensors in --params"
    t.__name__ = f"cli_{example}_{fn}"
    TESTS.append(t)


for _e in EXPORTS:
    _cli_test(*_e)


# ---- 5. training agreement ----------------------------------------------------------------
import training  # noqa: E402

RESULTS = {}


def _train_test(example, pir_name, nproc, steps, make_state, state_names, data_names, param_tol,
                evaluated=False):
    """Train `steps` steps with the exported program and with JAX, compare the losses and
    the carried state. Compiled and run under mpirun; `evaluated`: each step run by
    `pjc eval` instead (one process, the reference interpreter)."""
    def t():
        d, data, model = training.load_example(example)
        state = make_state(data, model)
        arrays = data.dataset(STEPS_M[example])
        fn = getattr(model, FN[(example, pir_name)])
        with tempfile.TemporaryDirectory() as tmp:
            files = {}
            for n, a in zip(data_names, arrays):
                files[n] = Path(tmp) / f"{n}.npy"
                np.save(files[n], a)
            inputs = {}
            for n, leaf in zip(jax2pir.leaf_names("", dict(zip(state_names, state))),
                               jax.tree_util.tree_leaves(dict(zip(state_names, state)))):
                inputs[n] = np.asarray(leaf)
            batch = model_batch(d / pir_name)
            if evaluated:
                plosses, out, run_s = training.eval_train(Path(tmp) / "work", d / pir_name, inputs,
                                                          dict(zip(data_names, arrays)), batch, steps)
                compile_s, where = 0.0, "by pjc eval"
            else:
                plosses, out, compile_s, run_s = training.pjc_train(
                    Path(tmp) / "work", d / pir_name, inputs, files, nproc, steps)
                where = f"on {nproc} processes"
        t0 = time.time()  # after pjc's run, so that a compile that cannot work yet ends the test first
        (jstate, jlosses) = training.jax_train(fn, state, [jnp.asarray(a) for a in arrays], batch, steps)
        jax_s = time.time() - t0
        loss_err = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(plosses, jlosses))
        if loss_err > 1e-4:
            raise AssertionError(f"losses differ (max rel {loss_err:.3g} > 1e-4):\n pjc {plosses}\n jax {jlosses}")
        rel, ab, bad = training.compare_params(out, jstate, dict(zip(state_names, jstate)), **param_tol)
        if bad:
            raise AssertionError("parameters differ: " + "; ".join(bad[:8]))
        RESULTS[f"{example}/{pir_name}" + (" (eval)" if evaluated else "")] = dict(
            losses=plosses, jax=jlosses, loss_err=loss_err, rel=rel, abs=ab, compile_s=compile_s, run_s=run_s)
        return (f"{steps} steps {where}: loss {plosses[0]:.5f} -> {plosses[-1]:.5f}, "
                f"max loss rel err {loss_err:.2e}; params max rel {rel:.2e}, max abs {ab:.2e} "
                f"(compile {compile_s:.1f}s, run {run_s:.1f}s, JAX {jax_s:.1f}s)")
    t.__name__ = f"{'eval_' if evaluated else ''}train_{example}_{pir_name}"
    TESTS.append(t)


def model_batch(pir_path):
    """Batch size: dimension 0 of the first data parameter (the one with `on [data`)."""
    import re

    sig = Path(pir_path).read_text().split("func @main(", 1)[1].split(")", 1)[0]
    m = re.search(r"%\w+: \w+\[(\d+)[,\]][^%]*on \[data", sig)
    return int(m.group(1))


@test
def random_sharded_compiled():
    """Random bits are elementwise in the position: a batch-split dropout compiled for 4
    processes gives JAX's bits on every shard (and its normals to a few ulp)."""
    import subprocess

    from jax import random
    from jax.sharding import PartitionSpec as P

    def noisy_dropout(x, k):
        keep = random.bernoulli(k, 0.75, x.shape)
        return (keep, random.bits(k, x.shape), random.normal(random.fold_in(k, 1), x.shape),
                jnp.where(keep, x / 0.75, 0.0))

    x = jnp.asarray(np.random.default_rng(5).standard_normal((64, 24)), jnp.float32)
    k = random.PRNGKey(11)
    pir = jax2pir.export(noisy_dropout, x, k, mesh={"data": 4}, in_shardings=(P("data"), None),
                         out_shardings=(P("data"),) * 4)
    want = [np.asarray(w) for w in noisy_dropout(x, k)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "m.pir").write_text(pir)
        common.run([common.PJC, "compile", tmp / "m.pir", "-o", tmp / "m.bin"])
        jax2pir.save_params(tmp / "in.safetensors", {"x": x, "k": k})
        cmd = ["mpirun", "--oversubscribe", "-np", "4", str(tmp / "m.bin"), "--inputs", str(tmp / "in.safetensors"),
               "--device", "cpu", "--output", str(tmp / "out.safetensors")]
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **training.MPI_ENV}, timeout=600)
        if p.returncode != 0:
            raise AssertionError(f"mpirun failed ({p.returncode}): {p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        got = jax2pir.load_params(tmp / "out.safetensors")
    for i in (0, 1):
        if not np.array_equal(got[f"out{i}"], want[i]):
            raise AssertionError(f"out{i} is not JAX's bit for bit")
    # Normals: erf_inv to a few ulp; the dropout output: XLA multiplies by 1/0.75.
    e = max(common.rel_err(got["out2"], want[2]), common.rel_err(got["out3"], want[3]))
    if not e <= 1e-6:
        raise AssertionError(f"normals or dropout output differ by {e:.3g}")
    return f"mask and bits bit-exact on 4 processes, normals and dropout output within {e:.1e}"


STEPS_M = {"jax_mlp": 512, "jax_gpt": 64, "jax_resnet": 32, "jax_flax": 64}
FN = {("jax_mlp", "mlp.pir"): "train_step", ("jax_mlp", "mlp_adam.pir"): "train_step_adam",
      ("jax_flax", "flax_multisteps.pir"): "train_step", ("jax_flax", "flax_inner.pir"): "train_step_inner",
      ("jax_gpt", "gpt.pir"): "train_step", ("jax_resnet", "resnet18_small.pir"): "train_step"}


def _params_state(data, model):
    return (model.example_params(),)


def _mlp_adam_state(data, model):
    p = model.example_params()
    return (p, model.example_opt_state(p))


_train_test("jax_mlp", "mlp.pir", 4, 8, _params_state, ["params"], ["x", "labels"], {"rtol": 1e-4})
# Adam: each step moves a weight by at most about lr (the update is m/(sqrt(v)+eps), of
# size <= 1), so reassociation noise in a near-zero gradient can flip an update's sign:
# the bound is 2*lr per step; we require 0.1*lr*steps, far below it.
_train_test("jax_mlp", "mlp_adam.pir", 4, 8, _mlp_adam_state, ["params", "opt_state"], ["x", "labels"],
            {"atol": 0.1 * 0.01 * 8})

_train_test("jax_gpt", "gpt.pir", 4, 5, _params_state, ["params"], ["tokens", "targets"], {"rtol": 1e-4})


def _flax_multisteps_state(data, model):
    p = model.example_params()
    return (p, model.example_opt_state(p), model.example_key())


def _flax_inner_state(data, model):
    return (model.example_params(), model.example_key())


# Flax with nn.scan, nn.Dropout (the key carried), optax.MultiSteps (a cond) and a
# fori_loop inner loop: by pjc eval, and compiled under mpirun. MultiSteps applies Adam
# on every EVERY_K-th step; the bound is Adam's, as for the MLP, per update applied.
for _evaluated in (True, False):
    _train_test("jax_flax", "flax_multisteps.pir", 2, 4, _flax_multisteps_state,
                ["params", "opt_state", "key"], ["tokens", "targets"], {"atol": 0.1 * 0.01 * 2},
                evaluated=_evaluated)
    _train_test("jax_flax", "flax_inner.pir", 2, 3, _flax_inner_state, ["params", "key"],
                ["tokens", "targets"], {"rtol": 1e-4}, evaluated=_evaluated)
_train_test("jax_resnet", "resnet18_small.pir", 4, 3, _params_state, ["params"], ["images", "labels"],
            {"rtol": 1e-4})


# Haiku, as Flax above: hk.layer_stack (a scan, the per-block dropout keys its xs),
# hk.dropout with the key passed into the step, clip_by_global_norm and optax.adamw. The
# CLI test regenerates the committed export; training runs by pjc eval and compiled under
# mpirun -np 2. AdamW updates on every step and its decay term (lr*wd*w) is smooth in the
# weight, so the bound is Adam's: 0.1*lr per step.
def _haiku_state(data, model):
    p = model.example_params()
    return (p, model.example_opt_state(p), model.example_key())


_cli_test("jax_haiku", "train_step", "haiku_adamw.pir")
STEPS_M["jax_haiku"] = 64
FN[("jax_haiku", "haiku_adamw.pir")] = "train_step"
for _evaluated in (True, False):
    _train_test("jax_haiku", "haiku_adamw.pir", 2, 3, _haiku_state, ["params", "opt_state", "key"],
                ["tokens", "targets"], {"atol": 0.1 * 0.01 * 3}, evaluated=_evaluated)


# ---- 6. rematerialisation ------------------------------------------------------------------
def _explain_memory(pir, mesh=None):
    """`pjc explain`'s peak memory per device (bytes) and its 'most memory live at once' line."""
    import re

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m.pir").write_text(pir)
        out = common.run([common.PJC, "explain", Path(tmp) / "m.pir"] + (["--mesh", mesh] if mesh else []))
    peak = re.search(r"^peak memory per device: (\d+) bytes", out, re.M)
    most = re.search(r"^most memory live at once: (\d+) bytes, at step (\d+ of \d+)", out, re.M)
    if not peak or not most:
        raise AssertionError(f"pjc explain printed no peak memory:\n{out[-2000:]}")
    return int(peak.group(1)), f"{int(most.group(1))} B live at step {most.group(2)}"


def _xla_memory(fn, args):
    """XLA's own memory analysis of jit(fn): (temporaries, arguments + outputs + temporaries
    - aliased), the figure comparable to pjc's peak."""
    ma = jax.jit(fn).lower(*args).compile().memory_analysis()
    total = (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
             - ma.alias_size_in_bytes)
    return ma.temp_size_in_bytes, total


@test
def remat_peak_below_plain():
    """jax.checkpoint keeps its memory effect: value_and_grad of an 8-layer GELU MLP whose
    activations (2048 x 256 f32, 2 MiB) outweigh its weights (256 KiB), plain and with every
    layer under jax.checkpoint (default policy, nothing_saveable, dots_saveable). The
    backward pass of a remat'ed program recomputes each layer's forward behind a barrier
    (a call of @optimization_barrier.K, which pjc's CSE does not merge with the forward);
    the buffer plan's peak then drops by at least (layers - 2) activations: the plain
    program holds every layer's pre-activation (GELU's derivative needs it) besides its
    input until the backward pass reaches it, the remat'ed one only each layer's input,
    and recomputes one layer at a time. dots_saveable keeps the dot outputs, so it lies
    between the two. Gradients agree with JAX, compiled on 1 process and data-parallel on
    2 (where the per-device saving is half). XLA's memory analysis of the same jitted
    functions is printed beside pjc's."""
    from jax.sharding import PartitionSpec as P

    layers, width, batch = 8, 256, 2048
    act = batch * width * 4

    def layer(w, h):
        return jax.nn.gelu(h @ w)

    def step(wrap):
        f = wrap(layer)

        def loss(ws, x):
            h = x
            for w in ws:
                h = f(w, h)
            return jnp.mean(h * h)
        return jax.value_and_grad(loss)

    cp = jax.checkpoint_policies
    variants = {"plain": step(lambda f: f), "checkpoint": step(jax.checkpoint),
                "nothing_saveable": step(lambda f: jax.checkpoint(f, policy=cp.nothing_saveable)),
                "dots_saveable": step(lambda f: jax.checkpoint(f, policy=cp.dots_saveable))}
    rng = np.random.default_rng(18)
    ws = [jnp.asarray(rng.standard_normal((width, width)) * np.sqrt(2.0 / width), jnp.float32)
          for _ in range(layers)]
    x = jnp.asarray(rng.standard_normal((batch, width)), jnp.float32)
    peak, peak2, most, xla, err = {}, {}, {}, {}, 0.0
    for name, vg in variants.items():
        pir = jax2pir.export(vg, ws, x)
        dots = pir.count("= dot_general")
        if name == "plain":
            assert "optimization_barrier" not in pir, "a barrier in the program without remat"
            plain_dots = dots
        else:
            # The recomputation is there, behind a barrier per layer.
            assert pir.count("= call @optimization_barrier.") == layers, pir[:3000]
            recomputed = 0 if name == "dots_saveable" else layers
            assert dots == plain_dots + recomputed, f"{name}: {dots} dot_generals, plain has {plain_dots}"
        peak[name], most[name] = _explain_memory(pir)
        xla[name] = _xla_memory(vg, (ws, x))
        pir2 = jax2pir.export(vg, ws, x, mesh={"data": 2}, in_shardings=(None, P("data")))
        peak2[name], _ = _explain_memory(pir2)
        if name in ("plain", "checkpoint", "dots_saveable"):
            err = max(err, common.agree(vg, (ws, x), rtol=1e-4, nproc=1))
            err = max(err, common.agree(vg, (ws, x), rtol=1e-4, nproc=2, mesh={"data": 2},
                                        in_shardings=(None, P("data"))))
    for name in variants:
        print(f"  {name:16s} pjc peak {peak[name]:>10d} B ({most[name]}), data=2 per device "
              f"{peak2[name]:>10d} B; XLA temporaries {xla[name][0]:>10d} B, "
              f"arguments+outputs+temporaries {xla[name][1]:>10d} B", flush=True)
    margin = (layers - 2) * act
    for name in ("checkpoint", "nothing_saveable"):
        saved = peak["plain"] - peak[name]
        if saved < margin:
            raise AssertionError(f"{name}: the peak is {peak[name]} B, only {saved} B below the plain "
                                 f"{peak['plain']} B; remat should save at least {margin} B "
                                 f"({layers - 2} activations of {act} B)")
        saved2 = peak2["plain"] - peak2[name]
        if saved2 < margin // 2:
            raise AssertionError(f"{name} on data=2: the per-device peak is {peak2[name]} B, only "
                                 f"{saved2} B below the plain {peak2['plain']} B (want {margin // 2} B)")
    if not peak["checkpoint"] < peak["dots_saveable"] < peak["plain"]:
        raise AssertionError(f"dots_saveable's peak {peak['dots_saveable']} B is not between full "
                             f"remat's {peak['checkpoint']} B and the plain {peak['plain']} B")
    return (f"pjc peak {peak['plain']} B plain -> {peak['checkpoint']} B remat "
            f"({peak['dots_saveable']} B dots_saveable; XLA {xla['plain'][1]} -> {xla['checkpoint'][1]} B "
            f"-> {xla['dots_saveable'][1]} B); gradients max error {err:.2e}")


@test
def remat_forms():
    """jax.checkpoint in a scan body (the barrier inside the backward body) and in a
    shard_map body (a spmd func: the barrier is dropped, docs/jax.md), and a user's
    lax.optimization_barrier on a tuple: gradients by pjc eval and compiled agree with JAX."""
    from jax.sharding import PartitionSpec as P

    w = jnp.asarray(np.random.default_rng(21).standard_normal((8, 8)) * 0.3, jnp.float32)
    xs = jnp.asarray(np.random.default_rng(22).standard_normal((5, 4, 8)), jnp.float32)

    def scanned(w, xs):
        def st(h, x):
            h = jax.checkpoint(lambda h: jnp.tanh(h @ w + x))(h)
            return h, jnp.sum(h)
        h, ys = jax.lax.scan(st, xs[0], xs)
        a, b = jax.lax.optimization_barrier((h, ys))
        return jnp.sum(a * a) + jnp.sum(b)

    vg = jax.value_and_grad(scanned, argnums=(0, 1))
    pir = jax2pir.export(vg, w, xs)
    assert pir.count("= call @optimization_barrier.") >= 2, pir[:3000]
    err = max(common.agree(vg, (w, xs), rtol=1e-5), common.agree(vg, (w, xs), rtol=1e-5, nproc=1))

    def body(x, w):
        f = jax.checkpoint(lambda w, h: jnp.sin(h @ w))
        h = f(w, f(w, x))
        return jax.lax.psum(jnp.sum(h * h), "data")

    g = jax.shard_map(body, mesh=_mesh(), in_specs=(P("data"), P()), out_specs=P())

    def sharded(x, w):
        return g(x, w)

    vg2 = jax.value_and_grad(sharded, argnums=(0, 1))
    x = jnp.asarray(np.random.default_rng(23).standard_normal((16, 8)), jnp.float32)
    err = max(err, common.agree(vg2, (x, w), rtol=1e-5))
    return f"scan body, shard_map body, optimization_barrier: max error {err:.2e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="", help="run only tests whose name contains this")
    a = ap.parse_args()
    if not common.PJC.exists():
        print(f"run.py: FAILED: {common.PJC} does not exist (cargo build --release -p pjc, or set PJC)")
        return 1
    passed = failed = skipped = 0
    for t in TESTS:
        if a.k not in t.__name__:
            continue
        t0 = time.time()
        try:
            info = t()
            passed += 1
            print(f"PASS {t.__name__} ({time.time() - t0:.1f}s): {info}", flush=True)
        except common.Skip as e:
            skipped += 1
            print(f"SKIP {t.__name__}: {e}", flush=True)
        except Exception as e:
            failed += 1
            print(f"FAIL {t.__name__} ({time.time() - t0:.1f}s): {e}", flush=True)
            if not isinstance(e, AssertionError):
                traceback.print_exc()
    print(f"jax: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
