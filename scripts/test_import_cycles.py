#!/usr/bin/env python3
"""The import-circle check's own test: it must find a circle it is shown.

    python3 scripts/test_import_cycles.py

Fixtures under scripts/fixtures/import_cycles/: `three/` holds a circle of
three files whose closing edge hides behind a word that ends in `r"`;
`two/` holds only a circle of two files, which the rule allows;
`upward/` holds two stages that name the driver.
"""

import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import import_cycles  # noqa: E402

FIXTURES = HERE / "fixtures" / "import_cycles"


def run(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(HERE / "import_cycles.py"), "--src", str(src)],
        capture_output=True,
        text=True,
        check=False,
    )


class Circles(unittest.TestCase):
    def test_a_circle_of_three_files_is_found_and_fails_the_check(self):
        found, _ = import_cycles.circles(FIXTURES / "three")
        self.assertEqual(found, [[("a",), ("b",), ("c",)]])
        done = run(FIXTURES / "three")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("3 files: a, b, c", done.stdout)

    def test_a_circle_of_two_files_passes(self):
        found, _ = import_cycles.circles(FIXTURES / "two")
        self.assertEqual(found, [[("x",), ("y",)]])
        done = run(FIXTURES / "two")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def test_upward_imports_are_found_and_fail_the_check(self):
        _, edges = import_cycles.circles(FIXTURES / "upward")
        self.assertEqual(import_cycles.breaches(edges), [(("map",), ("driver",)), (("shuffle",), ("driver",))])
        done = run(FIXTURES / "upward")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("upward import: shuffle names driver", done.stdout)

    def test_the_fixtures_without_upward_imports_have_none(self):
        for tree in ("three", "two"):
            _, edges = import_cycles.circles(FIXTURES / tree)
            self.assertEqual(import_cycles.breaches(edges), [], tree)

    def test_every_crate_of_the_workspace_is_read(self):
        trees = import_cycles.trees()
        self.assertIn(import_cycles.SRC, trees)
        self.assertGreaterEqual(len(trees), 10, trees)

    def test_the_crate_passes(self):
        done = subprocess.run(
            [sys.executable, str(HERE / "import_cycles.py")], capture_output=True, text=True, check=False
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)


class Strip(unittest.TestCase):
    def strip(self, text: str) -> str:
        return import_cycles.strip(text)

    def test_a_word_ending_in_r_before_a_quote_is_no_raw_string(self):
        code = self.strip('f("folder"); crate::a::g(); h("end");')
        self.assertIn("crate::a::g()", code)

    def test_raw_strings_with_hashes_and_byte_strings_are_literals(self):
        code = self.strip('x(r#"crate::a "q" "#); y(br"crate::b"); z(b"crate::c"); crate::d::e();')
        self.assertNotIn("crate::a", code)
        self.assertNotIn("crate::b", code)
        self.assertNotIn("crate::c", code)
        self.assertIn("crate::d::e()", code)

    def test_a_quote_character_opens_no_string(self):
        code = self.strip("let q = '\"'; crate::a::f(); let s: &'static str = \"x\";")
        self.assertIn("crate::a::f()", code)

    def test_block_comments_nest(self):
        code = self.strip("/* a /* b */ crate::x */ crate::y::z();")
        self.assertNotIn("crate::x", code)
        self.assertIn("crate::y::z()", code)

    def test_a_test_module_is_left_out(self):
        code = self.strip("crate::a::f();\n#[cfg(test)]\nmod tests {\n    crate::b::g();\n}\n")
        self.assertIn("crate::a", code)
        self.assertNotIn("crate::b", code)


if __name__ == "__main__":
    unittest.main()
