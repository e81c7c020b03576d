"""Samples of named fields (fields=) against the reference: shards laid out
as img2dataset writes them (9-digit keys; .jpg or .png photographs, .txt
captions that some samples lack, .json metadata, .cls, .npy), built from
the photographs of tests/fixtures/photos, and CSV and JSON-lines manifests.
Every caption, JSON object, class and array must be what Python's tarfile,
json and numpy give for that sample, grouped by webdataset's own rule (its
base_plus_ext expression), and every image torchvision's transform of that
member, for the crop stoker drew. missing="skip" keeps counts exact over
ranks, epochs and resume; bounds, refusals and errors are each named.
"""
import io
import json
import os
import re
import subprocess
import tarfile

import pytest
from conftest import Daemon, _tool, photo_paths

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
stoker = pytest.importorskip("stoker")
from PIL import Image  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

# webdataset's tariterators.base_plus_ext.
BASE_PLUS_EXT = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
IMAGE = "jpg;png;jpeg;webp"
FIELDS = (IMAGE, "txt", "json", "cls", "npy")
EVAL = T.Compose([T.Resize(72), T.CenterCrop(64), T.PILToTensor()])
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
# open_clip's training transform (image_transform(is_train=True)).
CLIP_TRAIN = T.Compose([
    T.RandomResizedCrop(96, scale=(0.9, 1.0),
                        interpolation=T.InterpolationMode.BICUBIC),
    T.ToTensor(), T.Normalize(OPENAI_MEAN, OPENAI_STD)])


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def npy_bytes(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def write_pairs(directory, shards=3):
    """The photographs as img2dataset-style shards: key = 5-digit shard and
    4-digit index. Every fifth sample has no caption; one holds only a
    "seg.png" (not a "png"); one's image is ".JPG"; a member without a dot
    stands between two members of one sample (webdataset skips it)."""
    photos = photo_paths()
    per_shard = -(-len(photos) // shards)
    captions = ["a photo of {}", "an image of {}, café au lait", "{} ☕ 🚀",
                "\"quoted\", {}, with commas"]
    for shard in range(shards):
        with tarfile.open(os.path.join(directory, f"{shard:05d}.tar"),
                          "w") as tar:
            for i, path in enumerate(photos[shard * per_shard:
                                            (shard + 1) * per_shard]):
                n = shard * per_shard + i
                key = f"{shard:05d}{i:04d}"
                stem = os.path.basename(path).split(".")[0]
                suffix = os.path.splitext(path)[1][1:]
                with open(path, "rb") as f:
                    image = f.read()
                if n == 7:
                    suffix = "seg.png"
                elif n == 11:
                    suffix = "JPG"
                add(tar, f"{key}.{suffix}", image)
                if n == 3:
                    add(tar, "README", b"not a sample's member")
                if n % 5 != 4:
                    add(tar, f"{key}.txt",
                        captions[n % 4].format(stem).encode())
                meta = {"key": key, "url": f"https://example.com/{stem}",
                        "caption": captions[n % 4].format(stem),
                        "status": "success", "n": n,
                        "exif": {"tags": list(range(n % 5))}}
                add(tar, f"{key}.json", json.dumps(meta).encode())
                add(tar, f"{key}.cls", str(n % 3).encode())
                add(tar, f"{key}.npy",
                    npy_bytes(np.arange(n, n + 4, dtype=np.float32) / 7))
    return os.path.join(directory, f"{{00000..{shards - 1:05d}}}.tar")


def reference_samples(directory):
    """Every sample of the shards as webdataset groups them: {suffix:
    bytes} with __key__, read with tarfile."""
    samples = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".tar"):
            continue
        with tarfile.open(os.path.join(directory, name)) as tar:
            current = None
            for member in tar.getmembers():
                match = BASE_PLUS_EXT.match(member.name)
                if not match:
                    continue
                key, suffix = match.group(1), match.group(2).lower()
                if current is None or current["__key__"] != key:
                    current = {"__key__": key}
                    samples.append(current)
                current[suffix] = tar.extractfile(member).read()
    return samples


def getfirst(sample, field):
    return next((sample[s] for s in field.split(";") if s in sample), None)


def kept(samples, fields):
    return [s for s in samples
            if all(getfirst(s, f) is not None for f in fields)]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("pairs"))
    pattern = write_pairs(directory)
    return {"pattern": pattern, "dir": directory,
            "samples": reference_samples(directory)}


