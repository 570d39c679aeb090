"""Tests of benchmarks/run.py: three columns, no file from a filtered run,
the first-call table against upstream plus traces, and the line profile.

One dispatch row, one round, one repetition, without callgrind: the workers
run in .venv (flags on and off) and .venv-upstream; the tests skip when
either environment is missing.
"""

import contextlib
import io
import re
import sys
from pathlib import Path
import tempfile

from absl.testing import absltest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import run  # noqa: E402

_ROW = "dispatch: identity (committed cpu:3)"


@absltest.skipIf(not (run.FORK.exists() and run.UPSTREAM.exists()),
                 "needs .venv and .venv-upstream (./setup.sh)")
class RunTest(absltest.TestCase):

  def _run(self, *extra):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      rc = run.main(["--only", _ROW, "--rounds", "1", "--repeats", "1",
                     "--no-instructions", *extra])
    self.assertEqual(rc, 0)
    return out.getvalue()

  def test_filtered_run_writes_no_file(self):
    before = sorted(p.name for p in REPO.iterdir())
    page = (REPO / "docs" / "benchmarks.md").read_bytes()
    text = self._run("--out", "none")
    self.assertEqual(sorted(p.name for p in REPO.iterdir()), before)
    self.assertEqual((REPO / "docs" / "benchmarks.md").read_bytes(), page)
    self.assertNotIn("wrote", text)

  def test_three_columns(self):
    with tempfile.TemporaryDirectory() as tmp:
      page = Path(tmp) / "page.md"
      self._run("--out", str(page))
      text = page.read_text()
    self.assertIn("| measurement | upstream | fork | fork/upstream | "
                  "fork, flags off | off/upstream |", text)
    row, = [l for l in text.splitlines() if l.startswith(f"| {_ROW} |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    self.assertLen(cells, 6)
    for ratio in (cells[3], cells[5]):
      self.assertGreater(float(ratio), 0.0)
    counts = [l for l in text.splitlines()
              if l.startswith("| python-path calls, identity (committed")]
    self.assertEqual(counts, ["| python-path calls, identity (committed "
                              "cpu:3) | 0 | 0 | 0 |"])


class FirstCallTableTest(absltest.TestCase):

  def test_against_upstream_plus_seven_traces(self):
    small, big = run.FIRST_CALLS.items()
    instr = {"upstream": {small[0]: 400e6, small[1]: 2e6,
                          big[0]: 20e9, big[1]: 1e9},
             "fork": {small[0]: 414e6, big[0]: 28e9}}
    text, misses = run.first_call_table(instr)
    rows = [l for l in text.splitlines() if l.startswith("| first call on")]
    self.assertLen(rows, 2)
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    # 400 M + 7 x 2 M = 414 M: met; fork/upstream 1.035.
    self.assertEqual(cells[3:], ["414.0 M", "414.0 M", "1.035", "1.000",
                                 "yes"])
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    # 20 G + 7 x 1 G = 27 G; 28/27 = 1.037: missed.
    self.assertEqual(cells[3:], ["27.00 G", "28.00 G", "1.400", "1.037",
                                 "**no**"])
    self.assertEqual(misses, [f"{big[0]} (against upstream plus 7 traces)"])

  def test_no_rows_without_the_trace_row(self):
    small, _ = run.FIRST_CALLS.items()
    self.assertEqual(run.first_call_table(
        {"upstream": {small[0]: 1.0}, "fork": {small[0]: 1.0}}), ("", []))


@absltest.skipIf(not (run.FORK.exists() and run.UPSTREAM.exists()),
                 "needs .venv and .venv-upstream (./setup.sh)")
class ProfileTest(absltest.TestCase):

  def test_the_fork_adds_lines_where_it_places(self):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      rc = run.main(["--profile", "trace: a function that reads x.device"])
    self.assertEqual(rc, 0)
    text = out.getvalue()
    up, fork, off = map(int, re.search(
        r"upstream (\d+), fork (\d+), flags off (\d+)", text).groups())
    self.assertGreater(fork, off)
    self.assertGreater(off, 0.9 * up)
    # The device_put of `device=` is staged only in the fork with flags on.
    fork_part = text[text.index("fork against"):text.index("off against")]
    self.assertIn("jax/_src/api.py:device_put", fork_part)


if __name__ == "__main__":
  absltest.main()
