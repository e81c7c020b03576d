#!/usr/bin/env python3
"""Checks two house rules on the size of the C++ and Python sources:

  1. no source file (*.h, *.cc, *.py) is longer than 400 lines;
  2. no function is longer than 60 lines, from the first line of its
     declaration (a `template <...>` line or a decorator included) to its
     closing brace or its last line.

Short files and functions are easier to read, review and test.

C++ functions are found by a heuristic, not a compiler: comments, literals
and preprocessor lines are blanked out, then braces are tracked. A `{` at
namespace, class or extern "C" scope opens a function body when it follows a
parameter list, possibly followed by qualifiers (const, noexcept, override,
...), a trailing return type or a constructor's member-initializer list.
Lambdas and local classes count towards their enclosing function.

Python functions are found with the ast module: the functions of a module
and the methods of its classes (Class.method), a nested function or class
counting towards the function it is in.

Exits 1 if a limit is exceeded, 0 otherwise.
"""

import argparse
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PATHS = ["daemon", "client", "common", os.path.join("python", "stoker")]
EXTENSIONS = (".h", ".cc", ".py")

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try",
           "return", "sizeof", "alignof", "decltype", "static_assert"}
QUALIFIERS = {"const", "volatile", "noexcept", "override", "final", "mutable",
              "throw", "constexpr", "&", "&&"}
LEXER = re.compile(r"""
    (?P<pp> ^[ \t]*\#(?:\\\n|/\*.*?\*/|[^\n])*)   # preprocessor line
  | (?P<comment> //[^\n]* | /\*.*?\*/)
  | (?P<str> \b(?:u8|u|U|L)?R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"
           | (?:\b(?:u8|u|U|L))?"(?:\\.|[^"\\\n])*")
  | (?P<chr> (?:\b(?:u8|u|U|L))?'(?:\\.|[^'\\\n])*')
  | (?P<word> [A-Za-z_]\w* | \d(?:'?[\w.]|[eEpP][+-])*)  # 1'000 is a number
""", re.S | re.M | re.X)
PLACEHOLDER = {"pp": " ", "comment": " ", "str": '""', "chr": "0"}
TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\d[\w.']*|::|->|\"\"|\S")


def strip_code(text):
    """Blanks comments, literals and preprocessor lines; keeps newlines.

    A string literal becomes "" and a character literal becomes 0.
    """
    def blank(m):
        if m.lastgroup == "word":
            return m.group()
        return PLACEHOLDER[m.lastgroup] + "\n" * m.group().count("\n")
    return LEXER.sub(blank, text)


def tokenize(text):
    """Returns (token, line) pairs of stripped code; lines count from 1."""
    tokens, line, pos = [], 1, 0
    for m in TOKEN_RE.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        tokens.append((m.group(), line))
    return tokens


def skip_group(toks, i, open_, close):
    """Given toks[i] == open_, returns the index just past its match."""
    depth = 0
    for j in range(i, len(toks)):
        depth += {open_: 1, close: -1}.get(toks[j][0], 0)
        if depth == 0:
            return j + 1
    return len(toks)


def valid_tail(toks):
    """True if what follows a parameter list may precede a function body."""
    i = 0
    while i < len(toks):
        t = toks[i][0]
        if t in ("->", ":", "requires", "try"):  # return type, initializers
            return True
        if t == "[":  # [[attribute]]
            i = skip_group(toks, i, "[", "]")
        elif t in QUALIFIERS or re.fullmatch(r"[A-Z][A-Z0-9_]+", t):
            i += 1  # const, noexcept(...), ABSL_LOCKS_EXCLUDED(mu_) ...
            if i < len(toks) and toks[i][0] == "(":
                i = skip_group(toks, i, "(", ")")
        else:
            return False
    return True


def qualified_name(words, i):
    """The name ending at words[i], with its Class:: qualifiers."""
    name = words[i]
    if i > 0 and words[i - 1] == "~":
        name, i = "~" + name, i - 1
    while i >= 2 and words[i - 1] == "::":
        j, depth = i - 2, 0
        while j > 0 and (depth or words[j] == ">"):  # Foo<T>::bar
            depth += {">": 1, "<": -1}.get(words[j], 0)
            j -= 1
        if not re.match(r"[A-Za-z_]", words[j]):
            break
        name, i = words[j] + "::" + name, j
    return name


def in_init_list(head):
    """True if `head` ends inside a constructor's member-initializer list."""
    depth, closed = 0, False
    for t, _ in head:
        depth += {"(": 1, ")": -1}.get(t, 0)
        closed = closed or (t == ")" and depth == 0)
        if t == ":" and depth == 0 and closed:
            return True
    return False


def classify(head):
    """Tells what the `{` that follows the declaration `head` opens.

    Returns "scope" (namespace, class, extern "C"), "other" (initializer,
    enum, control statement) or, for a function body, (name, first_line).
    """
    words = [t for t, _ in head]
    if "namespace" in words or words == ["extern", '""']:
        return "scope"
    i = 0
    while i < len(words) and words[i] == "template":  # template <...>
        i = skip_group(head, i + 1, "<", ">")
    if i >= len(words) or words[i] in CONTROL:
        return "other"
    depth, start, open_ = 0, 0, 0
    for j in range(i, len(words)):
        t = words[j]
        if depth == 0 and (t == "enum" or t == "=" and "operator" not in
                           words[max(0, j - 3):j]):  # not operator==, <= ...
            return "other"
        if depth == 0 and t in ("class", "struct", "union"):
            return "scope"
        if depth == 0 and t == "(":
            # operator<, operator(), operator new[], operator const char* ...
            k = next((k for k in range(j - 1, max(i, j - 6) - 1, -1)
                      if words[k] == "operator"), j - 1)
            if words[k] == "operator" and k < j - 1:
                name = qualified_name(words, k) + "".join(
                    " " + w if w[0].isalpha() else w for w in words[k + 1:j])
            elif re.match(r"[A-Za-z_]", words[j - 1]):
                name = qualified_name(words, j - 1)
            elif words[j - 1] == ")" and open_ > 0:  # WRAP(x)(...)
                name = "".join(words[open_ - 1:j])
            else:
                name = ""
            end = skip_group(head, j, "(", ")")
            if name and name not in CONTROL and valid_tail(head[end:]):
                return name, head[start][1]
            if name.isupper() and start == j - 1:
                start = end  # a macro call that ends without `;`
            open_ = j
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(t, 0)
    return "other"


def find_functions(text):
    """Returns (name, first_line, last_line) for each function in `text`."""
    toks = tokenize(strip_code(text))
    functions = []
    head, paren = [], 0  # the declaration read so far, outside any body
    body_depth, func = 0, None  # braces open in a body or an initializer
    i = 0
    while i < len(toks):
        t, line = toks[i]
        i += 1
        if body_depth:
            body_depth += {"{": 1, "}": -1}.get(t, 0)
            if body_depth == 0 and func:
                functions.append((*func, line))
            continue
        if t == "{" and (paren > 0 or in_init_list(head)
                         and re.match(r"[\w>]", head[-1][0])):
            # A lambda inside parentheses, or a member_{initializer}.
            end = skip_group(toks, i - 1, "{", "}")
            head += [("{", line), ("}", toks[end - 1][1])]
            i = end
            continue
        if t == "{":
            kind = classify(head)
            if kind != "scope":
                body_depth = 1
                func = kind if isinstance(kind, tuple) else None
            head, paren = [], 0
        elif t == "}" or t == ";" and paren == 0 or t == ":" and [
                w for w, _ in head] in (["public"], ["protected"], ["private"]):
            head, paren = [], 0
        else:
            paren += {"(": 1, ")": -1}.get(t, 0)
            head.append((t, line))
    return functions


def find_python_functions(text):
    """Returns (name, first_line, last_line) for each function in the
    Python source `text`: module-level functions and methods (Class.name,
    Outer.Inner.name for a nested class). Raises SyntaxError."""
    functions = []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in
                                             node.decorator_list])
                functions.append((prefix + node.name, first, node.end_lineno))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try)):  # if TYPE_CHECKING: ...
                for block in (node.body, node.orelse,
                              getattr(node, "finalbody", []),
                              *[h.body for h in getattr(node, "handlers", [])]):
                    visit(block, prefix)

    visit(ast.parse(text).body, "")
    return sorted(functions, key=lambda f: f[1])


