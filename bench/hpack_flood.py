"""What a flood of HTTP/2 header blocks costs stokerd (CVE-2023-33953's
pattern): a client opens a stream with a HEADERS frame that never ends and
sends CONTINUATION frames of literal header fields, `--mib` in all, on
`--connections` connections one after another; stokerd's resident memory
is read before, after each flood, and a few seconds later.

  STOKERD=build/daemon/stokerd python3 bench/hpack_flood.py [--mib=8]
      [--floods=3] [--value=4000]
"""
import argparse
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload):
    return (struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) +
            struct.pack(">I", stream) + payload)


def literal(name, value):
    """A literal header field without indexing, new name (RFC 7541 6.2.2),
    lengths as 7-bit prefixed integers."""
    def length(n):
        if n < 127:
            return bytes([n])
        out, n = [127], n - 127
        while n >= 128:
            out.append(n % 128 | 128)
            n //= 128
        return bytes(out + [n])
    return b"\x00" + length(len(name)) + name + length(len(value)) + value


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def flood(path, mib, value):
    """One connection: a request's HEADERS, then CONTINUATION frames of
    fields with `value`-byte values until `mib` MiB went; True if stokerd
    closed the connection before the end."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(PREFACE + frame(0x4, 0, 0, b""))  # SETTINGS
    start = (literal(b":method", b"POST") + literal(b":scheme", b"http") +
             literal(b":path", b"/stoker.v1.Loader/GetStats") +
             literal(b":authority", b"x") +
             literal(b"content-type", b"application/grpc"))
    s.sendall(frame(0x1, 0x0, 1, start))  # HEADERS, no END_HEADERS
    field = literal(b"x-flood", b"v" * value)
    per_frame = max(1, 16000 // len(field))
    payload = field * per_frame
    sent, closed = 0, False
    try:
        while sent < mib << 20:
            s.sendall(frame(0x9, 0x0, 1, payload))  # CONTINUATION
            sent += len(payload)
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    s.close()
    return closed, sent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=8)
    parser.add_argument("--floods", type=int, default=3)
    parser.add_argument("--value", type=int, default=4000,
                        help="bytes of each header field's value")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stoker-hpack-") as tmp:
        path = os.path.join(tmp, "stoker.sock")
        daemon = subprocess.Popen(
            [os.environ["STOKERD"], "--config=", f"--socket={path}",
             "--workers=1", "--log_level=error"], stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(path):
                time.sleep(0.02)
            time.sleep(0.5)
            base = rss(daemon.pid)
            print(f"stokerd RSS before: {base / 2**20:.1f} MiB")
            for i in range(args.floods):
                closed, sent = flood(path, args.mib, args.value)
                time.sleep(0.5)
                print(f"flood {i + 1}: {sent / 2**20:.1f} MiB sent, "
                      f"{'closed by stokerd' if closed else 'all taken'}; "
                      f"RSS {rss(daemon.pid) / 2**20:.1f} MiB "
                      f"(+{(rss(daemon.pid) - base) / 2**20:.1f})", flush=True)
            time.sleep(3)
            print(f"3 s later: RSS {rss(daemon.pid) / 2**20:.1f} MiB "
                  f"(+{(rss(daemon.pid) - base) / 2**20:.1f})")
            assert daemon.poll() is None, "stokerd died"
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()


if __name__ == "__main__":
    main()
