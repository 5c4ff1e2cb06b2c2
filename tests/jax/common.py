"""Helpers of the JAX agreement tests: run pjc on exported programs, compare with JAX."""

import contextlib
import os
import shutil
import re
import subprocess
import tempfile
from pathlib import Path

import jax
import numpy as np

import jax2pir

ROOT = Path(__file__).resolve().parents[2]
PJC = Path(os.environ.get("PJC", ROOT / "target" / "release" / "pjc"))

class Skip(Exception):
    """A test that cannot run yet, and says what is missing (reported as SKIP)."""


_SIG = re.compile(r"^func @main\((.*)\) -> \((.*)\) \{$", re.M)


def result_names(pir: str):
    m = _SIG.search(pir)
    names = []
    depth, cur = 0, ""
    for ch in m.group(2):  # split on top-level commas (shardings hold commas)
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
        else:
            cur += ch
    names.append(cur)
    return [n.split(":")[0].strip() for n in names]


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError(f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n"
                             f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def check(pir_path):
    run([PJC, "check", pir_path])


@contextlib.contextmanager
def _workdir(workdir):
    """The caller's directory, or a fresh temporary one that is removed when the run
    succeeds (a failing run keeps it, so its program, inputs and executable can be looked
    at; the error names its files)."""
    if workdir:
        d = Path(workdir)
        d.mkdir(parents=True, exist_ok=True)
        yield d
        return
    d = Path(tempfile.mkdtemp(prefix="jax2pir-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def pjc_eval(pir: str, inputs: dict, workdir=None) -> dict:
    with _workdir(workdir) as d:
        (d / "prog.pir").write_text(pir)
        check(d / "prog.pir")
        jax2pir.safetensors.write(d / "in.safetensors", inputs)
        run([PJC, "eval", d / "prog.pir", "--inputs", d / "in.safetensors",
             "--output", d / "out.safetensors"])
        return jax2pir.safetensors.read(d / "out.safetensors")


def compile_pir(pir_path, exe):
    """`pjc compile`; any failure (an op reported unsupported too) fails the test: every
    exported program, version 2 control flow included, must compile."""
    p = subprocess.run([str(PJC), "compile", str(pir_path), "-o", str(exe)], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"pjc compile {pir_path} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")


MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl": "self,vader", "OMPI_MCA_pml": "ob1"}


def pjc_compiled(pir: str, inputs: dict, nproc=1, workdir=None, timeout=120) -> dict:
    """Like pjc_eval, through `pjc compile` and the executable (under mpirun when
    nproc > 1); the small test programs finish in seconds, so a run past `timeout`
    seconds (a loop that does not end) fails."""
    with _workdir(workdir) as d:
        (d / "prog.pir").write_text(pir)
        compile_pir(d / "prog.pir", d / "prog.bin")
        jax2pir.safetensors.write(d / "in.safetensors", inputs)
        cmd = [d / "prog.bin", "--inputs", d / "in.safetensors", "--device", "cpu", "--output", d / "out.safetensors"]
        if nproc > 1:
            cmd = ["mpirun", "--oversubscribe", "-np", str(nproc)] + cmd
        try:
            run(cmd, env={**os.environ, **MPI_ENV}, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{' '.join(map(str, cmd))} did not finish in {timeout} s") from None
        return jax2pir.safetensors.read(d / "out.safetensors")


def rel_err(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    scale = max(np.max(np.abs(want)), 1e-30)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        diff = np.abs(got - want)
    both_nan = np.isnan(got) & np.isnan(want)
    diff = np.where(both_nan, 0.0, diff)
    both_inf = np.isinf(got) & np.isinf(want) & (np.sign(got) == np.sign(want))
    diff = np.where(both_inf, 0.0, diff)
    return float(np.max(diff) / scale)


def agree(fn, args, rtol=1e-5, nproc=None, **kw):
    """Export fn, evaluate it with pjc eval (or, with `nproc`, compile it and run it on
    that many processes), compare every result with JAX's; returns max error."""
    pir = jax2pir.export(fn, *args, **kw)
    inputs = jax2pir.param_dict(fn, *args, param_names=kw.get("param_names"))
    got = pjc_eval(pir, inputs) if nproc is None else pjc_compiled(pir, inputs, nproc)
    # A typed PRNG key result is exported as its u32 key data.
    want = [jax2pir._export.leaf_array(w) for w in jax.tree_util.tree_leaves(fn(*args))]
    names = result_names(pir)
    worst = 0.0
    for n, w in zip(names, want):
        e = rel_err(got[n], w)
        if not e <= rtol:
            raise AssertionError(f"{getattr(fn, '__name__', fn)}: result {n} differs from JAX by "
                                 f"{e:.3g} (rtol {rtol})\n got {np.ravel(got[n])[:6]}\nwant {np.ravel(w)[:6]}")
        worst = max(worst, e)
    return worst
