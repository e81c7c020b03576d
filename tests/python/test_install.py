"""The package installs three ways and finds its library: from the build
tree (PYTHONPATH=build/python), with pip from the source directory into a
virtualenv without network access, and through STOKER_LIBRARY. (The Debian
package python3-stoker is checked by tests/package_test.sh.)"""
import os
import subprocess
import sys

import pytest

BUILD = os.environ.get("STOKER_BUILD_DIR")
SOURCE = os.environ.get("STOKER_SOURCE_DIR")
pytestmark = pytest.mark.skipif(not BUILD or not SOURCE,
                                reason="run through ctest")
PROBE = ("import stoker, stoker._native as n; "
         "print(stoker.library_version(), n.library()._name)")


def python(args, env, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, env=env,
                          timeout=300, **kwargs)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "STOKER_LIBRARY")}
    env.update(extra)
    return env


def test_from_the_build_tree(scratch):
    run = python([sys.executable, "-c", PROBE],
                 clean_env(PYTHONPATH=os.path.join(BUILD, "python")),
                 cwd=scratch)
    assert run.returncode == 0, run.stderr
    version, path = run.stdout.split()
    assert version == "0.2.0"
    assert path.endswith("stoker/_lib/libstoker.so.1")


def test_stoker_library_names_the_library(scratch):
    library = os.path.join(BUILD, "client", "libstoker.so.1")
    run = python([sys.executable, "-c", PROBE],
                 clean_env(PYTHONPATH=os.path.join(BUILD, "python"),
                           STOKER_LIBRARY=library), cwd=scratch)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[1] == library
    run = python([sys.executable, "-c", PROBE],
                 clean_env(PYTHONPATH=os.path.join(BUILD, "python"),
                           STOKER_LIBRARY=os.path.join(scratch, "none.so")),
                 cwd=scratch)
    assert run.returncode != 0
    assert "STOKER_LIBRARY" in run.stderr and "none.so" in run.stderr


def test_pip_install_of_the_source_directory_offline(scratch):
    venv = os.path.join(scratch, "venv")
    made = python([sys.executable, "-m", "venv", venv], clean_env())
    if made.returncode != 0:
        pytest.skip("python3 -m venv is not available: " + made.stderr[-200:])
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip"]
    # --no-index: nothing may come from the network; the package's build
    # backend lives in the source directory and needs nothing.
    run = python(pip + ["install", "--no-index", os.path.join(SOURCE, "python")],
                 clean_env(STOKER_BUILD_DIR=BUILD), cwd=scratch)
    assert run.returncode == 0, run.stdout + run.stderr
    run = python([os.path.join(venv, "bin", "python"), "-c", PROBE],
                 clean_env(), cwd=scratch)
    assert run.returncode == 0, run.stderr
    version, path = run.stdout.split()
    assert version == "0.2.0"
    assert path.startswith(venv)  # the copy installed with the package
