"""Remote shards against real servers: s3rver (S3 API, SigV4 requests) and
nginx (HTTP with ranges), started here. A job over s3:// or http:// shards
gives exactly the batches the same shards give from local disk; the shard
cache serves later jobs and a restarted daemon without fetching again, but
only after each job's own probe; credentials are used and never shown; and
faults (403/404/500, a server killed mid-shard, a slow server, a connection
cut mid-member, an object replaced) end in a transparent retry or an error
naming the shard."""
import hashlib
import os
import shutil
import stat
import threading
import time

import pytest

torch = pytest.importorskip("torch")
from torchvision import transforms as T  # noqa: E402

import stoker  # noqa: E402
from stoker import errors  # noqa: E402
from conftest import Daemon, make_dataset  # noqa: E402
from remote_servers import (ACCESS_KEY, SECRET_KEY, CuttingRelay, Nginx,  # noqa: E402
                            S3Server, WrongTotalServer)
from test_sources import write_shards  # noqa: E402

SHARDS = 3
TRANSFORM = T.Compose([T.Resize(40), T.CenterCrop(40), T.PILToTensor()])


@pytest.fixture
def shards(scratch):
    """Three local shards of real JPEGs; their brace pattern."""
    folder = make_dataset(os.path.join(scratch, "folder"), classes=4,
                          per_class=6, width=320, height=240)
    out = os.path.join(scratch, "shards")
    os.mkdir(out)
    return write_shards(folder, out, SHARDS)


def shard_files(pattern):
    directory = os.path.dirname(pattern)
    return sorted(os.path.join(directory, n) for n in os.listdir(directory))


@pytest.fixture
def node(scratch):
    """A stokerd with its own shard cache."""
    directory = os.path.join(scratch, "node")
    os.mkdir(directory)
    d = Daemon(directory, extra=[f"--cache_dir={directory}/cache",
                                 "--cache_size=64M"])
    yield d
    d.stop()
    assert d.process.returncode == 0, d.read_log()
    assert d.segments() == []


@pytest.fixture
def s3(scratch, shards):
    server = S3Server(os.path.join(scratch, "s3"))
    for path in shard_files(shards):
        server.put("train/" + os.path.basename(path), path)
    yield server
    server.stop()


@pytest.fixture
def nginx(scratch, shards):
    server = Nginx(os.path.join(scratch, "nginx"), os.path.dirname(shards))
    yield server
    server.stop()


def s3_access(server, **extra):
    access = dict(endpoint_url=server.endpoint, access_key_id=ACCESS_KEY,
                  secret_access_key=SECRET_KEY)
    access.update(extra)
    return access


def epochs(loader, count=2):
    """Per epoch: each batch's pixel digest and labels."""
    out = []
    for epoch in range(count):
        loader.set_epoch(epoch)
        out.append([(hashlib.sha256(x.numpy().tobytes()).hexdigest(),
                     y.tolist()) for x, y in loader])
    return out


def load(node, shards, **kw):
    return stoker.DataLoader(shards=shards, batch_size=5, shuffle=True, seed=7,
                             transform=TRANSFORM, socket=node.socket, **kw)


def probes(nginx):
    """The access checks in nginx's log: GETs of a shard's first byte."""
    return [line for line in nginx.access_log()
            if line.startswith("GET") and line.endswith('"bytes=0-0"')]


def fetches(nginx):
    """The GETs of whole shards (or their rest) in nginx's log."""
    return [line for line in nginx.access_log()
            if line.startswith("GET") and not line.endswith('"bytes=0-0"')]


def wait_for(count, expected, seconds=20):
    """count() once it reaches `expected` (or the deadline passes), and
    after a moment more, so that one too many is seen too."""
    deadline = time.monotonic() + seconds
    while count() < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    return count()


def cache_stats(node):
    with stoker.Client(node.socket) as client:
        return {k: int(v) for k, v in client.stats()["daemon"].items()
                if k.startswith("shard_cache")}