def load(daemon, pairs, **kw):
    kw.setdefault("fields", FIELDS)
    kw.setdefault("transform", EVAL)
    kw.setdefault("batch_size", 4)
    return stoker.DataLoader(shards=pairs["pattern"], socket=daemon.socket,
                             **kw)


def epoch(loader):
    """One epoch's samples, each a tuple of its fields' values (images
    cloned out of the ring)."""
    out = []
    for batch in loader:
        columns = [b.clone() if isinstance(b, torch.Tensor) else b
                   for b in batch]
        out += list(zip(*columns))
    return out


def pil_of(data):
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


def test_every_field_is_what_tarfile_json_and_numpy_give(daemon, pairs):
    want = kept(pairs["samples"], FIELDS)
    assert 25 < len(want) < len(pairs["samples"])  # some left out
    loader = load(daemon, pairs, missing="skip")
    try:
        assert loader.num_samples == len(want)
        assert loader.samples_skipped == len(pairs["samples"]) - len(want)
        assert len(loader) == -(-len(want) // 4)
        first = next(iter(loader))
        assert [type(v) for v in first] == [torch.Tensor, list, list,
                                            torch.Tensor, torch.Tensor]
        assert first[3].dtype == torch.int64 and first[4].shape == (4, 4)
        got = epoch(loader)
    finally:
        loader.close()
    assert len(got) == len(want)
    for (image, caption, meta, cls, array), sample in zip(got, want):
        assert caption == sample["txt"].decode("utf-8")
        assert meta == json.loads(sample["json"])
        assert int(cls) == int(sample["cls"])
        reference = np.load(io.BytesIO(sample["npy"]))
        assert torch.equal(array, torch.from_numpy(reference))
        assert torch.equal(image, EVAL(pil_of(getfirst(sample, IMAGE))))


def draws(transform, seed, epoch, index, size):
    """The crop box and flip stoker drew for dataset sample `index`."""
    pipeline, output = stoker.translate_transform(transform)
    line = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws",
         json.dumps({"pipeline": pipeline, "output": output}), str(size[0]),
         str(size[1]), str(seed), str(epoch), str(index), "1"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(line)


def test_train_images_are_torchvisions_for_the_drawn_crops(daemon, pairs):
    """open_clip's training transform (bicubic RandomResizedCrop, ToTensor,
    Normalize with OpenAI's statistics), shuffled: each image is
    torchvision's for the box stoker drew for that sample."""
    want = kept(pairs["samples"], (IMAGE, "json"))
    index = {s["__key__"]: i for i, s in enumerate(want)}
    loader = load(daemon, pairs, fields=(IMAGE, "json"), transform=CLIP_TRAIN,
                  shuffle=True, seed=5, missing="skip")
    try:
        loader.set_epoch(1)
        got = epoch(loader)
    finally:
        loader.close()
    assert sorted(meta["key"] for _, meta in got) == sorted(index)
    for image, meta in got[:12]:
        i = index[meta["key"]]
        pil = pil_of(getfirst(want[i], IMAGE))
        drawn = draws(CLIP_TRAIN, 5, 1, i, pil.size)
        x, y, w, h = drawn["box"]
        crop = F.resized_crop(pil, y, x, h, w, [96, 96],
                              T.InterpolationMode.BICUBIC)
        reference = F.normalize(F.to_tensor(crop), OPENAI_MEAN, OPENAI_STD)
        assert torch.equal(image, reference), meta["key"]


def read_fails(daemon, pairs, error, match, **kw):
    """Reading an epoch of a loader of `kw` raises `error` (the job may
    fail before or after the loader attached)."""
    with pytest.raises(error, match=match):
        loader = load(daemon, pairs, **kw)
        try:
            epoch(loader)
        finally:
            loader.close()


def test_missing_error_goes_through_on_error(daemon, pairs):
    samples = pairs["samples"]
    loader = load(daemon, pairs, fields=(IMAGE, "txt"), on_error="replace")
    try:
        assert loader.num_samples == len(samples)
        got = epoch(loader)
    finally:
        loader.close()
    # A sample without a field is replaced by the next one that has both.
    for i, (_, caption) in enumerate(got):
        j = i
        while getfirst(samples[j], IMAGE) is None or "txt" not in samples[j]:
            j = (j + 1) % len(samples)
        assert caption == samples[j]["txt"].decode(), i
    read_fails(daemon, pairs, stoker.DataLoss,
               r"has no member for field 'txt' \(missing=error\)",
               fields=(IMAGE, "txt"), on_error="fail")


def keys_of(loader, epoch_number):
    loader.set_epoch(epoch_number)
    return [meta["key"] for batch in loader for meta in batch[1]]


def test_ranks_epochs_and_resume_stay_exact_when_skipping(daemon, pairs):
    want = [s["__key__"] for s in kept(pairs["samples"], (IMAGE, "json",
                                                          "txt"))]
    flags = dict(fields=(IMAGE, "json", "txt"), missing="skip", shuffle=True,
                 seed=9, batch_size=3, transform=EVAL)
    whole = load(daemon, pairs, **flags)
    orders = [keys_of(whole, e) for e in range(2)]
    whole.close()
    for order in orders:
        assert sorted(order) == sorted(want)
    ranks = [load(daemon, pairs, rank=r, world_size=3, **flags)
             for r in range(3)]
    assert len({len(r) for r in ranks}) == 1  # equal batches per rank
    for e, order in enumerate(orders):
        for r, loader in enumerate(ranks):
            sampler = DistributedSampler(order, num_replicas=3, rank=r,
                                         shuffle=False)
            assert keys_of(loader, e) == [order[i] for i in sampler], (e, r)
    for loader in ranks:
        loader.close()
    # Three batches in, saved, resumed by a new loader: the rest of epoch 1.
    first = load(daemon, pairs, **flags)
    first.set_epoch(1)
    iterator = iter(first)
    seen = [m["key"] for _ in range(3) for m in next(iterator)[1]]
    state = first.state_dict()
    first.close()
    resumed = load(daemon, pairs, **flags)
    resumed.load_state_dict(state)
    rest = [m["key"] for batch in resumed for m in batch[1]]
    resumed.close()
    assert seen + rest == orders[1]


def test_a_value_past_max_field_bytes_fails_naming_the_field(daemon, pairs):
    read_fails(daemon, pairs, stoker.DataLoss,
               r"field 'json' holds \d+ bytes, more than max_field_bytes "
               r"\(64\)", fields=(IMAGE, "json"), max_field_bytes=64,
               on_error="fail")


def test_the_ring_reserves_the_largest_value_within_the_bound(daemon, pairs):
    largest = max(len(s["json"]) for s in pairs["samples"])
    client = stoker.Client(daemon.socket)
    try:
        slot_bytes = {}
        for bound in (0, 100):
            loader = load(daemon, pairs, fields=(IMAGE, "json"),
                          max_field_bytes=bound, batch_size=64)
            job = client.get_job(loader.job_id)
            assert job["spec"]["max_field_bytes"] == (bound or 65536)
            slot_bytes[bound] = int(job["segment"]["slot_bytes"])
            loader.close()
        # 64 images, indices and lengths, and 64 rows of the largest json
        # (not of 64 KiB), or of the bound; a page at most besides.
        image_only = 64 * 3 * 64 * 64 + 2 * 64 * 8
        for bound, row in ((0, largest), (100, 100)):
            assert image_only + 64 * row <= slot_bytes[bound] < \
                image_only + 64 * row + 4096 + 3 * 64, bound
    finally:
        client.close()


def test_the_daemons_bound_caps_a_jobs(scratch, pairs):
    capped = Daemon(scratch, extra=["--max_field_bytes=1K"])
    try:
        with pytest.raises(stoker.InvalidArgument,
                           match="max_field_bytes 4096 is more than stokerd "
                                 "takes"):
            load(capped, pairs, max_field_bytes=4096)
        loader = load(capped, pairs, fields=(IMAGE, "txt"), missing="skip")
        assert len(epoch(loader)) == loader.num_samples
        loader.close()
    finally:
        capped.stop()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(fields=("pkl", IMAGE)), stoker.UnsupportedTransform,
     "never unpickles"),
    (dict(fields=(IMAGE, "txt;json")), stoker.InvalidArgument,
     "decode differently"),
    (dict(fields=("jpg;txt",)), stoker.InvalidArgument,
     "mixes image suffixes"),
    (dict(fields=("jpg", "png")), stoker.InvalidArgument,
     "a second image per sample is not supported (a label mask is "
     "masks=(name,)"),
    (dict(fields=("txt", "json")), stoker.InvalidArgument, "0 image fields"),
    (dict(fields=(IMAGE, "txt", "txt")), stoker.InvalidArgument, "twice"),
    (dict(fields=(IMAGE, "TXT")), stoker.InvalidArgument, "lower-case"),
    (dict(fields=(IMAGE, "txt"), label_field="label"), stoker.InvalidArgument,
     "label_field applies to a classic job"),
    (dict(fields=(IMAGE, "txt"), missing="maybe"), stoker.InvalidArgument,
     "missing='maybe'"),
    (dict(missing="skip"), stoker.InvalidArgument, "with fields= only"),
    (dict(fields=(IMAGE, "txt"), field_transforms={"caption": str}),
     stoker.InvalidArgument, "no such field"),
    (dict(fields=(IMAGE, "txt"), field_transforms={IMAGE: str}),
     stoker.InvalidArgument, "an image or mask field goes through transform"),
    (dict(fields=(IMAGE, "txt"), batch_transform=lambda x, y: (x, y)),
     stoker.InvalidArgument, "batch_transform takes"),
    (dict(field_transforms={"txt": str}), stoker.InvalidArgument,
     "applies with fields="),
])
def test_what_the_contract_cannot_carry_is_refused_by_name(
        daemon, pairs, kwargs, error, message):
    kwargs = dict(kwargs)
    with pytest.raises(error, match=re.escape(message)):
        load(daemon, pairs, **kwargs) if "fields" in kwargs else \
            stoker.DataLoader(shards=pairs["pattern"], transform=EVAL,
                              socket=daemon.socket, **kwargs)


