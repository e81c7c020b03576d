"""A PEP 517 build backend for the stoker package that needs nothing but the
standard library, so that pip installs it without network access.

The wheel holds stoker/*.py and, when one is found, libstoker.so.1 as
stoker/_lib/libstoker.so.1 (then the wheel is tagged for this platform):
$STOKER_LIBRARY, else $STOKER_BUILD_DIR/client/libstoker.so.1, else the
project's build tree (../build/client/libstoker.so.1).
"""
import base64
import hashlib
import io
import os
import sysconfig
import tarfile
import zipfile

NAME, VERSION = "stoker", "0.2.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SONAME = "libstoker.so.1"


def _library():
    candidates = [os.environ.get("STOKER_LIBRARY", "")]
    if os.environ.get("STOKER_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["STOKER_BUILD_DIR"],
                                       "client", SONAME))
    candidates.append(os.path.join(HERE, "..", "build", "client", SONAME))
    for candidate in candidates:
        if candidate and os.path.isfile(candidate):
            return os.path.realpath(candidate)
    return None


def _metadata():
    with open(os.path.join(HERE, "README.md")) as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: PyTorch DataLoader served by the stokerd data-loading "
            "daemon\nLicense: Apache-2.0\nRequires-Python: >=3.9\n"
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return f"{path},sha256={digest.rstrip(b'=').decode()},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    files = {}
    package = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as f:
                files[f"{NAME}/{name}"] = f.read()
    library = _library()
    tag = "py3-none-any"
    if library:
        with open(library, "rb") as f:
            files[f"{NAME}/_lib/{SONAME}"] = f.read()
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        tag = f"py3-none-{platform}"
    info = f"{NAME}-{VERSION}.dist-info"
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: stoker_build\n"
        f"Root-Is-Purelib: {'false' if library else 'true'}\nTag: {tag}\n"
    ).encode()
    record = [_record_line(path, data) for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{NAME}-{VERSION}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            entry = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = (0o755 if path.endswith(SONAME)
                                   else 0o644) << 16
            wheel.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for part in ("pyproject.toml", "README.md", "build_backend", NAME):
            sdist.add(os.path.join(HERE, part), f"{base}/{part}",
                      filter=lambda t: None if "__pycache__" in t.name else t)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
