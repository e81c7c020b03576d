"""The Python loader's job spec against the wire's JobSpec: every key the
loader sends is a field the daemon knows (the C ABI refuses unknown ones,
and the daemon's Job echoes each), and every wire field is either sent or
named here as set elsewhere. tests/spec_agreement_test.cc checks the C++
forms of the same spec."""
import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")
stoker = pytest.importorskip("stoker")
from stoker import spec as job_spec  # noqa: E402
from stoker.options import LoaderOptions  # noqa: E402

# Wire fields the loader does not put in its spec: the cursor adds the
# start position to each job it creates.
SET_ELSEWHERE = {"start_epoch", "start_batch"}


def keys(value, prefix=""):
    """Every key path of a JSON value ("sharing.mode", "pipeline[].resize")."""
    if isinstance(value, dict):
        found = set()
        for key, item in value.items():
            found.add(prefix + key)
            found |= keys(item, prefix + key + ".")
        return found
    if isinstance(value, list):
        found = set()
        for item in value:
            found |= keys(item, prefix[:-1] + "[].")
        return found
    return set()


def spec_of(root=None, shards=None, fields=None, views=1, masks=()):
    transform = T.Compose([T.RandomResizedCrop(48), T.RandomHorizontalFlip(),
                           T.ToTensor(),
                           T.Normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])])
    if views > 1:
        transform = [transform] * views
    return job_spec.build(LoaderOptions(
        root=root, transform=transform, shards=shards, batch_size=4,
        shuffle=True, drop_last=True, seed=7, rank=0, world_size=1, slots=4,
        weight=2, on_error="fail", sharing="broadcast", max_lag=2,
        on_lag="skip", name="fields", fields=fields,
        missing="skip" if fields else "error",
        max_field_bytes=1024 if fields else 0, masks=masks,
        mask_fill=9 if masks else 255))


def pairs_shard(dataset, scratch, masks=False):
    """The dataset's images as a shard of image-caption pairs (and, with
    masks, a palette PNG mask of each image's size)."""
    import io
    import os
    import tarfile
    from PIL import Image
    path = os.path.join(scratch, "masks.tar" if masks else "pairs.tar")
    with tarfile.open(path, "w") as tar:
        for i, (dirpath, _, files) in enumerate(os.walk(dataset)):
            for name in sorted(files):
                members = [(f"{i}{name}", None),
                           (f"{i}{name[:-4]}.txt", b"a caption")]
                if masks:
                    with Image.open(os.path.join(dirpath, name)) as im:
                        mask = io.BytesIO()
                        Image.new("P", im.size, 3).save(mask, "PNG")
                    members.append((f"{i}{name[:-4]}.png", mask.getvalue()))
                for member, data in members:
                    if data is None:
                        with open(os.path.join(dirpath, name), "rb") as f:
                            data = f.read()
                    info = tarfile.TarInfo(member)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return path


def test_every_key_the_loader_sends_is_a_wire_field(daemon, dataset, scratch):
    specs = [spec_of(root=dataset),
             spec_of(shards=pairs_shard(dataset, scratch),
                     fields=("jpg", "txt")),
             spec_of(shards=pairs_shard(dataset, scratch, masks=True),
                     fields=("jpg", "png"), masks=("png",)),
             spec_of(root=dataset, views=2)]
    client = stoker.Client(daemon.socket)
    top_sent, top_wire = set(), set()
    try:
        for spec in specs:
            job = client.create_job(spec)
            try:
                echoed = client.get_job(job["id"])["spec"]
            finally:
                client.delete_job(job["id"])
            # The daemon prints every field of its effective spec, defaults
            # too, but for the reference versions, which it keeps as the
            # behaviours they select (echoed only where an older one
            # differs): create_job above refused any key of them it does
            # not know.
            sent = {key for key in keys(spec)
                    if not key.startswith("reference")}
            assert sent - keys(echoed) == set(), \
                "keys the daemon does not echo"
            top_sent |= set(spec)
            top_wire |= set(echoed)
    finally:
        client.close()
    assert top_wire - top_sent == SET_ELSEWHERE
