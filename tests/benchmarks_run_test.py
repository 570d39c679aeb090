"""Tests of benchmarks/run.py: three columns, and no file from a filtered run.

One dispatch row, one round, one repetition, without callgrind: the workers
run in .venv (flags on and off) and .venv-upstream; the tests skip when
either environment is missing.
"""

import contextlib
import io
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


if __name__ == "__main__":
  absltest.main()
