"""Every image format torchvision's ImageFolder lists (IMG_EXTENSIONS), read
by stoker.DataLoader and by torchvision's ImageFolder with its default
loader (PIL.Image.open(f).convert("RGB")): the same classes, the same sample
order and labels, the same bytes image by image.

The folder is built at test time: photo-like images (the JPEGs make_dataset
writes, decoded by Pillow) saved by Pillow itself in each variant it writes
(WebP lossy and lossless, with and without alpha; TIFF RGB, RGBA, L, LA, P,
PA and 1-bit, uncompressed, LZW, deflate, PackBits and group 4, several
strips, several pages; BMP 24- and 32-bit, palette, grey and 1-bit; PPM,
PGM and PBM), and, for layouts Pillow does not write, files put together
here byte by byte and read by Pillow all the same (tiled TIFF, MinIsWhite,
associated alpha, 2- and 4-bit samples; top-down, 4-bit, bit-field and
short-palette BMP; PPM header comments). A hidden class directory and
upper-case extensions are part of it, as torchvision counts them.
"""
import io
import os
import struct
import subprocess
import tempfile
import zlib

import numpy as np
import pytest
from conftest import _tool

Image = pytest.importorskip("PIL.Image")
T = pytest.importorskip("torchvision.transforms")
datasets = pytest.importorskip("torchvision.datasets")

W, H = 263, 197  # odd: BMP rows need padding, TIFF tiles are partial


