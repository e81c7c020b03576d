"""Pillow's resize against stoker's Pillow-exact resampler, same cases, one
core each: microseconds per image (the best of three runs of about a second
on each side) and the ratio.

  python3 bench/bench_pillow_resample.py build/bench/bench_pillow_resample
"""
import subprocess
import sys
import time

import numpy as np
from PIL import Image

# name: (source size, output size, crop window or None, filter), as in
# bench_pillow_resample.cc.
CASES = {
    "resize256_bilinear": ((500, 375), (341, 256), None, Image.BILINEAR),
    "resize256_bicubic": ((500, 375), (341, 256), None, Image.BICUBIC),
    "resize256_crop224_bilinear": ((500, 375), (341, 256),
                                   (58, 16, 282, 240), Image.BILINEAR),
    "shrink6x_bilinear": ((2000, 1500), (341, 256), None, Image.BILINEAR),
    "enlarge_bicubic": ((100, 80), (224, 224), None, Image.BICUBIC),
    "resize256_nearest": ((500, 375), (341, 256), None, Image.NEAREST),
}

ROUNDS = 3


def pillow_micros(src, out, crop, resample):
    rng = np.random.default_rng(1)
    image = Image.fromarray(rng.integers(0, 256, (src[1], src[0], 3),
                                         np.uint8))
    iterations, start = 0, time.perf_counter()
    while time.perf_counter() - start < 1.0:
        resized = image.resize(out, resample)
        if crop:
            resized.crop(crop).load()
        iterations += 1
    return (time.perf_counter() - start) * 1e6 / iterations


def main():
    # Best of ROUNDS runs on each side: this machine's noise only slows.
    ours = {}
    for _ in range(ROUNDS):
        output = subprocess.run([sys.argv[1]], check=True, text=True,
                                capture_output=True).stdout
        for line in output.splitlines():
            name, micros = line.split()
            ours[name] = min(float(micros), ours.get(name, float("inf")))
    print(f"{'case':30} {'Pillow us':>10} {'stoker us':>10} {'speed-up':>9}")
    for name, (src, out, crop, resample) in CASES.items():
        theirs = min(pillow_micros(src, out, crop, resample)
                     for _ in range(ROUNDS))
        print(f"{name:30} {theirs:10.1f} {ours[name]:10.1f} "
              f"{theirs / ours[name]:8.2f}x")


if __name__ == "__main__":
    main()