def source_files(paths):
    """The *.h, *.cc and *.py files under `paths`, skipping build and tests
    folders."""
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in ("build", "tests", "__pycache__")
                                 and not d.startswith("."))
            for f in sorted(filenames):
                if f.endswith(EXTENSIONS):
                    yield os.path.join(dirpath, f)


def display(path):
    """`path` relative to the repository root when it lies inside it."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Checks the length of C++ and Python source files and "
        "functions.")
    parser.add_argument("--max-file-lines", type=int, default=400, metavar="N")
    parser.add_argument("--max-function-lines", type=int, default=60,
                        metavar="N")
    parser.add_argument("--list", type=int, metavar="N", default=0,
                        help="also print the N longest functions")
    parser.add_argument("paths", nargs="*", help="files or folders "
                        "(default: daemon client common python/stoker)")
    args = parser.parse_args(argv)
    paths = args.paths or [os.path.join(ROOT, p) for p in DEFAULT_PATHS]
    paths = [p if os.path.exists(p) else os.path.join(ROOT, p) for p in paths]
    for path in paths:
        if not os.path.exists(path):
            parser.error(f"no such file or folder: {path}")

    violations, all_functions, nfiles = 0, [], 0
    for path in source_files(paths):
        nfiles += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        name = display(path)
        nlines = len(text.splitlines())
        if nlines > args.max_file_lines:
            print(f"{name}: {nlines} lines (limit {args.max_file_lines})")
            violations += 1
        try:
            found = (find_python_functions(text) if path.endswith(".py")
                     else find_functions(text))
        except SyntaxError as error:
            print(f"{name}:{error.lineno}: cannot parse: {error.msg}")
            violations += 1
            continue
        for func, first, last in found:
            length = last - first + 1
            all_functions.append((length, name, first, func))
            if length > args.max_function_lines:
                print(f"{name}:{first}: function {func} is {length} lines "
                      f"(limit {args.max_function_lines})")
                violations += 1
    print(f"{violations} violation(s) in {nfiles} files "
          f"({len(all_functions)} functions)")
    if args.list:
        print(f"\n{args.list} longest functions:")
        all_functions.sort(key=lambda f: (-f[0], f[1], f[2]))
        for length, name, first, func in all_functions[:args.list]:
            print(f"{length:5d}  {name}:{first}: {func}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