def test_refusals_that_need_no_shard(daemon, scratch):
    with pytest.raises(stoker.InvalidArgument, match="ImageFolder"):
        stoker.DataLoader(scratch, fields=("jpg", "txt"), transform=EVAL,
                          socket=daemon.socket)
    v2 = pytest.importorskip("torchvision.transforms.v2")
    if hasattr(v2, "SanitizeBoundingBoxes"):
        with pytest.raises(stoker.UnsupportedTransform,
                           match="detection targets"):
            stoker.translate_transform(v2.Compose([
                v2.RandomResizedCrop(64), v2.SanitizeBoundingBoxes()]))
    with pytest.raises(stoker.UnsupportedTransform, match="varying size"):
        stoker.translate_transform(None)


def test_a_sample_with_two_members_of_one_suffix_is_refused(daemon, scratch):
    path = os.path.join(scratch, "twice.tar")
    photo = photo_paths()[0]
    with tarfile.open(path, "w") as tar:
        with open(photo, "rb") as f:
            add(tar, "000000000.jpg", f.read())
        add(tar, "000000000.txt", b"one")
        add(tar, "000000000.txt", b"two")
    with pytest.raises(stoker.InvalidArgument,
                       match="sample '000000000' has two members with the "
                             "suffix 'txt'"):
        stoker.DataLoader(shards=path, fields=("jpg", "txt"), transform=EVAL,
                          socket=daemon.socket)


