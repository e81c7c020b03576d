"""results.jsonl (bench/gpu/run.sh) -> the summary table, in Markdown.

  summarize.py RESULTS.jsonl
"""
import json
import sys


def fmt(value, digits=1):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main():
    results = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    by_part = {}
    for r in results:
        by_part.setdefault(r["part"], []).append(r)
    env = (by_part.get("environment") or [{}])[0]
    print(f"# stoker on {env.get('gpu') or 'no GPU'}\n")
    print(f"Python {env.get('python')}, torch {env.get('torch')}, torchvision "
          f"{env.get('torchvision')}, Pillow {env.get('pillow')}, numpy "
          f"{env.get('numpy')}; libstoker {env.get('libstoker')} (CUDA path "
          f"{fmt(env.get('libstoker_cuda'))}).")
    print(f"CPU: {env.get('cpu_model')}, {env.get('cpus')} CPUs, "
          f"{env.get('sockets')} socket(s) of {env.get('cores_per_socket')} "
          f"cores, {env.get('threads_per_core')} thread(s) per core "
          "(lscpu).\n")
    print(table(["part", "state", "seconds"],
                [(r["name"], r["state"], r["seconds"])
                 for r in by_part.get("status", [])]))
    skipped = [r for r in results if "skipped" in r]
    for r in skipped:
        print(f"- {r['part']} skipped: {r['skipped']}")
    if skipped:
        print()
    sections = [
        ("Fidelity against torchvision + this Pillow", "fidelity",
         ["transform", "images", "byte-equal", "max abs diff", "first different"],
         lambda r: (r["transform"], r["images"], r["byte_equal"],
                    r["max_abs_diff"], r["first_different"])),
        ("Host-to-device bandwidth, GB/s (best copy)", "h2d",
         ["batch", "MB", "ring", "pinned", "pageable", "ring / pinned (goal >= 0.90)",
          "ring registered"],
         lambda r: (r["dtype"], r["mb"], r["ring_gbs"], r["pinned_gbs"],
                    r["pageable_gbs"], f"{r['ring_over_pinned']:.2f}",
                    r["ring_registered"])),
        ("Copy overlap: ms per training step", "overlap",
         ["batch", "resident", "trainer's stream", "+%", "loader's stream",
          "+% (goal <= 3)", "input wait %"],
         lambda r: (r["dtype"], r["step_ms"], r["trainer_stream_ms"],
                    r["trainer_stream_longer_percent"], r["loader_stream_ms"],
                    r["loader_stream_longer_percent"], r["input_wait_percent"])),
        ("End to end: training for a fixed time", "e2e",
         ["transform", "loader", "copies", "model", "batch", "workers", "images/s",
          "GPU busy %", "input-bound %", "host CPU %", "peak PSS MB"],
         lambda r: (f"{r['transform']} ({r['crop']})", r["loader"],
                    r.get("copies", "-"), r["model"],
                    r["batch"], r["workers"], r["images_per_s"],
                    r["gpu_busy_percent"], r["input_bound_percent"],
                    r["host_cpu_percent"], r["peak_pss_mb"])),
        ("Decode scaling (train pipeline, C++ client)", "scaling",
         ["workers", "images/s", "per worker", "efficiency (goal >= 0.90)",
          "CPU ms / image", "x one worker's", "CPU / workers' time",
          "waits / image", "preemptions / image"],
         lambda r: (r["workers"], r["images_per_s"], r["per_worker"],
                    f"{r['efficiency']:.2f}", f"{r['cpu_ms_per_image']:.3f}",
                    f"{r['cpu_per_image_growth']:.2f}",
                    f"{r['daemon_cpu_per_worker']:.2f}",
                    f"{r['voluntary_switches_per_image']:.2f}",
                    f"{r['forced_switches_per_image']:.2f}")),
        ("Trainers sharing one GPU (ResNet-18)", "trainers",
         ["trainers", "loader", "job", "images/s (all)", "per trainer",
          "GPU busy %", "input-bound %", "host CPU %", "peak PSS MB",
          "stokerd CPU ms / image trained", "/ image decoded"],
         lambda r: (r["trainers"], r["loader"], r["sharing"],
                    r["images_per_s"], " ".join(map(str, r["per_trainer"])),
                    r["gpu_busy_percent"], r["input_bound_percent"],
                    r["host_cpu_percent"], r["peak_pss_mb"],
                    r.get("daemon_cpu_ms_per_image"),
                    r.get("daemon_cpu_ms_per_decoded",
                          r.get("daemon_cpu_ms_per_image")))),
        ("Tests on this machine's stack", "tests",
         ["tests", "passed", "failed", "skipped", "failed tests"],
         lambda r: (r["part"], r["tests_passed"], r["tests_failed"],
                    r["tests_skipped"],
                    "<br>".join(r["failed_tests"][:20]) or "-")),
    ]
    for r in by_part.pop("recipe_exact", []) + by_part.pop("suite", []):
        by_part.setdefault("tests", []).append(r)
    for title, part, header, row in sections:
        rows = []
        for r in by_part.get(part, []):
            if "skipped" in r:
                continue
            try:
                rows.append(row(r))
            except (KeyError, TypeError) as e:  # a field missing: say so
                print(f"- {part}: a result without {e}: {json.dumps(r)}")
        if rows:
            print(f"## {title}\n")
            print(table(header, rows))
    e2e = [r for r in by_part.get("e2e", []) if "skipped" not in r]
    for transform in ("classic", "recipe"):
        rate = {r["loader"]: r["images_per_s"] for r in e2e
                if r["transform"] == transform}
        if "stoker" in rate and "torch" in rate and rate["torch"] > 0:
            print(f"- {transform}: stoker / torch DataLoader = "
                  f"{rate['stoker'] / rate['torch']:.2f}x images/s")


if __name__ == "__main__":
    main()
