"""Fixtures of the Python package's tests: a real stokerd on a private
socket, real JPEG datasets, and the C++ SDK's view of a job to compare with.

ctest sets STOKERD, MAKE_DATASET, DUMP_BATCHES and PYTHONPATH (the build
tree's package); without them these tests skip.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

torch = pytest.importorskip("torch")


def _tool(name):
    path = os.environ.get(name)
    if not path or not os.path.exists(path):
        pytest.skip(f"{name} is not set (run through ctest)")
    return path


class Daemon:
    """stokerd in a scratch directory: its socket, its segment prefix."""

    def __init__(self, directory, workers=2, extra=()):
        self.dir = directory
        self.socket = os.path.join(directory, "stoker.sock")
        stokerd = _tool("STOKERD")
        self.args = [stokerd, "--config=", f"--socket={self.socket}",
                     f"--workers={workers}", *extra]
        described = subprocess.run(self.args + ["--check_config"], text=True,
                                   capture_output=True, check=True).stdout
        self.prefix = re.search(r"^# rings: /dev/shm/(\S+)\*$", described,
                                re.M).group(1)
        self.log = open(os.path.join(directory, "stokerd.log"), "a")
        self.start()

    def kill(self):
        """SIGKILL: no drain, rings and socket left behind."""
        self.process.kill()
        self.process.wait()

    def start(self):
        self.process = subprocess.Popen(self.args, stderr=self.log)
        deadline = time.monotonic() + 20
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("stokerd did not start: " + self.read_log())
            time.sleep(0.02)

    def _answers(self):
        # A socket left by a killed daemon exists before the new one binds.
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def read_log(self):
        with open(os.path.join(self.dir, "stokerd.log")) as f:
            return f.read()

    def segments(self):
        return [n for n in os.listdir("/dev/shm") if n.startswith(self.prefix)]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)
        self.log.close()


@pytest.fixture
def scratch():
    directory = tempfile.mkdtemp(prefix="stoker-py-")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def daemon(scratch):
    d = Daemon(scratch)
    yield d
    d.stop()
    assert d.process.returncode == 0, d.read_log()
    assert d.segments() == [], "stokerd left segments in /dev/shm"


def make_dataset(root, classes=3, per_class=8, width=160, height=120, **extra):
    """A real ImageFolder of JPEGs (textured, photo-like, varied sizes)."""
    args = [_tool("MAKE_DATASET"), f"--out={root}", f"--classes={classes}",
            f"--per_class={per_class}", f"--width={width}",
            f"--height={height}"]
    args += [f"--{k}={v}" for k, v in extra.items()]
    subprocess.run(args, check=True, capture_output=True)
    return root


@pytest.fixture
def dataset(scratch):
    return make_dataset(os.path.join(scratch, "data"))


PHOTOS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "fixtures", "photos")


def photo_paths():
    """The real photographs of tests/fixtures/photos (see its MANIFEST):
    JPEG, progressive, 4:4:4, greyscale, CMYK, and PNG in RGB, RGBA,
    palette, greyscale and 16 bits, at 100 to 1000 pixels a side."""
    return sorted(os.path.join(PHOTOS, n) for n in os.listdir(PHOTOS)
                  if n.endswith((".jpg", ".png")))


def photo_folder(root, other_formats=False):
    """An ImageFolder of the photographs, a class per source kind. With
    other_formats, every third photograph is also saved by Pillow as lossy
    and lossless WebP, LZW TIFF, BMP and PPM (PGM when greyscale), in a
    class per format."""
    from PIL import Image
    for n, path in enumerate(photo_paths()):
        name = os.path.basename(path)
        kind = name.split(".")[1] if name.count(".") > 1 else "colour"
        os.makedirs(os.path.join(root, kind), exist_ok=True)
        shutil.copy(path, os.path.join(root, kind, name))
        if not other_formats or n % 3:
            continue
        with Image.open(path) as im:
            image = im.convert("L" if im.mode in ("L", "I") else "RGB")
        for fmt, ext, options in (("WEBP", "webp", {"quality": 80}),
                                  ("WEBP", "lossless.webp", {"lossless": True}),
                                  ("TIFF", "tif", {"compression": "tiff_lzw"}),
                                  ("BMP", "bmp", {}),
                                  ("PPM", "pgm" if image.mode == "L" else "ppm",
                                   {})):
            directory = os.path.join(root, ext.split(".")[0])
            os.makedirs(directory, exist_ok=True)
            stem = os.path.splitext(name)[0].replace(".", "_")
            image.save(os.path.join(directory, f"{stem}.{ext}"), fmt,
                       **options)
    return root


def loader_epochs(root, transform, socket, seed, epochs=1):
    """Every image of `epochs` epochs of a stoker.DataLoader over `root`
    in index order (batches of 8): one tensor per epoch."""
    import torch
    import stoker
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               shuffle=False, seed=seed, socket=socket)
    try:
        out = []
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            out.append(torch.cat([images.clone() for images, _ in loader]))
        return out
    finally:
        loader.close()


def dump_batches(daemon, dataset, out, **flags):
    """The C++ SDK's bytes of the first batches of a job: a list of
    (images bytes, labels bytes) per batch, split by the caller."""
    args = [_tool("DUMP_BATCHES"), f"--socket={daemon.socket}",
            f"--dataset={dataset}", f"--out={out}"]
    # The versions stoker.DataLoader sends, so that both ask for the same
    # library behaviours (Pillow's order of resize passes, for one).
    import numpy
    import PIL
    flags = {"reference_pillow": PIL.__version__,
             "reference_numpy": numpy.__version__, **flags}
    args += [f"--{k}={v}" for k, v in flags.items()]
    subprocess.run(args, check=True, capture_output=True, timeout=120)
    with open(out, "rb") as f:
        return f.read()


def run_python(script, *args, env=None, timeout=300):
    """Runs a Python script in a new interpreter (the package from
    PYTHONPATH, as ctest sets it)."""
    return subprocess.run([sys.executable, script, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