def test_s3_and_http_shards_give_the_local_batches(node, shards, s3, nginx):
    with load(node, shards) as local:
        expected = epochs(local)
        assert len(local) == 5  # 24 samples in batches of 5
    assert sum(len(y) for _, y in expected[0]) == 24
    with load(node, "s3://data/train/train-{000000..000002}.tar",
              remote=s3_access(s3)) as remote:
        assert len(remote) == 5
        assert epochs(remote) == expected
    with load(node, nginx.url("train-{000000..000002}.tar")) as remote:
        assert epochs(remote) == expected
    # Cached whole: mode 0600 files in a 0700 directory of stokerd's.
    cache = os.path.join(node.dir, "cache")
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    tars = [n for n in os.listdir(cache) if n.endswith(".tar")]
    assert len(tars) == 2 * SHARDS
    for name in tars:
        assert stat.S_IMODE(os.stat(os.path.join(cache, name)).st_mode) == 0o600


def test_fields_over_s3_and_http_are_the_local_ones(node, shards, s3, nginx):
    def fields_of(source, **kw):
        with load(node, source, fields=("jpg;png", "cls"), **kw) as loader:
            return [(hashlib.sha256(x.numpy().tobytes()).hexdigest(),
                     c.tolist()) for x, c in loader]
    local = fields_of(shards)
    assert sum(len(c) for _, c in local) == 24
    assert fields_of("s3://data/train/train-{000000..000002}.tar",
                     remote=s3_access(s3)) == local
    assert fields_of(nginx.url("train-{000000..000002}.tar")) == local


def test_https_with_the_stores_own_ca(scratch, shards, nginx):
    url = f"https://127.0.0.1:{nginx.tls_port}/train-{{000000..000002}}.tar"
    directory = os.path.join(scratch, "tls")
    os.mkdir(directory)
    node = Daemon(directory, extra=[f"--cache_dir={directory}/cache",
                                    f"--remote_ca_file={nginx.cert}"])
    try:
        with load(node, shards) as local:
            expected = epochs(local, 1)
        with load(node, url) as remote:
            assert epochs(remote, 1) == expected
    finally:
        node.stop()
    assert node.process.returncode == 0, node.read_log()


def test_https_to_an_untrusted_certificate_is_refused(node, nginx):
    url = f"https://127.0.0.1:{nginx.tls_port}/train-000000.tar"
    with pytest.raises(errors.FailedPrecondition, match="--remote_ca_file"):
        load(node, url)


def test_a_shard_list_file_names_remote_shards(scratch, node, shards, s3):
    listing = os.path.join(scratch, "train.txt")
    with open(listing, "w") as f:
        f.write("# three shards in the store\n\n")
        for i in range(SHARDS):
            f.write(f"s3://data/train/train-{i:06d}.tar\n")
    with load(node, shards) as local:
        expected = epochs(local, 1)
    with load(node, listing, remote=s3_access(s3)) as remote:
        assert epochs(remote, 1) == expected


def test_later_jobs_and_a_restarted_daemon_read_no_network(node, shards, nginx):
    url = nginx.url("train-{000000..000002}.tar")
    with load(node, url) as first:
        expected = epochs(first)
    assert len(fetches(nginx)) == SHARDS
    assert cache_stats(node)["shard_cache_misses"] == SHARDS
    with load(node, url) as second:
        assert epochs(second) == expected
    node.stop()
    node.log = open(os.path.join(node.dir, "stokerd.log"), "a")
    node.start()
    with load(node, url) as third:
        assert epochs(third, 3)[:2] == expected
    # Each job made its own probes; only the first fetched the shards.
    assert len(fetches(nginx)) == SHARDS
    assert len(probes(nginx)) == 3 * SHARDS
    stats = cache_stats(node)
    assert stats["shard_cache_hits"] == SHARDS  # since the restart
    assert stats.get("shard_cache_misses", 0) == 0
    assert stats["shard_cache_files"] == SHARDS


