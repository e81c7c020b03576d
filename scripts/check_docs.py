#!/usr/bin/env python3
"""Fails when README.md or a page of docs/ names something the code does not
have. Run from anywhere: python3 scripts/check_docs.py

The rules, and what keeps other projects' names out of them:
* Files. Anywhere in a page, a word that starts with a folder at the root
  of the tree (daemon/, tests/, ...) must exist (`:12` after it is a line;
  a glob must match something; braces expand; `<...>` and `$` are
  placeholders). build/FOLDER/TARGET must be a target FOLDER's
  CMakeLists.txt adds, build/FOLDER a folder with a CMakeLists.txt. A file
  name alone in `code` with a source suffix (.cc, .py, .md...) must exist
  somewhere in the tree. A link [text](page.md#anchor) must name a file
  that exists and a heading of it. NOT_OURS: other projects' files, and
  what users and runs make.
* Flags. A --flag in `code`, a code block or prose is read on its command
  (split at |, &&, ;, parentheses; sudo, env, bash, python3 [-m] and VAR=value
  skipped). After a program of the project it must be that program's:
  stokerd's settings and the ABSL_FLAGs of daemon/main.cc; another C++
  program's ABSL_FLAGs (its sources from add_executable); a script's
  add_argument() names or --x literals compared with argv, or a shell
  script's case labels and [[ $1 == --x ]] tests; C++ programs also take
  the help flags common/cli.cc names. After OTHER_PROGRAMS (cmake, pip,
  torchrun...) it is theirs. Anywhere else (`--json` alone, `top --json`)
  it must be some program's of the project or in OTHER_FLAGS. stokerctl's
  command must be one its main.cc dispatches.
* Settings (daemon/settings/settings.cc's table): the first column of a
  table whose header begins "Setting"; a config line `name: "value"` (a
  quoted value or a number) in `code` or a code block without a language;
  `name` before "setting(s)" or after "setting".
* Names: STOKER_* (environment variables, CMake options) must occur in the
  code; `Group.Name` for a ctest group or GoogleTest suite, and
  `name_tests`, must be tests of the tree (`*` matches anything);
  "`daemon/` is N libraries, M in folders" must count daemon/'s libraries.
Before the pages, a canary page of made-up names (CANARY) must give its
problems, so that a change to the code read here cannot blind the check.
"""
import fnmatch
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {".git", "node_modules", ".gpu-bundle", "__pycache__", ".cache", ".stack-out"}
# Named in the pages but not files of this tree, with why.
NOT_OURS = {
    "include/leveldb/": "leveldb's layout", "sizes.json": "open_clip's, beside shards",
    "train.py": "a user's", "summary.md": "written by bench/gpu/run.sh",
    "jdhuff.c": "libjpeg-turbo's", "Resample.c": "Pillow's", "Convert.c": "Pillow's",
}
# Other tools' commands, whose flags are theirs.
OTHER_PROGRAMS = {"apt", "apt-get", "cmake", "cpack", "ctest", "curl", "docker", "dpkg",
                  "git", "journalctl", "nm", "ninja", "npm", "pip", "pkg-config",
                  "pytest", "rsync", "systemctl", "systemd-analyze", "tar", "torchrun"}
# Other tools' flags the pages name alone, by tool.
OTHER_FLAGS = {
    "exclude-libs": "ld", "gtest_filter": "GoogleTest", "ra-reps": "torchvision",
    "shm-size": "docker", "sort": "GNU tar", "wrap": "ld",
}
SKIP_WORDS = {"sudo", "env", "exec", "time", "nohup", "bash", "sh", "python",
              "python3", "/usr/bin/python3", "-m", "$", "!"}
CODE_EXTS = (".cc", ".h", ".c", ".py", ".sh", ".proto", ".cmake", ".md",
             ".conf", ".service", ".socket", ".toml", ".supp")
SETTINGS_PROGRAM = "stokerd"

