#!/usr/bin/env python3
"""Fails when README.md or a docs/ page names, in `code`, a file of the
project that does not exist, a `--flag` that no program of the project
takes (stokerd's settings, stokerctl's, bench/ and tests/ programs', the
examples' and scripts' arguments) and that is not another tool's flag
listed below, or, in a table headed "Setting", a setting stokerd does not
have. Run from anywhere: python3 scripts/check_docs.py
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("bench", "client", "cmake", "common", "daemon", "deploy", "docs",
           "include", "proto", "python", "scripts", "tests")
# Named in prose but not files of this tree: other projects' layouts, and
# what the build makes.
NOT_OURS = {"include/leveldb/", "debian/"}
# Other tools' flags the pages quote, by tool (and our scripts' flags that
# are parsed by hand).
OTHER_TOOLS = {
    "cflags": "pkg-config", "libs": "pkg-config", "defined": "cmake",
    "exclude": "ctest/rsync", "fix": "scripts/check_format.sh",
    "gtest_filter": "GoogleTest", "help": "any", "helpfull": "abseil",
    "install": "cmake", "list": "scripts", "no": "apt (--no-install-...)",
    "purge": "apt", "ra": "torchvision's --ra-reps", "shm": "docker",
    "smoke": "bench/gpu/run.sh", "sort": "sort", "wrap": "clang-format",
}

TICKS = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^(%s)/[\w./+-]*$" % "|".join(FOLDERS))
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_]*)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def settings(root=ROOT):
    """stokerd's settings (each also a --flag)."""
    text = read(os.path.join(root, "daemon/settings/settings.cc"))
    return set(re.findall(r'\{"([a-z_0-9]+)", (?:true|false)', text))


def known_flags(root=ROOT):
    """Every flag a program of the project declares."""
    flags = set()
    sources = [p for p in glob.glob(os.path.join(root, "**", "*"),
                                    recursive=True)
               if p.endswith((".cc", ".h", ".py", ".sh"))
               and "/build" not in p and "/node_modules/" not in p]
    for path in sources:
        text = read(path)
        flags.update(re.findall(r"ABSL_FLAG\([^,]+,\s*([a-z0-9_]+)", text))
        flags.update(re.findall(r"add_argument\(\s*\"--([a-z0-9_-]+)\"", text))
        if path.endswith(".sh"):  # a script's own "--name)" cases
            flags.update(re.findall(r"^\s*--([a-z0-9_-]+)[)|=]", text, re.M))
    return flags | settings(root)


def problems(root=ROOT):
    pages = sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    pages.append(os.path.join(root, "README.md"))
    flags, names = known_flags(root), settings(root)
    found = []
    for page in pages:
        name = os.path.relpath(page, root)
        in_settings = False
        for number, line in enumerate(read(page).splitlines(), 1):
            in_settings = line.startswith("|") and (
                in_settings or line.startswith("| Setting"))
            row = re.match(r"^\| `([a-z_0-9]+)` \|", line)
            if in_settings and row and row.group(1) not in names:
                found.append(f"{name}:{number}: no setting {row.group(1)}")
            for code in TICKS.findall(line):
                words = code.split()
                first = re.sub(r":\d+(-\d+)?$", "", words[0].rstrip(",.;)"))
                if (PATH.match(first) and first not in NOT_OURS
                        and not any(c in first for c in "*{}<>")
                        and not os.path.exists(os.path.join(root, first))):
                    found.append(f"{name}:{number}: no file {first}")
                for flag in FLAG.findall(code):
                    if flag not in flags and flag not in OTHER_TOOLS:
                        found.append(f"{name}:{number}: no program takes "
                                     f"--{flag}")
    return found


def main():
    found = problems()
    for problem in found:
        print(problem)
    print(f"{len(found)} name(s) in the docs that the code does not have")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