def test_credentials_are_the_jobs_own_and_never_shown(node, shards, s3):
    name = "s3://data/train/train-{000000..000002}.tar"
    secret_seen = []
    with load(node, name, remote=s3_access(s3)) as loader:
        with stoker.Client(node.socket) as client:
            shown = repr(client.list_jobs()) + repr(client.stats()) + \
                repr(client.get_job(loader.job_id))
        secret_seen.append("S3RVER" in shown)
        # Cached now; another job with an unknown key still may not use it.
        with pytest.raises(errors.PermissionDenied,
                           match="remote shard 's3://data/train/train-00000[0-2].tar': HTTP 403"):
            load(node, name, remote=s3_access(s3, access_key_id="INTRUDER"))
    assert secret_seen == [False]
    assert "S3RVER" not in node.read_log()


def signed_requests(raw):
    """(method, path, headers) of each request in a relay's bytes."""
    out = []
    for head in raw.decode().split("\r\n\r\n"):
        if not head:
            continue
        lines = head.split("\r\n")
        method, path, _ = lines[0].split(" ")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        out.append((method, path, headers))
    return out


def test_the_sdks_own_reconnect_keeps_the_jobs_credentials(node, shards, s3):
    """A C ABI (C++ SDK) consumer with its own reconnecting on, over private
    s3:// shards: after the daemon restarts, the SDK re-creates the job with
    the credentials it was created with (before, from its spec alone:
    PERMISSION_DENIED)."""
    import ctypes
    from stoker import _native, remote as stoker_remote
    lib = _native.library()
    client = stoker.Client(node.socket)
    spec = {"dataset": {"shards": ["s3://data/train/train-{000000..000002}.tar"]},
            "batch_size": 4, "slots": 2, "epochs": 2,
            "pipeline": [{"resize": {"height": 16, "width": 16}}]}
    job = client.create_job(spec, stoker_remote.access(s3_access(s3)))
    options = _native.ConsumerOptions(prefetch=1, name=b"sdk",
                                      reconnect_timeout_ms=30000)
    consumer = ctypes.c_void_p()
    _native.check(lib.stoker_attach(client.handle, job["id"].encode(),
                                    ctypes.byref(options),
                                    ctypes.byref(consumer)))

    def take():
        batch, info = ctypes.c_void_p(), _native.BatchInfo()
        _native.check(lib.stoker_next(consumer, 30000, ctypes.byref(batch),
                                      ctypes.byref(info)))
        place = (int(info.epoch), int(info.index))
        lib.stoker_batch_release(batch)
        return place

    try:
        assert [take() for _ in range(3)] == [(0, 0), (0, 1), (0, 2)]
        node.kill()
        node.start()
        assert [take() for _ in range(4)] == [(0, 3), (0, 4), (0, 5), (1, 0)]
    finally:
        lib.stoker_consumer_close(consumer)
        for j in client.list_jobs():
            client.delete_job(j["id"])
        client.close()


def test_requests_are_signed_as_aws_signs_them(node, shards, s3):
    botocore = pytest.importorskip("botocore")  # noqa: F841
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    relay = CuttingRelay(s3.port)
    try:
        access = s3_access(s3, endpoint_url=f"http://127.0.0.1:{relay.port}",
                           region="eu-west-3", session_token="TOKEN/with+signs=")
        with load(node, "s3://data/train/train-{000000..000002}.tar",
                  remote=access) as loader:
            assert len(loader) == 5
    finally:
        relay.close()
    requests = signed_requests(bytes(relay.requests))
    assert [m for m, _, _ in requests] == ["GET"] * 2 * SHARDS
    assert sorted(h.get("Range", "") for _, _, h in requests) == \
        [""] * SHARDS + ["bytes=0-0"] * SHARDS  # probes and fetches
    for method, path, headers in requests:
        assert path.startswith("/data/train/train-")  # path-style
        fields = dict(part.strip().split("=", 1) for part in
                      headers["Authorization"].split(" ", 1)[1].split(","))
        key, _, region, service, _ = fields["Credential"].split("/")
        assert (key, region, service) == (ACCESS_KEY, "eu-west-3", "s3")
        signed = fields["SignedHeaders"].split(";")
        assert "x-amz-security-token" in signed
        lower = {name.lower(): value for name, value in headers.items()}
        request = AWSRequest(method=method, url=f"http://{lower['host']}{path}",
                             headers={name: lower[name] for name in signed})
        request.context["timestamp"] = lower["x-amz-date"]
        signer = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), service, region)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)),
            request)
        assert fields["Signature"] == expected, (method, path)


