"""An HTTP/2 header block that never ends (CVE-2023-33953's flood: a
HEADERS frame without END_HEADERS, then CONTINUATION frames of small
literal fields), sent raw on stokerd's socket: stokerd cuts the connection
off once what gRPC holds passes its memory quota, stays up and serves
others. Before the quota, 64 MiB of such frames grew stokerd by 410 MiB
and 512 MiB would have taken gigabytes."""
import socket
import struct

import pytest

stoker = pytest.importorskip("stoker")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MIB = 1 << 20


def frame(kind, flags, stream, payload):
    return (struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) +
            struct.pack(">I", stream) + payload)


def literal(name, value):
    """A literal header field without indexing, new name (RFC 7541
    6.2.2); names and values under 127 bytes."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def flood(path, limit):
    """Sends up to `limit` bytes of CONTINUATION frames on one connection;
    (bytes sent, whether stokerd closed the connection first)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(PREFACE + frame(0x4, 0, 0, b""))
    s.sendall(frame(0x1, 0, 1, literal(b":method", b"POST") +
                    literal(b":scheme", b"http") +
                    literal(b":path", b"/stoker.v1.Loader/GetStats") +
                    literal(b"content-type", b"application/grpc")))
    payload = literal(b"x", b"v") * 3000
    sent = 0
    try:
        while sent < limit:
            s.sendall(frame(0x9, 0, 1, payload))
            sent += len(payload)
    except (BrokenPipeError, ConnectionResetError):
        return sent, True
    finally:
        s.close()
    return sent, False


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_header_block_that_never_ends_is_cut_off(daemon):
    before = rss(daemon.process.pid)
    for _ in range(2):
        sent, closed = flood(daemon.socket, 512 * MIB)
        assert closed, f"stokerd took {sent / MIB:.0f} MiB of one header block"
        assert sent < 256 * MIB
        with stoker.Client(daemon.socket) as client:  # others go on
            assert client.stats()["daemon"]["workers"] == 2
    grown = rss(daemon.process.pid) - before
    assert grown < 400 * MIB, f"stokerd grew by {grown / MIB:.0f} MiB"
