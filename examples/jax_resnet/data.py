"""Synthetic images and initial parameters for the JAX ResNet example (numpy only).

    python data.py OUTDIR [--examples M]

writes OUTDIR/images.npy (f32[M,32,32,3], NHWC), OUTDIR/labels.npy (i32[M]) and
OUTDIR/params.safetensors: the small ResNet-18 (widths 8/16/32/64) under its PIR
names (params_stem_conv, params_stages_0_0_conv1, ...). Each class adds a fixed random
pattern to Gaussian noise, so the classes can be told apart.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from jax2pir import safetensors  # noqa: E402

CLASSES = 10
# name: (image size, stem, block kind, blocks per stage, stage widths, batch)
CONFIGS = {
    "resnet18_small": (32, "cifar", "basic", (2, 2, 2, 2), (8, 16, 32, 64), 8),
    "resnet50": (224, "imagenet", "bottleneck", (3, 4, 6, 3), (64, 128, 256, 512), 8),
}


def init_params(config="resnet18_small", seed=0):
    size, stem, kind, blocks, widths, _ = CONFIGS[config]
    r = np.random.default_rng(seed)

    def conv(k, cin, cout):
        return (r.standard_normal((k, k, cin, cout)) * np.sqrt(2.0 / (k * k * cin))).astype(np.float32)

    def bn(c):
        return {"g": np.ones(c, np.float32), "b": np.zeros(c, np.float32)}

    c0 = widths[0]
    params = {"stem": {"conv": conv(7 if stem == "imagenet" else 3, 3, c0), "bn": bn(c0)}, "stages": []}
    cin = c0
    expansion = 4 if kind == "bottleneck" else 1
    for s, (n, w) in enumerate(zip(blocks, widths)):
        stage = []
        for i in range(n):
            stride = 2 if (i == 0 and s > 0) else 1
            cout = w * expansion
            if kind == "basic":
                blk = {"conv1": conv(3, cin, w), "bn1": bn(w), "conv2": conv(3, w, w), "bn2": bn(w)}
            else:
                blk = {"conv1": conv(1, cin, w), "bn1": bn(w), "conv2": conv(3, w, w), "bn2": bn(w),
                       "conv3": conv(1, w, cout), "bn3": bn(cout)}
            if stride != 1 or cin != cout:
                blk["proj"] = conv(1, cin, cout)
                blk["bnp"] = bn(cout)
            stage.append(blk)
            cin = cout
        params["stages"].append(stage)
    params["fc"] = {"w": (r.standard_normal((cin, CLASSES)) / np.sqrt(cin)).astype(np.float32),
                    "b": np.zeros(CLASSES, np.float32)}
    return params



def dataset(m, config="resnet18_small", seed=1):
    size = CONFIGS[config][0]
    r = np.random.default_rng(seed)
    patterns = r.standard_normal((CLASSES, size, size, 3)).astype(np.float32)
    labels = r.integers(0, CLASSES, m).astype(np.int32)
    images = (0.5 * r.standard_normal((m, size, size, 3)).astype(np.float32) + patterns[labels])
    return images.astype(np.float32), labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--examples", type=int, default=64)
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    images, labels = dataset(a.examples)
    np.save(out / "images.npy", images)
    np.save(out / "labels.npy", labels)
    safetensors.write(out / "params.safetensors", safetensors.flatten(init_params(), "params"))
    print(f"wrote {out}/images.npy {images.shape}, labels.npy, params.safetensors")


if __name__ == "__main__":
    main()