def test_answers_403_404_500_name_the_shard(node, shards, nginx):
    with pytest.raises(errors.PermissionDenied, match="forbidden/train-000000"):
        load(node, nginx.url("forbidden/train-000000.tar"))
    with pytest.raises(errors.NotFound, match="no such object"):
        load(node, nginx.url("missing-{0..1}.tar"))
    with pytest.raises(errors.Unavailable, match="broken/train-000001.tar.*HTTP 500"):
        load(node, nginx.url("broken/train-000001.tar"))
    # A 500 is retried: 6 attempts (nginx logs each after answering it:
    # waited for, as a busy machine may write the last one late).
    assert wait_for(lambda: len([line for line in nginx.access_log()
                                 if "/broken/" in line]), 6) == 6
    assert os.listdir(os.path.join(node.dir, "cache")) == ["lock"]


def test_a_slow_server_and_a_killed_one_are_waited_for(node, shards, nginx):
    with load(node, shards) as local:
        expected = epochs(local, 1)
    # /slow/ sends 64 KiB/s: the shards (about 100 KiB each) take seconds.
    killer = threading.Timer(1.0, lambda: (nginx.kill(), nginx.start()))
    killer.start()
    with load(node, nginx.url("slow/train-{000000..000002}.tar")) as remote:
        assert epochs(remote, 1) == expected
    killer.join()
    ranged = [line for line in fetches(nginx) if '"bytes=' in line]
    assert ranged, "no transfer was resumed with a ranged GET"
    assert [n for n in os.listdir(os.path.join(node.dir, "cache"))
            if n.startswith(".partial")] == []


def test_a_cut_connection_resumes_from_the_last_byte(node, shards, nginx):
    with load(node, shards) as local:
        expected = epochs(local, 1)
    relay = CuttingRelay(nginx.port, after=30000, cuts=2)
    try:
        url = f"http://127.0.0.1:{relay.port}/train-{{000000..000002}}.tar"
        with load(node, url) as remote:
            assert epochs(remote, 1) == expected
    finally:
        relay.close()
    assert relay.cut == 2
    assert "2 retries, 2 resumed" in node.read_log()


def test_an_object_replaced_mid_fetch_is_fetched_again_whole(
        scratch, node, shards, nginx):
    files = shard_files(shards)
    # Replace shard 0 by shard 1's bytes while its first transfer is cut:
    # the resume's If-Match fails, and the new version is fetched whole.
    new = os.path.join(scratch, "new.tar")
    shutil.copy(files[1], new)

    def replace():
        os.replace(new, files[0])
        os.utime(files[0], (1, 1))  # a new ETag

    relay = CuttingRelay(nginx.port, after=20000, cuts=1, on_cut=replace)
    try:
        url = f"http://127.0.0.1:{relay.port}/train-000000.tar"
        with load(node, url) as remote:
            labels = sorted(y for _, ys in epochs(remote, 1)[0] for y in ys)
    finally:
        relay.close()
    with load(node, files[1]) as local:
        assert labels == sorted(y for _, ys in epochs(local, 1)[0] for y in ys)
    assert any(" 412 " in line for line in nginx.access_log())


def test_an_object_replaced_during_an_epoch_leaves_the_job_whole(
        node, shards, nginx):
    files = shard_files(shards)
    url = nginx.url("train-{000000..000002}.tar")
    with load(node, shards) as local:
        expected = epochs(local, 2)
    with load(node, url) as remote:
        first = epochs(remote, 1)
        shutil.copy(files[1], files[0])  # replaced under the running job
        os.utime(files[0], (2, 2))
        remote.set_epoch(1)
        second = [(hashlib.sha256(x.numpy().tobytes()).hexdigest(), y.tolist())
                  for x, y in remote]
    # The running job keeps the version it indexed: every sample once.
    assert [first[0], second] == expected
    # A new job sees the new version (fetched again).
    with load(node, url) as again:
        labels = [y for _, ys in epochs(again, 1)[0] for y in ys]
    assert len(labels) == 24
    assert cache_stats(node)["shard_cache_misses"] == SHARDS + 1


