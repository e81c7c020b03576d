#!/usr/bin/env python3
"""Tests for check_sizes.py: python3 scripts/check_sizes_test.py"""

import contextlib
import io
import os
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_sizes  # noqa: E402


def functions(code):
    """(name, first_line, length) of each function found in `code`."""
    return [(name, first, last - first + 1) for name, first, last
            in check_sizes.find_functions(textwrap.dedent(code).lstrip("\n"))]


class FindFunctionsTest(unittest.TestCase):

    def test_plain_function(self):
        self.assertEqual(functions("""
            int Add(int a, int b) {
              return a + b;
            }
            """), [("Add", 1, 3)])

    def test_signature_over_several_lines(self):
        self.assertEqual(functions("""
            absl::StatusOr<std::string> Read(
                const std::string& path,
                int flags) {
              return path;
            }
            """), [("Read", 1, 5)])

    def test_member_function_with_initializer_list(self):
        self.assertEqual(functions("""
            Job::Job(std::string id, int n)
                : id_(std::move(id)),
                  n_{n},
                  base_<int>{1, 2},
                  plan_(Plan{n, 2}) {
              Start();
            }

            Job::~Job() { Stop(); }
            """), [("Job::Job", 1, 7), ("Job::~Job", 9, 1)])

    def test_lambda_is_part_of_enclosing_function(self):
        self.assertEqual(functions("""
            void Run(Pool& pool) {
              auto task = [&](int x) {
                if (x > 0) {
                  return;
                }
              };
              pool.Submit([] { Work(); });
            }
            int After() { return 1; }
            """), [("Run", 1, 8), ("After", 9, 1)])

    def test_class_with_inline_methods(self):
        self.assertEqual(functions("""
            class Ring final : public Base<Ring> {
             public:
              explicit Ring(int n) : n_(n) {}
              int size() const noexcept { return n_; }
              Ring(const Ring&) = delete;
              auto get() -> std::vector<int> {
                return {};
              }
              [[nodiscard]] bool ok() const override { return true; }

             private:
              int n_ = 0;
              int m_{0};
              std::vector<int> v_ = {1, 2};
            };
            """), [("Ring", 3, 1), ("size", 4, 1), ("get", 6, 3),
                   ("ok", 9, 1)])

    def test_namespace_struct_and_enum(self):
        self.assertEqual(functions("""
            namespace stoker {
            namespace {
            struct S {
              int a;
              int Get() const { return a; }
            };
            enum class Kind : int { kA, kB };
            }  // namespace
            void S2() {}
            }  // namespace stoker
            """), [("Get", 5, 1), ("S2", 9, 1)])

    def test_extern_c(self):
        self.assertEqual(functions("""
            extern "C" {
            int stoker_open(const char* path) {
              return 0;
            }
            }  // extern "C"
            extern "C" void stoker_close(void) {}
            """), [("stoker_open", 2, 3), ("stoker_close", 6, 1)])

    def test_if_inside_function(self):
        self.assertEqual(functions("""
            int Sign(int x) {
              if (x < 0) {
                return -1;
              } else if (x > 0) {
                return 1;
              }
              for (int i = 0; i < 3; ++i) { while (false) {} }
              switch (x) { case 0: { return 0; } }
              try { Throw(); } catch (const std::exception& e) {}
              return 0;
            }
            """), [("Sign", 1, 11)])

    def test_string_with_braces(self):
        self.assertEqual(functions("""
            std::string Open() {
              return "{{ \\"}\\" {" + std::string("(");
            }
            std::string Close() { return "}}"; }
            """), [("Open", 1, 3), ("Close", 4, 1)])

    def test_raw_string_with_braces(self):
        self.assertEqual(functions("""
            constexpr char kUsage[] = R"(usage: {
              "}" )
            )";
            const char* Json() {
              return R"json({"a": {"b": ")"}})json";
            }
            """), [("Json", 4, 3)])

    def test_char_literals_and_digit_separators(self):
        self.assertEqual(functions("""
            char Brace() { return '{'; }
            char Quote() { return '\\''; }
            long Big() {
              return 1'000'000 + 0x474e'4952ull + int('}');
            }
            """), [("Brace", 1, 1), ("Quote", 2, 1), ("Big", 3, 3)])

    def test_comments_with_braces(self):
        self.assertEqual(functions("""
            // void Fake() {
            /* int Other() {
               } */
            int Real() {  // }
              return 1;  /* { */
            }
            """), [("Real", 4, 3)])

    def test_initializers_at_namespace_scope(self):
        self.assertEqual(functions("""
            const int kTable[] = {
              1, 2, 3,
            };
            const std::map<std::string, int> kMap = {{"a", 1}, {"b", 2}};
            Options g_options{Make(1), 2};
            auto kFn = [](int x) { return x; };
            int Use() { return kTable[0]; }
            """), [("Use", 7, 1)])

    def test_templates(self):
        self.assertEqual(functions("""
            template <typename T, typename = std::enable_if_t<F(T{})>>
            T Max(T a, T b) {
              return a > b ? a : b;
            }
            template <class T>
            void Box<T>::Put(T v) {
              v_ = v;
            }
            template <>
            struct Box<int> {
              void Put(int v) { v_ = v; }
            };
            """), [("Max", 1, 4), ("Box::Put", 5, 4), ("Put", 11, 1)])

    def test_operator_overloads(self):
        self.assertEqual(functions("""
            bool operator<(const Key& a, const Key& b) {
              return a.id < b.id;
            }
            struct Key {
              bool operator==(const Key& o) const { return id == o.id; }
              int operator()(int x) const { return x; }
              Key& operator=(const Key& o) { id = o.id; return *this; }
              explicit operator bool() const { return id != 0; }
              bool operator<(const Key& o) const {
                return id < o.id;
              }
              int id;
            };
            """), [("operator<", 1, 3), ("operator==", 5, 1),
                   ("operator()", 6, 1), ("operator=", 7, 1),
                   ("operator bool", 8, 1), ("operator<", 9, 3)])

    def test_annotations_and_macro_names(self):
        self.assertEqual(functions("""
            PathPolicy::PathPolicy(PathPolicy&& o) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              roots_ = std::move(o.roots_);
            }
            void Set(int x) ABSL_LOCKS_EXCLUDED(mu_) { x_ = x; }
            void WRAP(Lock)(Mutex* mu) {
              REAL(Lock)(mu);
            }
            """), [("PathPolicy::PathPolicy", 1, 3), ("Set", 4, 1),
                   ("WRAP(Lock)", 5, 3)])

    def test_preprocessor_and_macros(self):
        self.assertEqual(functions("""
            #define OPEN {
            #define BODY(x) \\
              void x() { }
            STOKER_DEFINE_THING(a)
            int Counted() {
            #if defined(X)
              return 1;
            #endif
              return 0;
            }
            """), [("Counted", 5, 6)])