def test_a_value_that_does_not_decode_names_its_field(daemon, scratch):
    path = os.path.join(scratch, "bad.tar")
    with open(photo_paths()[0], "rb") as f:
        image = f.read()
    with tarfile.open(path, "w") as tar:
        for i, (caption, cls) in enumerate(((b"fine", b"1"), (b"\xff\xfe", b"2"),
                                            (b"fine", b"two"))):
            add(tar, f"{i:09d}.jpg", image)
            add(tar, f"{i:09d}.txt", caption)
            add(tar, f"{i:09d}.cls", cls)
    for fields, message in (((IMAGE, "txt"), "field 'txt' of sample 1 does "
                             "not decode as 'txt': UnicodeDecodeError"),
                            ((IMAGE, "cls"), "field 'cls' of sample 2 does "
                             "not decode as 'cls': ValueError")):
        loader = stoker.DataLoader(shards=path, fields=fields, transform=EVAL,
                                   batch_size=3, socket=daemon.socket)
        with pytest.raises(stoker.DataLoss, match=re.escape(message)):
            next(iter(loader))
        loader.close()


def write_manifests(directory):
    """A CC3M-like CSV (path,caption: quotes, commas, a line break, text
    beyond ASCII) and a JSON-lines file with a caption, an object and a
    number, one row without the caption."""
    photos = [p for p in photo_paths() if p.endswith(".jpg")][:9]
    captions = ["plain", "with, a comma", "\"quoted\" ☕", "two\nlines",
                "", "naïve", "x" * 300, "🚀", "last"]
    csv_path = os.path.join(directory, "pairs.csv")
    with open(csv_path, "w", encoding="utf-8") as f:
        f.write("path,caption\n")
        for photo, caption in zip(photos, captions):
            quoted = '"' + caption.replace('"', '""') + '"'
            f.write(f"{photo},{quoted}\n")
    rows = []
    for i, (photo, caption) in enumerate(zip(photos, captions)):
        row = {"path": photo, "meta": {"i": i, "tags": ["a"] * i},
               "score": i / 4}
        if i != 4:
            row["caption"] = caption
        rows.append(row)
    jsonl_path = os.path.join(directory, "pairs.jsonl")
    with open(jsonl_path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return csv_path, jsonl_path, photos, captions, rows


def test_manifest_columns_are_fields(daemon, scratch):
    csv_path, jsonl_path, photos, captions, rows = write_manifests(scratch)
    loader = stoker.DataLoader(manifest=csv_path, fields=("path", "caption"),
                               transform=EVAL, batch_size=4,
                               socket=daemon.socket)
    got = epoch(loader)
    loader.close()
    assert [c for _, c in got] == captions
    for (image, _), photo in zip(got, photos):
        with open(photo, "rb") as f:
            assert torch.equal(image, EVAL(pil_of(f.read())))
    loader = stoker.DataLoader(manifest=jsonl_path, missing="skip",
                               fields=("path", "caption", "meta", "score"),
                               transform=EVAL, batch_size=4,
                               socket=daemon.socket)
    got = epoch(loader)
    assert loader.samples_skipped == 1
    loader.close()
    want = [r for r in rows if "caption" in r]
    assert [(c, m, float(s)) for _, c, m, s in got] == \
        [(r["caption"], r["meta"], r["score"]) for r in want]
    with pytest.raises(stoker.InvalidArgument, match="no column 'text'"):
        stoker.DataLoader(manifest=csv_path, fields=("path", "text"),
                          transform=EVAL, socket=daemon.socket)


def tokenize(text, length=77):
    """A small stand-in for open_clip's tokenizer: bytes as tokens."""
    tokens = [49406] + list(text.encode("utf-8"))[:length - 2] + [49407]
    return torch.tensor(tokens + [0] * (length - len(tokens)),
                        dtype=torch.long)


def test_field_transforms_make_open_clips_batch(daemon, pairs):
    want = kept(pairs["samples"], (IMAGE, "txt"))
    results = []
    for workers in (0, 3):
        loader = load(daemon, pairs, fields=(IMAGE, "txt"),
                      transform=CLIP_TRAIN, missing="skip", seed=2,
                      field_transforms={"txt": tokenize},
                      field_workers=workers)
        batches = [(i.clone(), t) for i, t in loader]
        loader.close()
        images, tokens = batches[0]
        assert images.dtype == torch.float32 and images.shape == (4, 3, 96, 96)
        assert tokens.dtype == torch.long and tokens.shape == (4, 77)
        results.append(torch.cat([t for _, t in batches]))
    assert torch.equal(results[0], results[1])
    assert torch.equal(results[0], torch.stack(
        [tokenize(s["txt"].decode()) for s in want]))


def test_collation_follows_default_collate():
    from stoker.fields import collate
    assert torch.equal(collate([1, 2, 3]), torch.tensor([1, 2, 3]))
    assert collate([0.5, 1.0]).dtype == torch.float64
    assert collate([True, False]).dtype == torch.bool
    assert collate(["a", "b"]) == ["a", "b"]
    assert collate([b"a", b"b"]) == [b"a", b"b"]
    assert collate([{"a": 1}, {"a": 2}]) == [{"a": 1}, {"a": 2}]
    assert collate([[1, 2], [3]]) == [[1, 2], [3]]  # not transposed
    assert collate([1, "a"]) == [1, "a"]
    stacked = collate([np.zeros((2, 3), np.float32), np.ones((2, 3),
                                                             np.float32)])
    assert stacked.shape == (2, 2, 3) and stacked.dtype == torch.float32
    ragged = collate([np.zeros(2), np.zeros(3)])
    assert isinstance(ragged, list) and len(ragged) == 2
    assert collate([np.str_("a"), np.str_("b")]) == ["a", "b"]
    tensors = collate([torch.ones(2), torch.zeros(2)])
    assert tensors.shape == (2, 2)
    # What torch has no tensor for stays a list, not an error.
    assert collate([2 ** 70, 1]) == [2 ** 70, 1]
    swapped = collate([np.zeros(2, ">f4"), np.ones(2, ">f4")])
    assert isinstance(swapped, torch.Tensor) or len(swapped) == 2


def test_broadcast_consumers_and_a_restarted_daemon_carry_the_fields(
        daemon, pairs):
    flags = dict(fields=(IMAGE, "txt", "json"), missing="skip", seed=4,
                 shuffle=True)
    whole = load(daemon, pairs, **flags)
    want = [m["key"] for _, _, m in epoch(whole)]
    whole.close()
    leader = load(daemon, pairs, sharing="broadcast", min_consumers=2,
                  **flags)
    follower = stoker.DataLoader(job_id=leader.job_id, shards=pairs["pattern"],
                                 transform=EVAL, socket=daemon.socket)
    a, b = iter(leader), iter(follower)
    for _ in range(3):
        x, y = next(a), next(b)
        assert torch.equal(x[0], y[0]) and x[1:] == y[1:]
    follower.close()
    leader.close()
    # The daemon killed mid-epoch: the loader re-creates its job, fields
    # and all, at the batch after the last one it yielded.
    loader = load(daemon, pairs, reconnect_timeout=30, **flags)
    iterator = iter(loader)
    got = [m["key"] for _ in range(2) for m in next(iterator)[2]]
    daemon.kill()
    daemon.start()
    got += [m["key"] for batch in iterator for m in batch[2]]
    loader.close()
    assert got == want


def test_jobs_share_an_index_only_for_the_same_fields(daemon, pairs):
    client = stoker.Client(daemon.socket)
    loaders = [load(daemon, pairs, fields=fields, missing="skip")
               for fields in ((IMAGE, "txt"), (IMAGE, "txt"), (IMAGE, "json"))]
    try:
        assert client.stats()["daemon"]["dataset_indexes"] == 2
    finally:
        for loader in loaders:
            loader.close()
        client.close()
