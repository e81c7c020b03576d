"""How much memory stokerd takes to index a manifest: for each case a fresh
stokerd, one CreateJob over the manifest, and the growth of the daemon's
peak resident memory (VmHWM) against the file's size and the index's.

  STOKERD=build/daemon/stokerd PYTHONPATH=build/python \\
      python3 bench/manifest_memory.py [--rows=1280000] [--cap]

Cases: CSV and JSON lines with `rows` ImageNet-like rows
("n01440764/n01440764_00000026.JPEG", 1000 classes, naming 100,000
files in turn), the same at the 256 MiB
cap (--cap), and a JSON-lines file whose one line is a long array (the
hostile case: refused now, by the row bound).
"""
import argparse
import json
import os
import signal
import subprocess
import tempfile
import time

import stoker

MIB = 1 << 20


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def write_rows(path, rows, jsonl):
    with open(path, "w") as f:
        if not jsonl:
            f.write("path,label\n")
        for i in range(rows):
            c, k = i % 1000, i // 1000 % 100
            name = f"n{c:08d}/n{c:08d}_{k:08d}.JPEG"
            if jsonl:
                f.write(json.dumps({"path": name, "label": c}) + "\n")
            else:
                f.write(f"{name},{c}\n")


def measure(stokerd, tmp, manifest):
    socket = os.path.join(tmp, f"s{time.monotonic_ns()}.sock")
    daemon = subprocess.Popen([stokerd, "--config=", f"--socket={socket}",
                               "--workers=1", "--log_level=error"],
                              stderr=subprocess.DEVNULL)
    try:
        while not os.path.exists(socket):
            time.sleep(0.02)
        client = stoker.Client(socket)
        before = vm_hwm(daemon.pid)
        start = time.monotonic()
        try:
            job = client.create_job({"dataset": {"manifest": manifest},
                                     "batch_size": 4, "slots": 1,
                                     "output": {"height": 8, "width": 8}})
            outcome = f"index {int(job.get('index_bytes', 0)) / MIB:.0f} MiB"
        except stoker.StokerError as e:
            outcome = "refused: " + str(e)[:90]
        seconds = time.monotonic() - start
        grown = vm_hwm(daemon.pid) - before
        client.close()
        return grown, seconds, outcome
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1280000)
    parser.add_argument("--cap", action="store_true",
                        help="also manifests of about 256 MiB")
    args = parser.parse_args()
    stokerd = os.environ["STOKERD"]
    with tempfile.TemporaryDirectory(prefix="stoker-manifest-") as tmp:
        for c in range(1000):  # the files the rows name: 100 a class,
            folder = os.path.join(tmp, f"n{c:08d}")  # one inode
            os.makedirs(folder)
            first = os.path.join(folder, f"n{c:08d}_{0:08d}.JPEG")
            open(first, "wb").close()
            for k in range(1, 100):
                os.link(first, os.path.join(folder, f"n{c:08d}_{k:08d}.JPEG"))
        cases = [("csv", args.rows, False), ("jsonl", args.rows, True)]
        if args.cap:
            cases += [("csv", 5_600_000, False), ("jsonl", 3_900_000, True)]
        print("| manifest | rows | file MiB | peak growth MiB | x file | s | outcome |")
        print("|---|---|---|---|---|---|---|")
        for kind, rows, jsonl in cases:
            path = os.path.join(tmp, f"m{rows}.{kind}")
            write_rows(path, rows, jsonl)
            size = os.path.getsize(path)
            grown, seconds, outcome = measure(stokerd, tmp, path)
            print(f"| {kind} | {rows} | {size / MIB:.0f} | {grown / MIB:.0f} | "
                  f"{grown / size:.2f} | {seconds:.1f} | {outcome} |",
                  flush=True)
            os.unlink(path)
        open(os.path.join(tmp, "a.jpg"), "wb").close()
        path = os.path.join(tmp, "array.jsonl")
        with open(path, "w") as f:
            f.write('{"path": "a.jpg", "label": 0, "x": [' +
                    ",".join(["1"] * (32 * MIB // 2)) + "]}\n")
        size = os.path.getsize(path)
        grown, seconds, outcome = measure(stokerd, tmp, path)
        print(f"| jsonl, one line of a long array | 1 | {size / MIB:.0f} | "
              f"{grown / MIB:.0f} | {grown / size:.2f} | {seconds:.1f} | "
              f"{outcome} |")


if __name__ == "__main__":
    main()