def python_functions(code):
    """(name, first_line, length) of each function found in Python `code`."""
    return [(name, first, last - first + 1) for name, first, last
            in check_sizes.find_python_functions(
                textwrap.dedent(code).lstrip("\n"))]


class FindPythonFunctionsTest(unittest.TestCase):

    def test_functions_methods_and_nested_definitions(self):
        self.assertEqual(python_functions("""
            import functools


            def plain(a, b):
                return a + b


            class Loader:
                \"\"\"A class.\"\"\"

                @property
                def size(self):
                    return 1

                async def fetch(self):
                    def helper():
                        return 2
                    return helper()

                class Inner:
                    def deep(self):
                        pass


            @functools.lru_cache(
                maxsize=None)
            def cached():
                text = \"\"\"def fake():
                pass\"\"\"
                return text

            if True:
                def conditional():
                    pass
            """), [("plain", 4, 2), ("Loader.size", 11, 3),
                   ("Loader.fetch", 15, 4), ("Loader.Inner.deep", 21, 2),
                   ("cached", 25, 6), ("conditional", 33, 2)])

    def test_syntax_error_is_raised(self):
        with self.assertRaises(SyntaxError):
            python_functions("def broken(:\n    pass\n")


class MainTest(unittest.TestCase):

    def run_main(self, code, *flags, file="a.cc"):
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "build"))
            for sub in (file, os.path.join("build", "skipped.cc")):
                with open(os.path.join(tmp, sub), "w") as f:
                    f.write(textwrap.dedent(code).lstrip("\n"))
            out = io.StringIO()
            with contextlib.redirect_stdout(out), \
                    mock.patch.object(check_sizes, "ROOT", tmp):
                rc = check_sizes.main([*flags, tmp])
            return rc, out.getvalue()

    def test_within_limits(self):
        rc, out = self.run_main("int F() {\n  return 1;\n}\n")
        self.assertEqual(rc, 0)
        self.assertIn("0 violation(s) in 1 files", out)

    def test_violations(self):
        code = "int F() {\n" + "  x();\n" * 5 + "}\n"
        rc, out = self.run_main(code, "--max-function-lines", "6",
                                "--max-file-lines", "5", "--list", "1")
        self.assertEqual(rc, 1)
        self.assertIn("a.cc: 7 lines (limit 5)\n", out)
        self.assertIn("a.cc:1: function F is 7 lines (limit 6)\n", out)
        self.assertIn("2 violation(s) in 1 files", out)
        self.assertIn("    7  a.cc:1: F", out)

    def test_python_violations(self):
        code = ("class C:\n    def f(self):\n" + "        x()\n" * 6 +
                "\n\ndef g():\n    pass\n")
        rc, out = self.run_main(code, "--max-function-lines", "6",
                                "--max-file-lines", "5", "--list", "1",
                                file="a.py")
        self.assertEqual(rc, 1)
        self.assertIn("a.py: 12 lines (limit 5)\n", out)
        self.assertIn("a.py:2: function C.f is 7 lines (limit 6)\n", out)
        self.assertIn("2 violation(s) in 1 files (2 functions)", out)
        self.assertIn("    7  a.py:2: C.f", out)

    def test_python_syntax_error_is_a_violation(self):
        rc, out = self.run_main("def broken(:\n", file="a.py")
        self.assertEqual(rc, 1)
        self.assertIn("a.py:1: cannot parse: ", out)
        self.assertIn("1 violation(s) in 1 files", out)


if __name__ == "__main__":
    unittest.main()
