"""Every dataset source against torchvision's ImageFolder on the same real
photographs (tests/fixtures/photos): WebDataset tar shards written by
Python's tarfile, and CSV and JSON-lines manifests. Each must give the
ImageFolder's images and labels in the same order, and the same
shuffles, augmentations, rank shards and resume positions as an
ImageFolder job with the same seed; bad shards and manifests are refused
naming the shard or file and the member or line.
"""
import gzip
import io
import json
import os
import tarfile
import time

import pytest
from conftest import Daemon, photo_folder

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")
datasets = pytest.importorskip("torchvision.datasets")
stoker = pytest.importorskip("stoker")

EVAL = T.Compose([T.Resize(256), T.CenterCrop(224), T.PILToTensor()])
TRAIN = T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                   T.PILToTensor()])


def add_member(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_shards(folder, out_dir, count, fmt=tarfile.PAX_FORMAT, json_label=False):
    """The ImageFolder's samples, in its order, as `count` shards named
    out_dir/train-000000.tar ...; returns the brace pattern."""
    samples = datasets.ImageFolder(folder).samples
    per_shard = -(-len(samples) // count)
    for shard in range(count):
        path = os.path.join(out_dir, f"train-{shard:06d}.tar")
        with tarfile.open(path, "w", format=fmt) as tar:
            for i, (file, label) in enumerate(
                    samples[shard * per_shard:(shard + 1) * per_shard]):
                key = f"sample{shard * per_shard + i:06d}"
                extension = os.path.splitext(file)[1].lower()
                with open(file, "rb") as f:
                    add_member(tar, key + extension, f.read())
                if json_label:
                    meta = {"label": label, "source": os.path.basename(file)}
                    add_member(tar, key + ".json", json.dumps(meta).encode())
                else:
                    add_member(tar, key + ".cls", str(label).encode())
    return os.path.join(out_dir, f"train-{{000000..{count - 1:06d}}}.tar")


def write_manifests(folder, out_dir):
    """A CSV with paths relative to it and a JSONL with absolute paths."""
    reference = datasets.ImageFolder(folder)
    csv_path = os.path.join(out_dir, "train.csv")
    with open(csv_path, "w") as f:
        f.write("label,path,class\n")
        for file, label in reference.samples:
            relative = os.path.relpath(file, out_dir)
            f.write(f'{label},"{relative}",{reference.classes[label]}\n')
    jsonl_path = os.path.join(out_dir, "train.jsonl")
    with open(jsonl_path, "w") as f:
        for file, label in reference.samples:
            f.write(json.dumps({"path": file, "label": label}) + "\n")
    return csv_path, jsonl_path


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("sources"))
    folder = photo_folder(os.path.join(base, "photos"))
    shards_dir = os.path.join(base, "shards")
    os.mkdir(shards_dir)
    pattern = write_shards(folder, shards_dir, 4)
    json_dir = os.path.join(base, "json_shards")
    os.mkdir(json_dir)
    json_pattern = write_shards(folder, json_dir, 3, fmt=tarfile.GNU_FORMAT,
                                json_label=True)
    csv_path, jsonl_path = write_manifests(folder, base)
    return {"folder": folder, "base": base,
            "kinds": {"folder": {"root": folder},
                      "shards": {"shards": pattern},
                      "json_shards": {"shards": json_pattern,
                                      "label_field": "label"},
                      "csv": {"manifest": csv_path},
                      "jsonl": {"manifest": jsonl_path}}}


def run(daemon, source, transform, epochs=1, **kw):
    loader = stoker.DataLoader(transform=transform, socket=daemon.socket,
                               **source, **kw)
    try:
        return [[(images.clone(), labels.clone()) for images, labels in loader]
                for _ in range(epochs)], loader
    finally:
        loader.close()


def stacked(epoch):
    return (torch.cat([images for images, _ in epoch]),
            torch.cat([labels for _, labels in epoch]))


KINDS = ["shards", "json_shards", "csv", "jsonl"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_source_gives_torchvisions_images_and_labels(daemon, sources,
                                                          kind):
    reference = datasets.ImageFolder(sources["folder"], EVAL)
    (epoch,), loader = run(daemon, sources["kinds"][kind], EVAL, batch_size=8)
    images, labels = stacked(epoch)
    assert labels.tolist() == reference.targets
    want = torch.stack([reference[i][0] for i in range(len(reference))])
    assert torch.equal(images, want)
    if kind == "csv":
        assert loader.classes == reference.classes


@pytest.mark.parametrize("kind", KINDS)
def test_shuffles_augmentations_and_ranks_match_the_image_folder(
        daemon, sources, kind):
    folder = sources["kinds"]["folder"]
    source = sources["kinds"][kind]
    for rank in (0, 1):
        flags = dict(batch_size=5, shuffle=True, seed=7, rank=rank,
                     world_size=2)
        want, _ = run(daemon, folder, TRAIN, epochs=2, **flags)
        got, _ = run(daemon, source, TRAIN, epochs=2, **flags)
        for w, g in zip(want, got):
            assert torch.equal(stacked(w)[0], stacked(g)[0])
            assert torch.equal(stacked(w)[1], stacked(g)[1])
    # Unsharded, every sample once per epoch.
    (epoch,), _ = run(daemon, source, TRAIN, batch_size=6, shuffle=True)
    counts = torch.bincount(stacked(epoch)[1]).tolist()
    reference = datasets.ImageFolder(sources["folder"])
    assert counts == torch.bincount(torch.tensor(reference.targets)).tolist()


def test_a_shard_job_resumes_exactly(daemon, sources):
    source = sources["kinds"]["shards"]
    flags = dict(batch_size=4, shuffle=True, seed=3)
    whole, _ = run(daemon, source, TRAIN, **flags)
    loader = stoker.DataLoader(transform=TRAIN, socket=daemon.socket,
                               **source, **flags)
    iterator = iter(loader)
    for _ in range(3):
        next(iterator)
    state = loader.state_dict()
    loader.close()
    resumed = stoker.DataLoader(transform=TRAIN, socket=daemon.socket,
                                **source, **flags)
    resumed.load_state_dict(state)
    rest = [(i.clone(), l.clone()) for i, l in resumed]
    resumed.close()
    assert len(rest) == len(whole[0]) - 3
    for (a, la), (b, lb) in zip(whole[0][3:], rest):
        assert torch.equal(a, b) and torch.equal(la, lb)


def test_jobs_over_the_same_data_share_one_index(daemon, sources):
    client = stoker.Client(daemon.socket)
    loaders = [stoker.DataLoader(transform=EVAL, socket=daemon.socket,
                                 batch_size=4, **sources["kinds"]["shards"])
               for _ in range(3)]
    for loader in loaders:
        next(iter(loader))
    job = client.get_job(loaders[0].job_id)
    assert job["dataset_kind"] == "DATASET_KIND_TAR_SHARDS"
    assert job["num_shards"] == 4 and job["num_samples"] == 43
    stats = client.stats()["daemon"]
    assert stats["dataset_indexes"] == 1
    assert stats["dataset_index_bytes"] == job["index_bytes"]
    assert job["index_bytes"] <= 43 * 24 + 4096  # shard table and paths
    for loader in loaders:
        loader.close()
    for entry in client.list_jobs():
        client.delete_job(entry["id"])
    # Freed once the samples the workers were decoding are done.
    deadline = time.monotonic() + 10
    while (client.stats()["daemon"].get("dataset_indexes", 0) != 0 and
           time.monotonic() < deadline):
        time.sleep(0.05)
    assert client.stats()["daemon"].get("dataset_indexes", 0) == 0
    client.close()


def test_a_rewritten_shard_is_indexed_again(daemon, scratch, sources):
    folder = sources["folder"]
    pattern = write_shards(folder, scratch, 2)
    first = stoker.DataLoader(transform=EVAL, socket=daemon.socket,
                              batch_size=4, shards=pattern, slots=2,
                              on_error="fail")
    running = iter(first)
    next(running)
    write_shards(folder, scratch, 2, json_label=False)  # same names, new files
    with tarfile.open(os.path.join(scratch, "train-000001.tar"), "a") as tar:
        add_member(tar, "extra.jpg", open(
            datasets.ImageFolder(folder).samples[0][0], "rb").read())
        add_member(tar, "extra.cls", b"0")
    second = stoker.DataLoader(transform=EVAL, socket=daemon.socket,
                               batch_size=4, shards=pattern)
    next(iter(second))
    assert second.num_samples == first.num_samples + 1
    # The job indexed before the rewrite fails saying so, rather than read
    # the new files at the old offsets.
    with pytest.raises(stoker.StokerError, match="shard changed after"):
        for _ in range(2 * len(first)):
            next(running)
    first.close()
    second.close()


def one_shard(path, members, compress=False):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in members:
            add_member(t, name, data)
    data = buffer.getvalue()
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if compress else data)
    return data


def refused(daemon, match, **source):
    with pytest.raises(stoker.StokerError, match=match):
        loader = stoker.DataLoader(transform=EVAL, socket=daemon.socket,
                                   batch_size=2, **source)
        try:
            next(iter(loader))
        finally:
            loader.close()


def test_bad_shards_are_refused_naming_shard_and_member(daemon, scratch,
                                                        sources):
    jpeg = open(datasets.ImageFolder(sources["folder"]).samples[0][0],
                "rb").read()
    good = [("a.jpg", jpeg), ("a.cls", b"1")]
    path = os.path.join(scratch, "bad.tar")
    one_shard(path, good, compress=True)
    refused(daemon, r"bad\.tar.*gzip.*decompress", shards=path)
    data = one_shard(path, good)
    with open(path, "wb") as f:
        f.write(data[:700])  # the image member cut short
    refused(daemon, r"bad\.tar.*truncated", shards=path)
    for members, why in (([("a.jpg", jpeg)], r"'a'.*no cls member"),
                         ([("a.cls", b"1")], r"'a'.*no image"),
                         ([("a.jpg", jpeg), ("a.cls", b"one")],
                          r"'a'.*not an integer")):
        one_shard(path, members)
        refused(daemon, r"bad\.tar.*" + why, shards=path)
    refused(daemon, r"does not exist",
            shards=os.path.join(scratch, "absent-{0..3}.tar"))


def test_a_bad_checksum_names_the_header(daemon, scratch, sources):
    path = os.path.join(scratch, "sum.tar")
    data = bytearray(one_shard(path, [("a.jpg", b"x" * 100),
                                      ("a.cls", b"1")]))
    header = data.index(b"a.cls") // 512 * 512
    data[header] ^= 0x01  # the name's first byte: the sum no longer matches
    with open(path, "wb") as f:
        f.write(bytes(data))
    refused(daemon, rf"sum\.tar.*checksum.*header at byte {header}\)",
            shards=path)


def test_an_undecodable_member_goes_through_on_error(daemon, scratch):
    path = os.path.join(scratch, "junk.tar")
    one_shard(path, [("a.jpg", b"not a jpeg at all"), ("a.cls", b"0")])
    with pytest.raises(stoker.StokerError, match=r"junk\.tar member at byte"):
        loader = stoker.DataLoader(transform=EVAL, socket=daemon.socket,
                                   batch_size=1, shards=path, on_error="fail")
        try:
            next(iter(loader))
        finally:
            loader.close()


def test_bad_manifests_are_refused_naming_file_and_line(daemon, scratch,
                                                        sources):
    image = datasets.ImageFolder(sources["folder"]).samples[0][0]
    cases = [
        ("a.csv", f"path,label\n{image},0\n{image},zero\n",
         r"a\.csv' line 3.*not an integer"),
        ("b.csv", f"file,label\n{image},0\n", r"b\.csv' line 1.*header"),
        ("c.csv", f'path,label\n"{image},0\n', r"c\.csv' line 2.*not closed"),
        ("d.csv", f"path,label\n{image},0\nmissing.jpg,1\n",
         r"d\.csv' line 3.*missing\.jpg.*No such file"),
        ("e.jsonl", json.dumps({"path": image, "label": 0}) + "\n{oops\n",
         r"e\.jsonl' line 2.*JSON"),
        ("f.jsonl", json.dumps({"path": image, "label": 1.5}) + "\n",
         r"f\.jsonl' line 1.*not an integer"),
        ("g.txt", "", r"\.csv or a \.jsonl"),
    ]
    for name, text, match in cases:
        path = os.path.join(scratch, name)
        with open(path, "w") as f:
            f.write(text)
        refused(daemon, match, manifest=path)


def test_twenty_thousand_long_class_names_reach_the_loader_whole(
        daemon, scratch, sources):
    """A job's class list past what one response holds is paged in: the
    loader gets every name, and its job is created and deleted as usual."""
    image = datasets.ImageFolder(sources["folder"]).samples[0][0]
    names = [f"{'n' * 240}_{i:06d}" for i in range(20000)]
    path = os.path.join(scratch, "many.csv")
    with open(path, "w") as f:
        f.write("path,label,class\n")
        f.writelines(f"{image},{i},{name}\n" for i, name in enumerate(names))
    loader = stoker.DataLoader(manifest=path, transform=EVAL, batch_size=4,
                               socket=daemon.socket)
    try:
        assert loader.classes == names
        job = loader.job_id
        with stoker.Client(daemon.socket) as client:
            listed = {j["id"]: j for j in client.list_jobs()}
        assert int(listed[job]["num_classes"]) == len(names)
    finally:
        loader.close()
    with stoker.Client(daemon.socket) as client:
        assert job not in [j["id"] for j in client.list_jobs()]


def test_paths_outside_the_roots_are_refused(scratch, sources):
    inside = os.path.join(scratch, "inside")
    os.mkdir(inside)
    daemon = Daemon(scratch, extra=[f"--dataset_roots={inside}"])
    try:
        image = datasets.ImageFolder(sources["folder"]).samples[0][0]
        manifest = os.path.join(inside, "m.csv")
        with open(manifest, "w") as f:
            f.write(f"path,label\n../outside.jpg,0\n{image},0\n")
        refused(daemon, r"m\.csv' line 2.*outside the dataset roots",
                manifest=manifest)
        refused(daemon, r"dataset\.shards.*outside the dataset roots",
                shards=sources["kinds"]["shards"]["shards"])
    finally:
        daemon.stop()
    assert daemon.segments() == []


def test_long_names_are_refused_with_a_message_that_arrives(daemon, scratch,
                                                            sources):
    """A 1 MiB path and a 5,000-byte path in a manifest, a 9,000-byte pax
    path in a shard: each is refused with INVALID_ARGUMENT naming the file
    and the line or the member's header, in a message that reaches the
    client (not gRPC's "metadata size exceeds limit")."""
    image = datasets.ImageFolder(sources["folder"]).samples[0][0]
    for rows, why in ((f"{'d/' * (1 << 19)}x.jpg,1", "longer than 65536"),
                      (f"{'d/' * 2500}x.jpg,1", "is 5005 bytes, longer than")):
        path = os.path.join(scratch, "long.csv")
        with open(path, "w") as f:
            f.write(f"path,label\n{image},0\n{rows}\n")
        with pytest.raises(stoker.InvalidArgument) as refusal:
            stoker.DataLoader(transform=EVAL, socket=daemon.socket,
                              batch_size=2, manifest=path).close()
        message = str(refusal.value)
        assert "long.csv' line 3" in message and why in message, message
        assert len(message) < 4096
    jpeg = open(image, "rb").read()
    shard = os.path.join(scratch, "long.tar")
    one_shard(shard, [("b.jpg", jpeg), ("b.cls", b"1"),
                      ("a" * 9000 + ".jpg", jpeg), ("a" * 9000 + ".cls", b"0")])
    with pytest.raises(stoker.InvalidArgument) as refusal:
        stoker.DataLoader(transform=EVAL, socket=daemon.socket, batch_size=2,
                          shards=shard).close()
    message = str(refusal.value)
    assert "long.tar" in message and "header at byte" in message, message
    assert "a member name of 9004 bytes, longer than 4095" in message
    assert len(message) < 4096
