"""stoker.options.LoaderOptions: DataLoader's keywords made into one object,
resolved and checked once, before the loader connects, and what the spec
builder reads. No daemon is needed: a wrong keyword is refused where none
runs."""
import dataclasses
import inspect
import os

import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")

import stoker  # noqa: E402
from stoker import spec as job_spec  # noqa: E402
from stoker.loader import DataLoader  # noqa: E402
from stoker.options import LoaderOptions  # noqa: E402

TRANSFORM = T.Compose([T.RandomResizedCrop(32), T.ToTensor()])


def test_the_options_have_the_loaders_keywords_names_order_and_defaults():
    loader = list(inspect.signature(DataLoader.__init__).parameters.values())
    assert loader[0].name == "self"
    assert loader[-1].kind is inspect.Parameter.VAR_KEYWORD
    keywords = [(p.name, p.default) for p in loader[1:-1]]
    options = [(f.name, f.default) for f in dataclasses.fields(LoaderOptions)
               if f.init and f.name != "ignored"]
    assert options == keywords
    assert loader[-1].name == "ignored"


@pytest.mark.parametrize("keywords, error, message", [
    (dict(sharing="all"), stoker.InvalidArgument, "sharing='all': one of"),
    (dict(on_lag="wait"), stoker.InvalidArgument, "on_lag="),
    (dict(on_error="skip"), stoker.InvalidArgument, "on_error="),
    (dict(device="mps"), stoker.InvalidArgument, "cpu or cuda"),
    (dict(shards="/data/x.tar"), stoker.InvalidArgument,
     "name one dataset.*not root and shards"),
    (dict(label_field="cls"), stoker.InvalidArgument, "label_field"),
    (dict(streaming=True), stoker.InvalidArgument, "remote shards only"),
    (dict(mask_fill=3), stoker.InvalidArgument, "mask_fill applies"),
    (dict(missing="skip"), stoker.InvalidArgument, "with fields= only"),
    (dict(field_transforms={"txt": str}), stoker.InvalidArgument,
     "field_transforms applies with fields="),
    (dict(collate_fn=list), stoker.InvalidArgument, "collate_fn="),
    (dict(shuffle=True, sampler=torch.utils.data.SequentialSampler(range(4))),
     stoker.InvalidArgument, "mutually exclusive"),
    (dict(seed=3, generator=torch.Generator().manual_seed(4)),
     stoker.InvalidArgument, "generator gives 4"),
    (dict(batch_sampler=[[0]]), TypeError, "batch_sampler"),
    (dict(transform=[TRANSFORM, TRANSFORM], device="cuda"),
     (stoker.Unimplemented, stoker.FailedPrecondition), "views|CUDA"),
    (dict(transform=T.Compose([T.ToTensor(), T.RandomResizedCrop(32)])),
     stoker.UnsupportedTransform, "after ToTensor"),
])
def test_a_wrong_keyword_is_refused_before_connecting(scratch, keywords,
                                                      error, message):
    """The socket names no daemon: had the check waited for one, the
    loader would raise stoker.Unavailable instead."""
    keywords = dict(dict(transform=TRANSFORM), **keywords)
    with pytest.raises(error, match=message):
        DataLoader(scratch, socket=os.path.join(scratch, "nobody.sock"),
                   **keywords)


def test_keywords_are_resolved_once(scratch):
    reference = list(range(10))
    sampler = torch.utils.data.DistributedSampler(
        reference, num_replicas=4, rank=2, shuffle=True, seed=9,
        drop_last=True)
    options = LoaderOptions(root=scratch, transform=TRANSFORM, batch_size=2,
                            sampler=sampler, prefetch="3",
                            ignored={"num_workers": 6})
    assert (options.rank, options.world_size, options.seed, options.shuffle,
            options.shard_drop_last) == (2, 4, 9, True, True)
    assert options.device == torch.device("cpu") and options.cuda_device is None
    assert options.prefetch == 3 and options.num_workers == 6
    assert not options.shared and LoaderOptions(
        root=scratch, transform=TRANSFORM, sharing="broadcast").shared
    spec = job_spec.build(options)
    assert (spec["rank"], spec["world_size"], spec["seed"],
            spec["shard_drop_last"]) == (2, 4, 9, True)
    assert spec["dataset"] == {"path": os.path.abspath(scratch)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 10


def test_a_shard_list_file_is_read_once_into_the_options(scratch):
    listing = os.path.join(scratch, "shards.txt")
    with open(listing, "w") as f:
        f.write("# two shards\na-000.tar\nhttps://example.com/b-001.tar\n")
    options = LoaderOptions(shards=listing, transform=TRANSFORM)
    assert options.shards == [os.path.join(scratch, "a-000.tar"),
                              "https://example.com/b-001.tar"]
    os.remove(listing)  # the spec is built from the names already read
    assert job_spec.build(options)["dataset"]["shards"] == options.shards


def test_a_cuda_device_is_resolved_and_what_it_cannot_serve_refused(
        scratch, monkeypatch):
    """As on a machine with GPUs (torch.cuda's answers stood in for): the
    device's index, and views and masks refused there before any job."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    for device, index in (("cuda", 3), ("cuda:1", 1), (torch.device("cuda", 2), 2),
                          ("cpu", None)):
        options = LoaderOptions(root=scratch, transform=TRANSFORM, device=device)
        assert options.cuda_device == index
        assert options.device.type == ("cpu" if index is None else "cuda")
    with pytest.raises(stoker.Unimplemented, match="views are served on the CPU"):
        LoaderOptions(root=scratch, transform=[TRANSFORM, TRANSFORM],
                      device="cuda")
    with pytest.raises(stoker.Unimplemented, match="masks are served on the CPU"):
        LoaderOptions(shards=os.path.join(scratch, "a.tar"), transform=TRANSFORM,
                      fields=("jpg", "png"), masks=("png",), device="cuda")
    attached = LoaderOptions(root=scratch, transform=[TRANSFORM, TRANSFORM],
                             device="cuda", job_id="7")  # the owner's views
    assert attached.shared and attached.cuda_device == 3


def test_the_credentials_are_never_in_a_repr(scratch):
    options = LoaderOptions(
        shards="s3://bucket/a-{000..001}.tar", transform=TRANSFORM,
        remote={"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s3cr3t",
                "session_token": "t0ken"})
    shown = repr(options)
    assert "shards=" in shown
    for secret in ("AKIDEXAMPLE", "s3cr3t", "t0ken"):
        assert secret not in shown


@pytest.mark.parametrize("transform, named", [
    (T.ToTensor(), "ToTensor"),
    (T.Compose([T.ToTensor()]), "Compose([ToTensor])"),
])
def test_a_refused_transform_is_named_by_its_kind(scratch, transform, named):
    options = LoaderOptions(root=scratch, transform=transform)
    with pytest.raises(stoker.UnsupportedTransform) as caught:
        job_spec.build(options)
    assert str(caught.value).startswith(
        f"INVALID_ARGUMENT: {named}: a transform must fix the image size"), \
        str(caught.value)