SPAN = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")
FENCE = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^\1```", re.M | re.S)
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_-]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CONFIG_LINE = re.compile(r"^([a-z][a-z0-9_]*): *(\"[^\"]*\"|\d[\w.]*)$")
SETTING_WORD = re.compile(r"((?:`[a-z0-9_]+`(?:, | and | or ))*`[a-z0-9_]+`) settings?\b"
                          r"|\bsettings? `([a-z0-9_]+)`")
STOKER_NAME = re.compile(r"(?<![A-Za-z0-9_])(?:-D)?(STOKER_[A-Z0-9_]*[A-Z0-9*_])")
LIBRARY = re.compile(r"(?:stoker_library|add_library)\(\s*(\w+)\s(?![^)]*\bALIAS\b)")
COUNT = re.compile(r"`(?:daemon/|stokerd)` is (\w+) libraries(?:, (\w+) in folders)?")
NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
           "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
TEST_NAME = re.compile(r"^([A-Z]\w*)\.([\w*]+)$|^([a-z]\w*_tests)$")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def tree(root):
    """Every file of the tree (build trees at the root left out), relative."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP
                   and not (folder == root and d.startswith("build"))]
        for name in files:
            yield os.path.relpath(os.path.join(folder, name), root)


class Code:
    """What the code defines: files, programs and their flags, settings,
    STOKER_* names and tests."""

    def __init__(self, root):
        self.root = root
        self.files = sorted(tree(root))
        self.names = {os.path.basename(p) for p in self.files}
        self.folders = {p.split("/")[0] for p in self.files if "/" in p}
        self.texts = {p: read(os.path.join(root, p)) for p in self.files
                      if not p.startswith(("docs/", "scripts/check_docs")) and p != "README.md"
                      and (p.endswith(CODE_EXTS + (".txt", ".in")) or "." not in p)}
        self.words = set()
        for text in self.texts.values():
            self.words.update(re.findall(r"STOKER_\w+|\w+_tests\b", text))
        self.settings = self._settings()
        self.targets, self.programs = self._programs()
        self.all_flags = set().union(*self.programs.values())
        self.commands = set(re.findall(r'command == "(\w+)"', self._text(
            "client/stokerctl/main.cc")))
        self.tests = self._tests()
        libraries = [(os.path.dirname(p), name) for p, t in self.texts.items()
                     if p.startswith("daemon/") and p.endswith("CMakeLists.txt")
                     for name in re.findall(LIBRARY, t)]
        self.libraries = (len(libraries), sum(f != "daemon" for f, _ in libraries))

    def _text(self, path):
        return self.texts.get(path, "")

    def _settings(self):
        text = self._text("daemon/settings/settings.cc")
        return set(re.findall(r'\{\s*"([a-z_0-9]+)",\s*(?:true|false)\b', text))

    def _programs(self):
        """(CMake targets by folder, flags by program name)."""
        cli = set(re.findall(r'"[^"\n]*?--([a-z]+)', self._text("common/cli.cc")))
        targets, programs = {}, {}
        for path, text in self.texts.items():
            folder = os.path.dirname(path)
            if os.path.basename(path) == "CMakeLists.txt":
                for kind, name, args in re.findall(
                        r"add_(executable|library)\(\s*(\w+)\s([^)]*)\)", text):
                    targets.setdefault(folder, set()).add(name)
                    sources = [os.path.normpath(os.path.join(folder, s))
                               for s in args.split() if s.endswith((".cc", ".c"))]
                    flags = set().union(set(), *(self._absl(s) for s in sources))
                    if kind == "executable":  # absl's parser: the help flags too
                        programs.setdefault(name, set()).update(flags | (cli if flags else set()))
            elif path.endswith(".py"):
                flags = self._py_flags(text) | self._imported_flags(path, text)
                flags |= {f for line in text.splitlines() if "argv" in line
                          for f in re.findall(r"[\"']--([\w-]+)[\"']", line)}
                programs.setdefault(os.path.basename(path), set()).update(flags)
            elif path.endswith(".sh"):
                programs.setdefault(os.path.basename(path), set()).update(re.findall(
                    r"(?:^\s*|\|\s*|==\s*\"?)--([\w-]+)(?=(?:=[^\s|)]*)?\s*(?:\||\)[ \t]+\S)"
                    r"|\"?\s*\]\])", text, re.M))
        programs[SETTINGS_PROGRAM] = (programs.get(SETTINGS_PROGRAM, set())
                                      | self.settings | cli | self._absl("daemon/main.cc"))
        return targets, programs

    @staticmethod
    def _py_flags(text):
        return {f for args in re.findall(r"add_argument\(([^)]*)", text)
                for f in re.findall(r"[\"']--([\w-]+)[\"']", args)}

    def _imported_flags(self, path, text):
        """Flags of the parser functions a script imports from a sibling."""
        flags = set()
        for module, group, line in re.findall(
                r"^from (\w+) import (?:\(([^)]*)\)|(.*))", text, re.M):
            sibling = self.texts.get(os.path.join(os.path.dirname(path), module + ".py"), "")
            for name in re.findall(r"\w+", re.sub(r"#.*", "", group or line)):
                body = re.search(rf"^def {name}\(.*?(?=^\S|\Z)", sibling, re.M | re.S)
                flags |= self._py_flags(body.group(0)) if body else set()
        return flags

    def _absl(self, path):
        return set(re.findall(r"ABSL_FLAG\([^,]+,\s*(\w+)", self._text(path)))

    def _tests(self):
        names = set()
        for path, text in self.texts.items():
            if os.path.basename(path) == "CMakeLists.txt":
                names.update(re.findall(r"add_test\(NAME (\w+\.\w+)", text))
                names.update(re.findall(r"(?:stoker_test|add_executable)\((\w+_tests)\b",
                                        text))
            if path.startswith("tests/python/test_") and path.endswith(".py"):
                names.add("Python." + path[len("tests/python/test_"):-3])
            if path.endswith(".cc"):
                names.update(".".join(t) for t in re.findall(
                    r"^\s*(?:TYPED_)?TEST(?:_F|_P)?\(\s*(\w+),\s*(\w+)\)", text, re.M))
        return names

    def has_path(self, path):
        """A path of the tree, a glob matching some, or a build output."""
        path = re.sub(r":\d+(-\d+)?$", "", path)
        if "{" in path:
            head, alts, tail = re.match(r"([^{]*)\{([^}]*)\}(.*)$", path).groups()
            return all(self.has_path(head + a + tail) for a in alts.split(","))
        if path in NOT_OURS or path.rstrip("/") + "/" in NOT_OURS:
            return True
        if path.startswith("build/"):
            folder, _, target = path[len("build/"):].rstrip("/").rpartition("/")
            return (os.path.isfile(os.path.join(self.root, folder, target,
                                                "CMakeLists.txt"))
                    or target in self.targets.get(folder, ()))
        if any(c in path for c in "*?["):
            return bool(glob.glob(os.path.join(self.root, path)))
        return os.path.exists(os.path.join(self.root, path))


def blocks(text):
    """(prose with the code blocks blanked, [(line, language, block)])."""
    found = []

    def blank(m):
        found.append((text[:m.start()].count("\n") + 2, m.group(2), m.group(3)))
        return "\n" * m.group().count("\n")
    return FENCE.sub(blank, text), found


def spans(prose):
    """(line, code) for each `code` of the prose, joined onto one line."""
    for m in SPAN.finditer(prose):
        yield prose[:m.start()].count("\n") + 1, " ".join(m.group(1).split())


def commands(code):
    """The commands of a line of code: lists of words."""
    code = re.sub(r"\s#.*$", "", code)
    for part in re.split(r"\|\||&&|[|;()]|\$\(", code):
        words = [w.strip("\"'") for w in part.split()]
        while words and (words[0] in SKIP_WORDS or re.match(r"^[A-Z_]+=", words[0])):
            words.pop(0)
        if words:
            yield words


class Page:
    """One page's problems, found against `code`."""

    def __init__(self, code, path, text=None):
        self.code, self.path, self.found = code, path, []
        self.name = os.path.relpath(path, code.root)
        self.text = read(path) if text is None else text

    def problem(self, line, what):
        self.found.append(f"{self.name}:{line}: {what}")

    def check(self):
        text = self.text
        prose, fenced = blocks(text)
        for number, line in enumerate(text.splitlines(), 1):
            self.paths(number, line)
            self.names(number, line)
        for number, line in enumerate(prose.splitlines(), 1):
            self.links(number, line)
            for m in COUNT.finditer(line):
                said = [NUMBERS.index(w) if w in NUMBERS else int(w) if w.isdigit() else -1
                        for w in m.groups() if w]
                if said != list(self.code.libraries[:len(said)]):
                    self.problem(number, "daemon/ is %d libraries, %d in folders of "
                                 "their own" % self.code.libraries)
            for m in SETTING_WORD.finditer(line):
                for name in re.findall(r"`([a-z0-9_]+)`", m.group()):
                    self.setting(number, name)
        self.tables(prose)
        for number, code in spans(prose):
            self.code_line(number, code)
            self.test_name(number, code)
            if re.fullmatch(r"\w[\w.-]*", code) and code.endswith(CODE_EXTS):
                if code not in self.code.names and code not in NOT_OURS:
                    self.problem(number, f"no file {code}")
        uncoded = SPAN.sub(lambda m: "\n" * m.group().count("\n"), prose)
        for number, line in enumerate(uncoded.splitlines(), 1):
            self.flags(number, [[""] + line.split()])
        for start, language, block in fenced:
            command = ""
            for number, line in enumerate(block.splitlines(), start):
                command += line.strip()
                if command.endswith("\\"):  # continued on the next line
                    command = command[:-1] + " "
                    continue
                self.code_line(number, command, language)
                command = ""
        return sorted(self.found, key=lambda p: int(p.split(":")[1]))

    def paths(self, number, line):
        folders = "|".join(map(re.escape, sorted(self.code.folders | {"build"})))
        for m in re.finditer(r"(?<![\w./~$-])((?:%s)/[\w./+{},*?-]*)" % folders, line):
            path = m.group(1).rstrip(".,;:)")
            if "<" not in line[m.end():m.end() + 1] and not self.code.has_path(path):
                self.problem(number, f"no file {path}")

    def names(self, number, line):
        for name in STOKER_NAME.findall(line):
            stem = name.rstrip("*_")
            if not (name in self.code.words or name.endswith(("*", "_")) and any(
                    w.startswith(stem) for w in self.code.words)):
                self.problem(number, f"no name {name} in the code")

    def links(self, number, line):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            page, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(self.path), page)
                                    if page else self.path)
            if not os.path.exists(path):
                self.problem(number, f"no file {page} (link)")
            elif anchor and path.endswith(".md") and anchor not in anchors(read(path)):
                self.problem(number, f"no heading #{anchor} in {os.path.basename(path)}")

    def tables(self, prose):
        in_settings = False
        for number, line in enumerate(prose.splitlines(), 1):
            in_settings = line.startswith("|") and (
                in_settings or re.match(r"^\| *[Ss]etting\b", line) is not None)
            row = re.match(r"^\| *`([a-z_0-9]+)` *\|", line)
            if in_settings and row:
                self.setting(number, row.group(1))

    def setting(self, number, name):
        if name not in self.code.settings:
            self.problem(number, f"no setting {name}")

    def test_name(self, number, code):
        m = TEST_NAME.match(code)
        groups = {t.split(".")[0] for t in self.code.tests}
        if m and (m.group(3) not in self.code.words if m.group(3) else m.group(1) in groups) \
                and not any(
                fnmatch.fnmatchcase(t, code) for t in self.code.tests):
            self.problem(number, f"no test {code}")

    def code_line(self, number, code, language=""):
        config = CONFIG_LINE.match(code)
        if config and not language:
            self.setting(number, config.group(1))
        self.flags(number, commands(code))

    def flags(self, number, lines):
        for words in lines:
            program = os.path.basename(words[0]) if words else ""
            if program in OTHER_PROGRAMS:
                continue
            own = self.code.programs.get(program)
            command = next((w for w in words[1:] if not w.startswith("-")), None)
            if program == "stokerctl" and command and command not in self.code.commands:
                self.problem(number, f"stokerctl has no command {command}")
            for flag in FLAG.findall(" ".join(words)):
                if own is not None and flag not in own:
                    self.problem(number, f"{program} takes no --{flag}")
                elif own is None and flag not in self.code.all_flags | set(OTHER_FLAGS):
                    self.problem(number, f"no program takes --{flag}")


def anchors(text):
    """GitHub's anchors for a page's headings."""
    found = set()
    for heading in re.findall(r"^#+ +(.+?) *#*$", blocks(text)[0], re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def problems(root=ROOT, code=None):
    code = code or Code(root)
    found = []
    if not code.settings:
        found.append("daemon/settings/settings.cc: no table of settings found")
    pages = sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    pages.append(os.path.join(root, "README.md"))
    for page in pages:
        if os.path.exists(page):
            found.extend(Page(code, page).check())
    return found


# A page of names the code does not have, checked against the real code on
# every run: each line must give CANARY_FOUND[line] problems, so that a
# change to the code this script reads cannot leave it checking nothing.
CANARY = """\
`daemon/no_such_file.cc`, `no_such_file.py` and [a page](no_such_page.md)
`stokerd --check_config --no_such_setting=1`; `stokerctl jobs --json --no_such_flag`
`stokerctl no_such_command`, a bare `--no_such_flag_anywhere`, the `no_such_name` setting
`no_such_name: "1"`, `STOKER_NO_SUCH_NAME`, `Style.NoSuchTest`; `stokerd` is 99 libraries
"""
CANARY_FOUND = {1: 3, 2: 2, 3: 3, 4: 4}


def blind(code):
    """What the canary page should give and did not, or None."""
    found = Page(code, os.path.join(code.root, "docs", "canary.md"), CANARY).check()
    lines = [int(p.split(":")[1]) for p in found]
    if all(lines.count(n) == count for n, count in CANARY_FOUND.items()):
        return None
    return found


def main():
    code = Code(ROOT)
    canary = blind(code)
    if canary is not None:
        print("check_docs.py: these names on its canary page, one line each, are not all found "
              "(%s expected by line): %s" % (CANARY_FOUND, canary))
        return 1
    found = problems(ROOT, code)
    for problem in found:
        print(problem)
    print(f"{len(found)} name(s) in the docs that the code does not have")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
