"""jax2pir: export JAX functions to PIR, the array IR that pjc compiles.

    import jax2pir
    text = jax2pir.export(train_step, params, x, y, mesh={"data": 4},
                          in_shardings=(None, P("data"), P("data")),
                          result_names=["params", "loss"])
    jax2pir.save_params("params.safetensors", {"params": params})

See docs/jax.md in the pjc repository for the naming scheme, the CLI and the table of
supported primitives.
"""

from . import safetensors  # numpy only: usable without JAX (data generators)

__all__ = ["export", "save_params", "load_params", "param_names", "UnsupportedError",
           "ExportError", "PirTypeError", "param_dict"]
__version__ = "0.1.0"


_LAZY = {"export": "_export", "param_dict": "_export", "leaf_names": "_export",
         "ExportError": "_export", "UnsupportedError": "_builder", "PirTypeError": "_text"}


def __getattr__(name):
    # JAX is imported on first use of the exporter, so that `jax2pir.safetensors` (and
    # the examples' data generators) work on a machine without JAX.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)


def param_names(tree):
    """The PIR names of the leaves of `tree`, a dict keyed by argument names."""
    from ._export import leaf_names

    return leaf_names("", tree)


def save_params(path, tree):
    """Write the leaves of `tree` to a safetensors file under their PIR names.

    `tree` is keyed like the exported function's arguments, e.g.
    `{"params": params, "opt_state": opt_state}` gives `params_layer0_w`, ... — the
    names `export` gives the parameters (a leaf argument keeps its own name: `{"x": x}`).
    """
    import jax

    from ._export import leaf_array, leaf_names

    names = leaf_names("", tree)
    leaves = jax.tree_util.tree_leaves(tree)
    safetensors.write(path, {n: leaf_array(v) for n, v in zip(names, leaves)})


def load_params(path):
    """{name: numpy array} from a safetensors file (e.g. the executable's --output)."""
    return safetensors.read(path)