def test_shards_that_do_not_fit_the_cache_are_refused(scratch, shards, nginx):
    directory = os.path.join(scratch, "small")
    os.mkdir(directory)
    sizes = [os.path.getsize(f) for f in shard_files(shards)]
    room = sizes[0] + sizes[1] + 1000
    node = Daemon(directory, extra=[f"--cache_dir={directory}/cache",
                                    f"--cache_size={room}",
                                    f"--cache_size_per_user={room}"])
    try:
        with pytest.raises(errors.ResourceExhausted, match="--cache_size"):
            load(node, nginx.url("train-{000000..000002}.tar"), streaming=False)
        # Unless told not to, such a job streams (test_streaming.py), with
        # a window the cache can hold twice: not these shards' default.
        with pytest.raises(errors.ResourceExhausted,
                           match="a streamed job holds two windows of shuffle_window=16"):
            load(node, nginx.url("train-{000000..000002}.tar"))
        # One shard larger than the whole cache: named, with the setting
        # (not only the per-user share).
        with open(os.path.join(os.path.dirname(shards), "huge.tar"), "wb") as f:
            f.truncate(room + 1)
        with pytest.raises(errors.ResourceExhausted,
                           match=r"huge.tar': a shard of .* is larger than "
                                 r"the whole shard cache \(--cache_size"):
            load(node, [nginx.url("train-000000.tar"), nginx.url("huge.tar")],
                 streaming=False)
        # Two fit; a later job over others evicts the least recently used.
        with load(node, nginx.url("train-{000000..000001}.tar")) as two:
            assert len(two) == 4  # 16 samples
        with load(node, nginx.url("train-000002.tar")) as one:
            assert len(one) == 2
        assert cache_stats(node)["shard_cache_evictions"] >= 1
    finally:
        node.stop()
    assert node.process.returncode == 0, node.read_log()


def test_a_resume_of_another_total_size_is_refused_at_once(node, shards):
    """A resumed GET whose Content-Range gives another total than the probe
    (same ETag): FAILED_PRECONDITION naming the shard, without retrying (it
    was taken for a changed object: ABORTED after six GETs)."""
    server = WrongTotalServer(shard_files(shards)[0], cut=20000)
    try:
        with pytest.raises(errors.FailedPrecondition,
                           match=r"train-000000.tar': asked for bytes from "
                                 r"20000 of \d+, the server answered bytes "
                                 r"from 20000 of \d+"):
            load(node, server.url("train-000000.tar"))
        assert server.gets == 2
    finally:
        server.close()


def test_remote_names_are_checked(node):
    for bad, why in [("s3://", "names no bucket"),
                     ("https://user:pw1s3cret@host/x.tar", "user name or password"),
                     ("https://host/x.tar?X-Amz-Signature=51gn4ture", "query"),
                     ("http://host/", "names no path")]:
        with pytest.raises(errors.InvalidArgument, match=why) as refused:
            load(node, bad)
        assert "s3cret" not in str(refused.value)
        assert "51gn4ture" not in str(refused.value)
    with pytest.raises(errors.InvalidArgument, match="endpoint_url") as refused:
        load(node, "s3://bucket/x.tar",
             remote={"endpoint_url": "http://key:pw2s3cret@127.0.0.1:9",
                     "access_key_id": "a", "secret_access_key": "b"})
    assert "s3cret" not in str(refused.value)
    # Nothing secret is ever logged, refusals included.
    log = node.read_log()
    assert "s3cret" not in log and "51gn4ture" not in log
    assert "user name or password" in log  # the refusal itself was
    with pytest.raises(errors.InvalidArgument, match="all local paths or all remote"):
        load(node, ["s3://b/x.tar", "/data/y.tar"])


def test_a_daemon_without_a_shard_cache_refuses_remote_shards(daemon):
    with pytest.raises(errors.FailedPrecondition, match="--cache_dir"):
        load(daemon, "https://127.0.0.1:9/train-0.tar")
