"""The example training scripts (python/examples/) train a few steps on the
CPU and report images/s and input-bound %: ResNet-18, the classification
recipe, CLIP, DINO's and MoCo v3's self-supervised views, and the
segmentation reference's train preset with masks."""
import os
import re

import pytest

pytest.importorskip("torchvision")
from conftest import photo_folder, photo_paths, run_python  # noqa: E402

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


@pytest.mark.skipif(not SOURCE, reason="run through ctest")
def test_clip_example_trains_on_image_text_shards(daemon, dataset, scratch):
    """img2dataset's layout: <key>.jpg, <key>.txt (every fourth sample
    without one), <key>.json."""
    import io
    import json
    import tarfile
    shard = os.path.join(scratch, "00000.tar")
    images = sorted(os.path.join(d, n) for d, _, names in os.walk(dataset)
                    for n in names)
    with tarfile.open(shard, "w") as tar:
        for i, path in enumerate(images):
            with open(path, "rb") as f:
                members = [(".jpg", f.read())]
            if i % 4:
                members.append((".txt", f"a photo of {i}".encode()))
            members.append((".json", json.dumps({"key": i}).encode()))
            for suffix, data in members:
                info = tarfile.TarInfo(f"{i:09d}{suffix}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    script = os.path.join(SOURCE, "python", "examples", "train_clip.py")
    run = run_python(script, f"--shards={shard}", f"--socket={daemon.socket}",
                     "--steps=3", "--batch_size=4", "--size=64",
                     "--device=cpu")
    assert run.returncode == 0, run.stderr
    assert ("18 image-text pairs (6 without a caption left out), 4 batches "
            "per epoch, on cpu") in run.stdout, run.stdout
    assert re.search(r"step 3: contrastive loss \d+\.\d+", run.stdout)
    assert re.search(r"[\d.]+ images/s over 2 steps; input-bound [\d.]+%",
                     run.stdout), run.stdout


@pytest.mark.skipif(not SOURCE, reason="run through ctest")
@pytest.mark.parametrize("script, views", [("train_dino.py", 10),
                                           ("train_moco.py", 2)])
def test_self_supervised_examples_train(daemon, scratch, script, views):
    """DINO's multi-crop and MoCo v3's two views run a few steps."""
    root = photo_folder(os.path.join(scratch, "photos"))
    sizes = (["--global_size=64", "--local_size=32"] if views == 10 else
             ["--size=64"])
    run = run_python(os.path.join(SOURCE, "python", "examples", script), root,
                     f"--socket={daemon.socket}", "--steps=3",
                     "--batch_size=4", "--device=cpu", *sizes)
    assert run.returncode == 0, run.stderr
    assert (f"43 images, {views} views each, 10 batches per epoch, on cpu"
            in run.stdout), run.stdout
    assert re.search(r"step 3: (dino|contrastive) loss \d+\.\d+", run.stdout)
    assert re.search(r"[\d.]+ images/s over 2 steps; input-bound [\d.]+%",
                     run.stdout), run.stdout


@pytest.mark.skipif(not SOURCE, reason="run through ctest")
def test_segmentation_example_trains(daemon, scratch):
    """The segmentation reference's train preset on a manifest of
    photographs and generated palette masks: a few steps of a model with
    cross-entropy that ignores 255."""
    import numpy as np
    from PIL import Image
    rows = ["path,mask"]
    for i, path in enumerate(photo_paths()):
        with Image.open(path) as im:
            grey = np.asarray(im.convert("L"), dtype=np.uint8)
        mask = Image.fromarray((grey // 13).astype(np.uint8), "P")
        mask.putpalette([v for c in range(256) for v in (c, 255 - c, c // 2)])
        mask_path = os.path.join(scratch, f"mask{i}.png")
        mask.save(mask_path)
        rows.append(f"{path},{mask_path}")
    manifest = os.path.join(scratch, "pairs.csv")
    with open(manifest, "w") as f:
        f.write("\n".join(rows) + "\n")
    script = os.path.join(SOURCE, "python", "examples", "train_segmentation.py")
    run = run_python(script, f"--manifest={manifest}",
                     f"--socket={daemon.socket}", "--steps=3",
                     "--batch_size=4", "--base_size=64", "--crop_size=48",
                     "--device=cpu")
    assert run.returncode == 0, run.stderr
    assert ("43 images with masks, 10 batches per epoch, on cpu"
            in run.stdout), run.stdout
    assert re.search(r"step 3: loss \d+\.\d+", run.stdout), run.stdout
    assert re.search(r"[\d.]+ images/s over 2 steps; input-bound [\d.]+%",
                     run.stdout), run.stdout
