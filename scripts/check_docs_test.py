#!/usr/bin/env python3
"""check_docs.py on a made-up tree: each kind of name the code does not
have is found, at its line, and the names it has are not."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_docs  # noqa: E402

FILES = {
    "daemon/settings/settings.cc": '{"cache_size", false,\n',
    "daemon/main.cc": "ABSL_FLAG(bool, check_config, false, \"\");\n",
    "bench/tool.py": 'parser.add_argument("--rounds")\n',
    "bench/shared.py": ('def bench_parser():\n'
                        '    parser.add_argument("--seed")\n'
                        'def other():\n'
                        '    parser.add_argument("--elsewhere")\n'),
    "bench/uses.py": "from shared import (bench_parser,  # noqa\n    x)\n",
    "tests/env.cc": 'getenv("STOKER_SOCKET");\n',
    "README.md": "Run `stokerd --check_config` and `bench/tool.py --rounds=2`.\n",
    "docs/page.md": (
        "See `daemon/main.cc` and `daemon/gone.cc:12`.\n"
        "Pass `--no_such_flag` or `--cache_size=1G`.\n"
        "\n"
        "| Setting | Default |\n"
        "| --- | --- |\n"
        "| `cache_size` | 16G |\n"
        "| `cache_sise` | 16G |\n"
        "Run `bench/uses.py --seed=1` or `bench/uses.py --elsewhere=1`.\n"
        "Set `STOKER_SOCKET` or `STOKER_SOKET`.\n"),
}


def main():
    with tempfile.TemporaryDirectory() as root:
        for path, text in FILES.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)),
                        exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        found = check_docs.problems(root)
    expected = ["docs/page.md:1: no file daemon/gone.cc",
                "docs/page.md:2: no program takes --no_such_flag",
                "docs/page.md:7: no setting cache_sise",
                "docs/page.md:8: uses.py takes no --elsewhere",
                "docs/page.md:9: no name STOKER_SOKET in the code"]
    if found != expected:
        print("found:", found, "expected:", expected)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
