"""The example training script (python/examples/train_resnet18.py) trains a
few steps of ResNet-18 on the CPU and reports images/s and input-bound %."""
import os
import re

import pytest

pytest.importorskip("torchvision")
from conftest import run_python  # noqa: E402

SOURCE = os.environ.get("STOKER_SOURCE_DIR", "")


@pytest.mark.skipif(not SOURCE, reason="run through ctest")
def test_example_trains_and_reports(daemon, dataset):
    script = os.path.join(SOURCE, "python", "examples", "train_resnet18.py")
    run = run_python(script, f"--data={dataset}", f"--socket={daemon.socket}",
                     "--steps=4", "--batch_size=8", "--size=64",
                     "--device=cpu")
    assert run.returncode == 0, run.stderr
    assert "3 classes, 24 images, 3 batches per epoch, on cpu" in run.stdout
    assert re.search(r"step 4: loss \d+\.\d+", run.stdout)
    assert re.search(r"[\d.]+ images/s over 3 steps; input-bound [\d.]+%",
                     run.stdout), run.stdout


@pytest.mark.skipif(not SOURCE, reason="run through ctest")
def test_recipe_example_trains_with_mixup_and_evaluates(daemon, dataset):
    script = os.path.join(SOURCE, "python", "examples",
                          "train_resnet50_recipe.py")
    run = run_python(script, f"--data={dataset}", f"--socket={daemon.socket}",
                     "--steps=3", "--batch_size=8", "--model=resnet18",
                     "--train_crop=64", "--val_resize=72", "--val_crop=64",
                     "--device=cpu")
    assert run.returncode == 0, run.stderr
    assert "3 classes, 24 images, 3 batches per epoch, on cpu" in run.stdout
    assert re.search(r"step 3: loss \d+\.\d+", run.stdout)
    assert re.search(r"[\d.]+ train images/s; eval accuracy \d+/24",
                     run.stdout), run.stdout
