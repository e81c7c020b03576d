"""The reference matrix's table, from scripts/reference-stacks.sh's junit
files: each suite's outcome on each stack, with the stacks' versions.

  stack_matrix.py OUT_DIR STACK...   the table (markdown), to stdout
  stack_matrix.py --versions         this Python's versions, as JSON
  stack_matrix.py --result PART XML  a junit file's counts and failed
                                     tests as a RESULT line (bench/gpu)
"""
import json
import os
import platform
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def versions():
    import numpy
    import PIL
    import torch
    import torchvision
    return {"python": platform.python_version(), "torch": torch.__version__,
            "torchvision": torchvision.__version__, "pillow": PIL.__version__,
            "numpy": numpy.__version__}


def outcomes(path):
    """{suite file: {passed, failed, skipped}} and the failed tests' names."""
    counts = defaultdict(lambda: defaultdict(int))
    failed = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        suite = f"{module}.py" if module else "(collection)"
        if case.find("failure") is not None or case.find("error") is not None:
            counts[suite]["failed"] += 1
            failed.append(f"{suite}::{case.get('name')}")
        elif case.find("skipped") is not None:
            counts[suite]["skipped"] += 1
        else:
            counts[suite]["passed"] += 1
    return counts, failed


def cell(c):
    if not c:
        return "not run"
    text = f"{c['passed']} passed"
    if c["failed"]:
        text += f", **{c['failed']} failed**"
    if c["skipped"]:
        text += f", {c['skipped']} skipped"
    return text


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1:] == ["--versions"]:
        print(json.dumps(versions()))
        return
    if sys.argv[1] == "--result":
        counts, failed = outcomes(sys.argv[3])
        total = {f"tests_{k}": sum(c[k] for c in counts.values())
                 for k in ("passed", "failed", "skipped")}
        print("RESULT " + json.dumps({"part": sys.argv[2], **total,
                                      "failed_tests": failed}))
        return
    out, stacks = sys.argv[1], sys.argv[2:]
    results, names, failures = {}, {}, []
    for stack in stacks:
        xml = os.path.join(out, f"{stack}.xml")
        results[stack] = outcomes(xml)[0] if os.path.exists(xml) else {}
        if os.path.exists(xml):
            failures += [f"{stack}: {name}" for name in outcomes(xml)[1]]
        try:
            with open(os.path.join(out, f"{stack}.json")) as f:
                v = json.load(f)
            names[stack] = (f"{stack}: Python {v['python']}, torch "
                            f"{v['torch']}, torchvision {v['torchvision']}, "
                            f"Pillow {v['pillow']}, numpy {v['numpy']}")
        except (OSError, ValueError, KeyError):
            names[stack] = f"{stack}: versions unknown"
    suites = sorted({s for r in results.values() for s in r})
    print("| suite | " + " | ".join(stacks) + " |")
    print("|---" * (len(stacks) + 1) + "|")
    for suite in suites:
        print(f"| `{suite}` | " +
              " | ".join(cell(results[s].get(suite)) for s in stacks) + " |")
    print()
    for stack in stacks:
        print(f"* {names[stack]}")
    for failure in failures:
        print(f"* failed on {failure}")


if __name__ == "__main__":
    main()
