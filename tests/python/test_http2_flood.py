"""An HTTP/2 header block that never ends (CVE-2023-33953's flood: a
HEADERS frame without END_HEADERS, then CONTINUATION frames of literal
fields, small or large), sent raw on stokerd's socket: stokerd's relay cuts
the connection off once the block passes 64 KiB, before gRPC holds it;
stokerd stays up and serves others. Before, 64 MiB of small fields grew
stokerd by 410 MiB, and 512 MiB of 4,000-byte values by 498 MiB."""
import socket
import struct

import pytest

stoker = pytest.importorskip("stoker")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MIB = 1 << 20


def frame(kind, flags, stream, payload):
    return (struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) +
            struct.pack(">I", stream) + payload)


def length(n):
    """An HPACK integer with a 7-bit prefix (RFC 7541 5.1)."""
    if n < 127:
        return bytes([n])
    out, n = [127], n - 127
    while n >= 128:
        out.append(n % 128 | 128)
        n //= 128
    return bytes(out + [n])


def literal(name, value):
    """A literal header field without indexing, new name (RFC 7541
    6.2.2)."""
    return b"\x00" + length(len(name)) + name + length(len(value)) + value


def flood(path, limit, value):
    """Sends up to `limit` bytes of CONTINUATION frames of fields with
    `value`-byte values on one connection; (bytes sent, whether stokerd
    closed the connection first)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(PREFACE + frame(0x4, 0, 0, b""))
    s.sendall(frame(0x1, 0, 1, literal(b":method", b"POST") +
                    literal(b":scheme", b"http") +
                    literal(b":path", b"/stoker.v1.Loader/GetStats") +
                    literal(b"content-type", b"application/grpc")))
    field = literal(b"x", b"v" * value)
    payload = field * max(1, 16000 // len(field))
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


@pytest.mark.parametrize("value", [1, 4000])
def test_a_header_block_that_never_ends_is_cut_off(daemon, value):
    before = rss(daemon.process.pid)
    for _ in range(3):
        sent, closed = flood(daemon.socket, 512 * MIB, value)
        assert closed, f"stokerd took {sent / MIB:.0f} MiB of one header block"
        assert sent < 8 * MIB
        with stoker.Client(daemon.socket) as client:  # others go on
            assert client.stats()["daemon"]["workers"] == 2
    grown = rss(daemon.process.pid) - before
    assert grown < 32 * MIB, f"stokerd grew by {grown / MIB:.0f} MiB"
