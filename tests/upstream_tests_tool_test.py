"""Tests of tools/upstream_tests.py on a tiny fake jax repository.

The tool runs its tests in .venv-upstream and .venv as they exist; the tests
skip when either is missing. The fake repository's tests mostly do not
import jax, so that each run stays short.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from absl.testing import absltest

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "upstream_tests.py"
sys.path.insert(0, str(REPO / "tools"))
import upstream_tests  # noqa: E402

_FILES_V1 = {
    "conftest.py": '"""A fake upstream conftest."""\n',
    "pyproject.toml": textwrap.dedent("""\
        [tool.pytest.ini_options]
        filterwarnings = ["error"]
        """),
    "tests/simple_test.py": textwrap.dedent("""\
        def test_one():
          assert 1 + 1 == 2


        def test_two():
          assert "a" < "b"
        """),
}

_FILES_V2 = {
    "tests/simple_test.py": _FILES_V1["tests/simple_test.py"] + textwrap.dedent(
        """

        def test_three():
          assert [3]
        """),
    "tests/bad_syntax_test.py": "def test_x(:\n  pass\n",
    "tests/alias_test.py": textwrap.dedent("""\
        import jax
        from jax._src import no_such_module_xyz as nsm, dtypes
        from jax._src import (
            config,
            another_absent_name_xyz,
        )


        def test_uses_jax():
          assert jax.numpy.add(1, 2) == 3
          assert dtypes and config


        def test_uses_the_absent_module():
          assert nsm.anything
        """),
    "tests/helper_lib.py": "from jax._src import absent_in_helper_xyz\n",
    # As upstream's test files: 8 devices asked for at import, and a test
    # that skips with fewer.
    "tests/devices_test.py": textwrap.dedent("""\
        import pytest
        import jax
        from jax._src import test_util as jtu

        jtu.request_cpu_devices(8)


        def test_needs_eight():
          if jax.device_count() < 8:
            pytest.skip("needs 8 devices")
          assert jax.device_count() == 8


        def test_on_one_or_eight():
          assert jax.device_count() in (1, 8), jax.devices()
        """),
    "tests/uses_helper_test.py": textwrap.dedent("""\
        import helper_lib


        def test_helper():
          assert helper_lib
        """),
}


def _clean_env():
  # pytest-xdist workers run with a PYTHONPATH that the tool's environments
  # must not see. The fake tests need neither hypothesis nor xdist, whose
  # plugins take most of a short pytest run's start.
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  env["PYTEST_ADDOPTS"] = "-p no:hypothesispytest -p no:xdist"
  return env


def _git(*args, cwd):
  return subprocess.run(
      ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
      cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo, files, message):
  for rel, text in files.items():
    (repo / rel).parent.mkdir(parents=True, exist_ok=True)
    (repo / rel).write_text(text)
  _git("add", "-A", cwd=repo)
  _git("commit", "-q", "-m", message, cwd=repo)
  return _git("rev-parse", "HEAD", cwd=repo)


class UpstreamTestsToolTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = Path(tempfile.mkdtemp(prefix="devtrace-upstream-tests-test-"))
    cls.repo = cls.tmp / "jax"
    cls.repo.mkdir()
    _git("init", "-q", cwd=cls.repo)
    cls.v1 = _commit(cls.repo, _FILES_V1, "v1")
    _git("tag", "v1", cwd=cls.repo)
    cls.v2 = _commit(cls.repo, _FILES_V2, "v2")

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.tmp, ignore_errors=True)
    super().tearDownClass()

  def setUp(self):
    super().setUp()
    for env in upstream_tests.ENVS:
      if not (REPO / env / "bin" / "python").exists():
        self.skipTest(f"run ./setup.sh first: no {env}")

  def _tool(self, *args, out=None):
    out = out or Path(tempfile.mkdtemp(dir=self.tmp, prefix="out-"))
    r = subprocess.run(
        [sys.executable, str(TOOL), "--jax-repo", str(self.repo),
         "--out", str(out), *args],
        capture_output=True, text=True, env=_clean_env(), cwd=self.tmp)
    return r, r.stdout + r.stderr, out

  def _run(self, *args, status, expected=(), out=None):
    """Runs the tool: checks its exit status and that its output has each of
    `expected`; returns the output and the out folder."""
    r, output, out = self._tool(*args, out=out)
    self.assertEqual(r.returncode, status, output)
    for text in expected:
      self.assertIn(text, output)
    return output, out

  def test_an_invalid_k_expression_fails_the_run(self):
    self._run("-k", "and (", "simple_test.py", status=2, expected=[
        "simple_test.py (.venv-upstream): pytest exit status 4 (usage error)",
        "simple_test.py (.venv): pytest exit status 4",
        "Wrong expression passed to '-k'", "NO VERDICT"])

  def test_a_collection_error_fails_the_run(self):
    _, out = self._run("bad_syntax_test.py", status=2, expected=[
        "bad_syntax_test.py (.venv-upstream): pytest exit status 2",
        "SyntaxError", "ERROR collecting tests/bad_syntax_test.py"])
    self.assertTrue((out / "bad_syntax_test.venv.log").exists())

  def test_an_absent_aliased_import_is_set_to_none_once(self):
    _, out = self._run("alias_test.py", status=0, expected=[
        "made None: nsm, another_absent_name_xyz",
        # The test that uses the absent module fails on both: not a
        # regression.
        "upstream {'passed': 1, 'failed': 1}; fork {'passed': 1, 'failed': 1}"])
    text = (out / "src" / "tests" / "alias_test.py").read_text()
    self.assertLen(re.findall(r"^nsm = None\b", text, re.M), 1, text)
    self.assertLen(re.findall(r"^another_absent_name_xyz = None\b", text,
                              re.M), 1, text)
    self.assertEqual(text.count("= None"), 2, text)
    self.assertIn("from jax._src import dtypes\n", text)
    self.assertIn("from jax._src import config\n", text)
    self.assertNotIn("no_such_module_xyz", text)
    # A second run on the same extraction edits nothing again; a node id
    # selects one test.
    self._run("alias_test.py::test_uses_jax", out=out, status=0,
              expected=["upstream {'passed': 1}; fork {'passed': 1}"])
    self.assertEqual(
        (out / "src" / "tests" / "alias_test.py").read_text(), text)

  def test_an_import_that_cannot_be_rewritten_fails_the_run(self):
    self._run("uses_helper_test.py", status=2, expected=[
        "SKIPPED: cannot make tests/uses_helper_test.py importable",
        "absent_in_helper_xyz"])

  def test_a_node_id_runs_just_that_test(self):
    _, out = self._run("simple_test.py::test_two", status=0,
                       expected=["upstream {'passed': 1}; fork {'passed': 1}"])
    for env in ("venv-upstream", "venv"):
      outcomes, _ = upstream_tests.outcomes(out / f"simple_test.{env}.xml")
      self.assertEqual(outcomes, {"tests.simple_test::test_two": "passed"})

  def test_a_clean_run_exits_0(self):
    output, _ = self._run("simple_test.py", status=0, expected=[
        f"HEAD ({self.v2[:12]})", "upstream {'passed': 3}; fork {'passed': 3}",
        "0 tests pass upstream and fail on the fork"])
    self.assertNotIn("NO VERDICT", output)

  def test_devices_fixes_the_number_of_cpu_devices(self):
    # 8 by default (what the file asks for); --devices 1 wins over the
    # file's request, and the test that needs 8 skips on both sides.
    self._run("devices_test.py", status=0, expected=[
        "upstream {'passed': 2}; fork {'passed': 2}"])
    output, out = self._run("--devices", "1", "devices_test.py", status=0,
                            expected=[
        "on 1 CPU device(s)",
        "upstream {'skipped': 1, 'passed': 1}; "
        "fork {'skipped': 1, 'passed': 1}"])
    for env in ("venv-upstream", "venv"):
      outcomes, _ = upstream_tests.outcomes(out / f"devices_test.{env}.xml")
      self.assertEqual(outcomes, {
          "tests.devices_test::test_needs_eight": "skipped",
          "tests.devices_test::test_on_one_or_eight": "passed"}, output)
    self._run("--devices", "0", "devices_test.py", status=2,
              expected=["--devices 0: expected a number >= 1"])

  def test_ref_picks_an_older_commits_tests(self):
    _, out = self._run("--ref", "v1", "simple_test.py", status=0, expected=[
        f"v1 ({self.v1[:12]})", "upstream {'passed': 2}; fork {'passed': 2}"])
    # Keyed on the commit, and on the patches whose hunks it applies.
    self.assertEqual(
        (out / "src" / ".commit").read_text().splitlines()[0], self.v1)
    # The extraction is keyed on the commit that the ref resolves to.
    src = out / "src"
    self.assertEqual(upstream_tests.extract_tests(self.repo, src, "HEAD"),
                     self.v2)
    self.assertIn("test_three", (src / "tests" / "simple_test.py").read_text())
    self.assertEqual(upstream_tests.extract_tests(self.repo, src, "HEAD~1"),
                     self.v1)
    self.assertNotIn("test_three",
                     (src / "tests" / "simple_test.py").read_text())
    self._run("--ref", "no-such-ref", "simple_test.py", status=2,
              expected=["'no-such-ref' is not a commit"])

  def test_the_series_hunks_of_upstream_tests_are_applied(self):
    # A patch that changes an upstream test file's expectation: its hunk is
    # applied to the extracted file (and its jax/ hunks are not); a hunk that
    # does not apply stops the run.
    patch = Path(self.tmp) / "0001-change.patch"
    patch.write_text("\n".join([
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001",
        "From: Test <test@example.com>",
        "Subject: [PATCH] change an expectation",
        "",
        "Series-Step: 1",
        "---",
        "diff --git a/jax/x.py b/jax/x.py",
        "--- a/jax/x.py",
        "+++ b/jax/x.py",
        "@@ -1 +1 @@",
        "-a = 1",
        "+a = 2",
        "diff --git a/tests/simple_test.py b/tests/simple_test.py",
        "--- a/tests/simple_test.py",
        "+++ b/tests/simple_test.py",
        "@@ -1,3 +1,3 @@",
        " def test_one():",
        "-  assert 1 + 1 == 2",
        "+  assert 1 + 1 != 3",
        " ",
        ""]))
    src = Path(self.tmp) / "src"
    upstream_tests.extract_tests(self.repo, src, "HEAD", (patch,))
    text = (src / "tests" / "simple_test.py").read_text()
    self.assertIn("assert 1 + 1 != 3", text)
    self.assertNotIn("assert 1 + 1 == 2", text)
    self.assertFalse((src / "jax").exists())
    bad = Path(self.tmp) / "0002-stale.patch"
    bad.write_text(patch.read_text().replace("1 + 1", "2 + 2"))
    with self.assertRaisesRegex(upstream_tests.ToolError,
                                "0002-stale.patch's hunks of "
                                "tests/simple_test.py do not apply"):
      upstream_tests.extract_tests(self.repo, Path(self.tmp) / "src2", "HEAD",
                                   (bad,))


if __name__ == "__main__":
  absltest.main()
