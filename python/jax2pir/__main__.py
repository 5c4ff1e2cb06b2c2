"""python -m jax2pir MODULE_OR_FILE:FUNCTION -o model.pir [--params params.safetensors]

The module (a dotted module name, or a path to a .py file) defines FUNCTION and the
example arguments to trace it with, as either
    def FUNCTION_example_args(): return (params, x, y)      # preferred
or  EXAMPLE_ARGS = (params, x, y)
and optionally the keyword arguments of jax2pir.export (mesh, in_shardings,
out_shardings, param_names, result_names) as
    def FUNCTION_export_options(): return {...}
or  EXPORT_OPTIONS = {...}
--params writes every leaf of the example arguments under its PIR parameter name.
"""

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path


def _load(spec: str):
    if ":" not in spec:
        raise SystemExit(f"jax2pir: expected MODULE_OR_FILE:FUNCTION, got {spec!r}")
    mod_name, fn_name = spec.rsplit(":", 1)
    if mod_name.endswith(".py") or "/" in mod_name:
        path = Path(mod_name).resolve()
        if not path.exists():
            raise SystemExit(f"jax2pir: {mod_name}: no such file")
        sys.path.insert(0, str(path.parent))
        s = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(s)
        sys.modules[path.stem] = module
        s.loader.exec_module(module)
    else:
        sys.path.insert(0, ".")
        module = importlib.import_module(mod_name)
    if not hasattr(module, fn_name):
        raise SystemExit(f"jax2pir: {mod_name} defines no function {fn_name!r}")
    return module, fn_name


def _get(module, fn_name, suffix, const):
    f = getattr(module, f"{fn_name}_{suffix}", None)
    if callable(f):
        return f()
    return getattr(module, const, None)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m jax2pir", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", help="MODULE_OR_FILE:FUNCTION")
    ap.add_argument("-o", "--output", required=True, help="the PIR file to write ('-' for stdout)")
    ap.add_argument("--params", help="write the example arguments to this .safetensors file")
    args = ap.parse_args(argv)

    module, fn_name = _load(args.target)
    fn = getattr(module, fn_name)
    example = _get(module, fn_name, "example_args", "EXAMPLE_ARGS")
    if example is None:
        raise SystemExit(f"jax2pir: {args.target}: define {fn_name}_example_args() or EXAMPLE_ARGS")
    options = _get(module, fn_name, "export_options", "EXPORT_OPTIONS") or {}

    import jax2pir

    try:
        text = jax2pir.export(fn, *example, **options)
    except (jax2pir.UnsupportedError, jax2pir.ExportError, jax2pir.PirTypeError) as e:
        print(str(e), file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    if args.params:
        import jax

        if any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree_util.tree_leaves(example)):
            print("jax2pir: --params: the example arguments are shapes only (ShapeDtypeStruct)",
                  file=sys.stderr)
            return 2
        tensors = jax2pir.param_dict(fn, *example, param_names=options.get("param_names"))
        jax2pir.safetensors.write(args.params, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