@pytest.fixture(scope="module")
def photos():
    """Photo-like RGB images of W x H, and an alpha channel for each with
    opaque, transparent and partly transparent parts."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([_tool("MAKE_DATASET"), f"--out={tmp}/d",
                        "--classes=1", "--per_class=8", "--width=500",
                        "--height=375"], check=True, stdout=subprocess.DEVNULL)
        rgb = []
        for root, _, files in os.walk(f"{tmp}/d"):
            for name in sorted(files):
                with Image.open(os.path.join(root, name)) as im:
                    x, y = 17 * len(rgb), 11 * len(rgb)
                    rgb.append(im.convert("RGB").crop((x, y, x + W, y + H)))
    alphas = []
    for i, im in enumerate(rgb):
        a = np.asarray(rgb[(i + 3) % len(rgb)].convert("L")).astype(int)
        a = np.clip((a - 60) * 2, 0, 255).astype(np.uint8)  # 0s and 255s
        alphas.append(Image.fromarray(a, "L"))
    return rgb, alphas


def saved(im, fmt, **options):
    buf = io.BytesIO()
    im.save(buf, fmt, **options)
    return buf.getvalue()


def with_alpha(rgb, alpha):
    im = rgb.copy()
    im.putalpha(alpha)
    return im


# ---- TIFF put together by hand, for the layouts Pillow does not write ----

def packbits(row):
    out = bytearray()
    for i in range(0, len(row), 128):
        chunk = row[i:i + 128]
        out += bytes([len(chunk) - 1]) + chunk
    return bytes(out)


def tiff(pixels, photometric, bits, spp, extra=(), colormap=None,
         compression=1, tile=None, rows_per_strip=50, width=W):
    """A little-endian TIFF of `pixels` (rows of packed samples, as the
    file stores them), in strips or in tiles of `tile` = (width, height)."""
    height = len(pixels)

    def encode(rows):
        if compression == 32773:
            return b"".join(packbits(r) for r in rows)
        data = b"".join(rows)
        return zlib.compress(data) if compression == 8 else data

    chunks = []
    if tile:
        tw, th = tile
        tile_row = (tw * spp * bits + 7) // 8
        for y in range(0, height, th):
            for x in range(0, width, tw):
                rows = []
                for r in range(th):
                    src = pixels[y + r] if y + r < height else b""
                    part = src[x * spp * bits // 8:][:tile_row]
                    rows.append(part + bytes(tile_row - len(part)))
                chunks.append(encode(rows))
    else:
        for y in range(0, height, rows_per_strip):
            chunks.append(encode(pixels[y:y + rows_per_strip]))
    data = b"".join(chunks)
    offsets, at = [], 8
    for c in chunks:
        offsets.append(at)
        at += len(c)
    tags = {256: (4, [width]), 257: (4, [height]), 258: (3, [bits] * spp),
            259: (3, [compression]), 262: (3, [photometric]),
            277: (3, [spp]), 284: (3, [1])}
    if tile:
        tags.update({322: (3, [tile[0]]), 323: (3, [tile[1]]),
                     324: (4, offsets), 325: (4, [len(c) for c in chunks])})
    else:
        tags.update({273: (4, offsets), 278: (4, [rows_per_strip]),
                     279: (4, [len(c) for c in chunks])})
    if extra:
        tags[338] = (3, list(extra))
    if colormap is not None:
        tags[320] = (3, list(colormap))
    ifd_at = at + (at & 1)
    blob = bytearray()
    blob_at = ifd_at + 2 + 12 * len(tags) + 4
    entries = b""
    for tag in sorted(tags):
        kind, values = tags[tag]
        fmt = "H" if kind == 3 else "I"
        packed = struct.pack(f"<{len(values)}{fmt}", *values)
        if len(packed) <= 4:
            field = packed + bytes(4 - len(packed))
        else:
            field = struct.pack("<I", blob_at + len(blob))
            blob += packed
        entries += struct.pack("<HHI", tag, kind, len(values)) + field
    return (b"II*\x00" + struct.pack("<I", ifd_at) + data +
            bytes(ifd_at - at) + struct.pack("<H", len(tags)) + entries +
            b"\x00\x00\x00\x00" + bytes(blob))


def rows_of(array):
    return [bytes(r) for r in np.ascontiguousarray(array)]


def packed_rows(values, bits):
    """Rows of `values` (< 2**bits) packed MSB first, each row on a byte."""
    return [bytes(np.packbits(np.unpackbits(
        row.astype(np.uint8)[:, None], axis=1)[:, 8 - bits:].reshape(-1)))
        for row in values]


def crafted_tiffs(rgb, alpha, gray):
    rgba = np.dstack([np.asarray(rgb), np.asarray(alpha)])
    levels16 = np.asarray(gray) >> 4
    cmap16 = ([(i * 16 + 5) * 257 for i in range(16)] +
              [(255 - i * 16) * 256 for i in range(16)] +
              [(i * 7) * 256 + 255 for i in range(16)])
    out = {
        "tiled_none.tif": tiff(rows_of(np.asarray(rgb)), 2, 8, 3,
                               tile=(64, 48)),
        "tiled_deflate.tif": tiff(rows_of(np.asarray(rgb)), 2, 8, 3,
                                  compression=8, tile=(32, 64)),
        "tiled_packbits_gray.TIF": tiff(rows_of(np.asarray(gray)), 1, 8, 1,
                                        compression=32773, tile=(48, 32)),
        "miniswhite8.tif": tiff(rows_of(np.asarray(gray)), 0, 8, 1),
        "miniswhite1.tif": tiff(packed_rows(np.asarray(gray) > 120, 1), 0,
                                1, 1, compression=8),
        "gray4.tif": tiff(packed_rows(levels16, 4), 1, 4, 1),
        "gray2_miniswhite.tif": tiff(packed_rows(levels16 >> 2, 2), 0, 2, 1),
        "palette4.tif": tiff(packed_rows(levels16, 4), 3, 4, 1,
                             colormap=cmap16, compression=32773),
        "assoc_alpha.tif": tiff(rows_of(rgba), 2, 8, 4, extra=(1,)),
        "unassoc_alpha_deflate.tif": tiff(rows_of(rgba), 2, 8, 4, extra=(2,),
                                          compression=8),
        "rgbx_two_extra.tif": tiff(
            rows_of(np.dstack([rgba, np.asarray(gray)])), 2, 8, 5,
            extra=(1, 0)),
    }
    return out


# ---- BMP and PNM put together by hand ----

def bmp(width, height, bits, rows, palette=b"", colors=0, compression=0,
        header=40, masks=b""):
    """rows: stored rows (bottom-up unless height < 0), unpadded."""
    stride = (width * bits + 31) // 32 * 4
    data = b"".join(r + bytes(stride - len(r)) for r in rows)
    if header == 12:  # OS/2 1.x: 16-bit sizes, nothing more
        info = struct.pack("<IHHHH", 12, width, height, 1, bits)
    else:
        info = struct.pack("<IiiHHIIiiII", header, width, height, 1, bits,
                           compression, len(data), 2835, 2835, colors, 0)
    info += masks + bytes(header - len(info) - len(masks))
    offset = 14 + header + len(palette)
    return (b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) +
            info + palette + data)


def crafted_bmps(rgb, gray):
    a = np.asarray(rgb)
    bgr_rows = [bytes(r) for r in a[::-1, :, ::-1]]
    xbgr = np.dstack([np.full(a.shape[:2], 7, np.uint8), a[:, :, ::-1]])
    levels16 = np.asarray(gray) >> 4
    palette16 = b"".join(bytes([i * 9, 255 - i * 13, i * 16, 0])
                         for i in range(16))
    palette5 = b"".join(bytes([i * 50, 30, 200 - i * 40, 0]) for i in range(5))
    return {
        "topdown.bmp": bmp(W, -H, 24, [bytes(r) for r in a[:, :, ::-1]]),
        "palette4.bmp": bmp(W, H, 4, packed_rows(levels16[::-1], 4),
                            palette=palette16),
        "xbgr.bmp": bmp(W, H, 32, [bytes(r) for r in xbgr[::-1]],
                        compression=3, header=108,
                        masks=struct.pack("<4I", 0xFF000000, 0xFF0000,
                                          0xFF00, 0)),
        # Five colours for 8-bit indices: the rest are Pillow's grey ramp.
        "short_palette.bmp": bmp(W, H, 8,
                                 rows_of(np.asarray(gray)[::-1] % 10),
                                 palette=palette5, colors=5),
        "os2.bmp": bmp(W, H, 24, bgr_rows, header=12),
    }


def crafted_pnms(rgb, gray):
    a = np.asarray(rgb).tobytes()
    g = np.asarray(gray).tobytes()
    return {
        "comments.ppm": (b"P6\n# a comment\n%d #width\n%d\n255\n" % (W, H)) + a,
        "tabs.pgm": b"P5\t%d\t%d\t255\r" % (W, H) + g,
    }


def build_folder(root, rgb, alphas):
    """The ImageFolder: {class: {file name: bytes}}, written under root."""
    pick = lambda i: rgb[i % len(rgb)]  # noqa: E731
    alpha = lambda i: alphas[i % len(alphas)]  # noqa: E731
    gray = pick(5).convert("L")
    p = pick(6).quantize(200)
    classes = {
        ".hidden": {"a.jpg": saved(pick(0), "JPEG", quality=90),
                    "B.PNG": saved(pick(1), "PNG")},
        "webp": {
            "lossy.webp": saved(pick(0), "WEBP", quality=80),
            "lossless.webp": saved(pick(1), "WEBP", lossless=True),
            "lossy_alpha.WEBP": saved(with_alpha(pick(2), alpha(2)), "WEBP",
                                      quality=75),
            "lossless_alpha.webp": saved(with_alpha(pick(3), alpha(3)),
                                         "WEBP", lossless=True, exact=True),
            "lossless_alpha_inexact.webp": saved(
                with_alpha(pick(4), alpha(4)), "WEBP", lossless=True),
            # The content decides, not the name.
            "webp_named.jpg": saved(pick(5), "WEBP", quality=90),
        },
        "tiff": {
            "rgb.tif": saved(pick(0), "TIFF"),
            "rgb_lzw.tiff": saved(pick(1), "TIFF", compression="tiff_lzw"),
            "rgb_deflate.TIFF": saved(pick(2), "TIFF",
                                      compression="tiff_adobe_deflate"),
            "rgb_old_deflate.tif": saved(pick(3), "TIFF",
                                         compression="tiff_deflate"),
            "rgb_packbits.tif": saved(pick(4), "TIFF", compression="packbits"),
            "rgba.tif": saved(with_alpha(pick(5), alpha(5)), "TIFF"),
            "rgba_lzw.tif": saved(with_alpha(pick(6), alpha(6)), "TIFF",
                                  compression="tiff_lzw"),
            "gray.tif": saved(gray, "TIFF"),
            "gray_lzw.tif": saved(gray, "TIFF", compression="tiff_lzw"),
            "la.tif": saved(with_alpha(gray, alpha(1)), "TIFF"),
            "palette.tif": saved(p, "TIFF"),
            "palette_deflate.tif": saved(p, "TIFF",
                                         compression="tiff_adobe_deflate"),
            "pa.tif": saved(with_alpha(p.convert("PA"), alpha(2)), "TIFF"),
            "bits.tif": saved(pick(7).convert("1"), "TIFF"),
            "bits_g4.tif": saved(pick(7).convert("1"), "TIFF",
                                 compression="group4"),
            "bits_packbits.tif": saved(pick(0).convert("1"), "TIFF",
                                       compression="packbits"),
            "pages.tif": saved(pick(1), "TIFF", save_all=True,
                               append_images=[pick(2), pick(3)]),
            **crafted_tiffs(pick(4), alpha(4), gray),
        },
        "bmp": {
            "rgb.bmp": saved(pick(0), "BMP"),
            "rgba.BMP": saved(with_alpha(pick(1), alpha(1)), "BMP"),
            "palette.bmp": saved(p, "BMP"),
            "gray.bmp": saved(gray, "BMP"),
            "bits.bmp": saved(pick(2).convert("1"), "BMP"),
            **crafted_bmps(pick(3), gray),
        },
        "pnm": {
            "rgb.ppm": saved(pick(0), "PPM"),
            "gray.PGM": saved(gray, "PPM"),
            "bits.ppm": saved(pick(1).convert("1"), "PPM"),
            **crafted_pnms(pick(2), gray),
        },
    }
    for name, files in classes.items():
        os.makedirs(os.path.join(root, name))
        for file_name, data in files.items():
            with open(os.path.join(root, name, file_name), "wb") as f:
                f.write(data)
    return classes


@pytest.fixture(scope="module")
def folder(photos):
    with tempfile.TemporaryDirectory(prefix="stoker-formats-") as tmp:
        root = os.path.join(tmp, "data")
        build_folder(root, *photos)
        yield root


def test_the_folder_holds_every_variant_pillow_reads(folder):
    """The files are what they claim: Pillow reads each, in the format the
    test means (a variant Pillow misread would make the test moot)."""
    seen = {}
    for cls in os.listdir(folder):
        for name in os.listdir(os.path.join(folder, cls)):
            with Image.open(os.path.join(folder, cls, name)) as im:
                seen[name] = (im.format, im.mode, im.size)
                im.convert("RGB").load()
    assert all(size == (W, H) for _, _, size in seen.values()), seen
    assert seen["webp_named.jpg"][0] == "WEBP"
    assert seen["lossy_alpha.WEBP"][1] == "RGBA"
    assert seen["assoc_alpha.tif"][1] == "RGBA"
    assert seen["miniswhite1.tif"][1] == "1"
    assert seen["gray4.tif"][1] == "L"
    assert seen["palette4.tif"][1] == "P"
    assert seen["pa.tif"][1] == "PA"
    assert seen["gray.bmp"][1] == "L" and seen["bits.bmp"][1] == "1"
    assert seen["short_palette.bmp"][1] == "P"
    assert seen["bits.ppm"][1] == "1"
    assert len(seen) > 50


@pytest.mark.parametrize("name", ["full", "eval"])
def test_loader_gives_torchvisions_bytes_for_every_format(daemon, folder,
                                                          name):
    """Image by image, in torchvision's order, with its labels: the whole
    decoded image (a resize to its own size is Pillow's copy), and
    Resize(256) + CenterCrop(224)."""
    import torch

    import stoker
    transform = {
        "full": T.Compose([T.Resize((H, W)), T.PILToTensor()]),
        "eval": T.Compose([T.Resize(256), T.CenterCrop(224),
                           T.PILToTensor()]),
    }[name]
    reference = datasets.ImageFolder(folder, transform)
    assert ".hidden" in reference.classes
    loader = stoker.DataLoader(folder, transform=transform, batch_size=7,
                               shuffle=False, on_error="fail",
                               socket=daemon.socket)
    assert loader.classes == reference.classes
    batches = [(images.clone(), labels.clone()) for images, labels in loader]
    loader.close()
    got = torch.cat([images for images, _ in batches])
    labels = torch.cat([labels for _, labels in batches]).tolist()
    assert labels == reference.targets
    want = [reference[i][0] for i in range(len(reference))]
    assert got.shape[0] == len(want)
    differ = [(os.path.relpath(reference.samples[i][0], folder),
               int((got[i].int() - w.int()).abs().max()))
              for i, w in enumerate(want) if not torch.equal(got[i], w)]
    assert not differ, f"{len(differ)} of {len(want)} differ: {differ}"


def test_an_empty_class_is_refused_by_name_as_torchvision_does(daemon,
                                                               scratch,
                                                               photos):
    import stoker
    root = os.path.join(scratch, "d")
    os.makedirs(os.path.join(root, "cat"))
    os.makedirs(os.path.join(root, "dog"))
    photos[0][0].save(os.path.join(root, "cat", "a.tiff"))
    with open(os.path.join(root, "dog", "notes.txt"), "w") as f:
        f.write("no image here")
    with pytest.raises(FileNotFoundError, match="dog"):
        datasets.ImageFolder(root)
    with pytest.raises(stoker.InvalidArgument,
                       match="found no valid file for the classes dog"):
        stoker.DataLoader(root, transform=T.Resize((32, 32)),
                          socket=daemon.socket)
    # No class directory at all: torchvision raises too.
    empty = os.path.join(scratch, "empty")
    os.makedirs(empty)
    with pytest.raises(FileNotFoundError):
        datasets.ImageFolder(empty)
    with pytest.raises(stoker.InvalidArgument, match="no class directory"):
        stoker.DataLoader(empty, transform=T.Resize((32, 32)),
                          socket=daemon.socket)
