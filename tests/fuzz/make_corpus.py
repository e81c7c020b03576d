#!/usr/bin/python3
"""Writes the seed corpus of fuzz_decode (run once, from this directory,
with Debian's python3-pil): small JPEGs (baseline, progressive, grayscale,
CMYK), PNGs (RGB, RGBA, palette, grayscale, 16-bit), WebPs (lossy, lossless
with alpha), TIFFs (LZW RGB, RGBA, palette, group 4), BMPs (24-bit, palette)
and PPM/PGM, each behind a few 8-byte pipeline selectors (see
fuzz_decode.cc)."""
import io
import os

import numpy as np
from PIL import Image


def images():
    y, x = np.mgrid[0:18, 0:24]
    rgb = np.stack([x * 10, y * 14, (x + y) * 6], axis=-1).astype(np.uint8)
    img = Image.fromarray(rgb, "RGB")
    out = {}
    for name, kwargs in {"baseline": {}, "progressive": {"progressive": True}}.items():
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=85, **kwargs)
        out[f"{name}.jpg"] = buf.getvalue()
    for name, im in {"gray.jpg": img.convert("L"), "cmyk.jpg": img.convert("CMYK")}.items():
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=85)
        out[name] = buf.getvalue()
    for name, im in {"rgb.png": img, "rgba.png": img.convert("RGBA"),
                     "palette.png": img.convert("P"), "gray.png": img.convert("L"),
                     "gray16.png": Image.fromarray((rgb[..., 0].astype(np.uint16) * 257), "I;16")}.items():
        buf = io.BytesIO()
        im.save(buf, "PNG")
        out[name] = buf.getvalue()
    rgba = img.convert("RGBA")
    rgba.putalpha(img.convert("L"))
    others = {
        "lossy.webp": (img, "WEBP", {"quality": 80}),
        "lossless.webp": (rgba, "WEBP", {"lossless": True}),
        "rgb.tif": (img, "TIFF", {"compression": "tiff_lzw"}),
        "rgba.tif": (rgba, "TIFF", {}),
        "palette.tif": (img.convert("P"), "TIFF", {"compression": "packbits"}),
        "bits.tif": (img.convert("1"), "TIFF", {"compression": "group4"}),
        "rgb.bmp": (img, "BMP", {}),
        "palette.bmp": (img.convert("P"), "BMP", {}),
        "rgb.ppm": (img, "PPM", {}),
        "gray.pgm": (img.convert("L"), "PPM", {}),
    }
    for name, (im, fmt, options) in others.items():
        buf = io.BytesIO()
        im.save(buf, fmt, **options)
        out[name] = buf.getvalue()
    return out


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(here, exist_ok=True)
    selectors = [bytes([0x00, 23, 17, 0, 1, 2, 3, 4]),   # resize, uint8
                 bytes([0x0D, 40, 30, 5, 9, 9, 9, 9]),   # crop, flip, jitter
                 bytes([0x52, 16, 16, 3, 7, 0, 0, 1]),   # resize+crop, f32 NCHW
                 bytes([0xB1, 48, 8, 0, 0, 0, 0, 0])]    # crop, f16, nearest
    for name, data in images().items():
        for i, selector in enumerate(selectors):
            with open(os.path.join(here, f"{name}.{i}"), "wb") as f:
                f.write(selector + data)


if __name__ == "__main__":
    main()
