"""Tests of tools/accel_bench.py, here on the CPU (no accelerator is needed).

The device run is made with `--platform cpu` in this repository's two
environments (skipped without them); the parts round-trip; the report
writes the table between its markers.
"""

import json
import os
from pathlib import Path
import subprocess
import sys
import tempfile

from absl.testing import absltest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import accel_bench  # noqa: E402

_ENVS = (REPO / ".venv/bin/python", REPO / ".venv-upstream/bin/python")


class PartsTest(absltest.TestCase):

  def test_parts_make_the_data(self):
    data = os.urandom(1000)
    with tempfile.TemporaryDirectory() as tmp:
      folder = Path(tmp)
      self.assertEqual(accel_bench.write_parts(data, folder, 300), 4)
      self.assertLen(list(folder.glob("part-*")), 4)
      self.assertEqual(accel_bench.read_parts(folder, folder / "sha256"), data)
      (folder / "part-03").unlink()
      with self.assertRaisesRegex(SystemExit, "missing or stale"):
        accel_bench.read_parts(folder, folder / "sha256")


@absltest.skipIf(not all(p.exists() for p in _ENVS),
                 "needs .venv and .venv-upstream (./setup.sh)")
class DeviceRunTest(absltest.TestCase):

  def test_cpu_run_and_report(self):
    with tempfile.TemporaryDirectory() as tmp:
      out = Path(tmp)
      subprocess.run([sys.executable, str(REPO / "tools/accel_bench.py"),
                      "device-run", "--platform", "cpu"],
                     env=dict(os.environ, OUT=str(out)), check=True,
                     capture_output=True)
      self.assertEqual(
          sorted(f.name for f in out.iterdir()),
          ["bench.jsonl", "heterogeneous-fork.txt",
           "heterogeneous-upstream.txt", "heterogeneous_test.txt", "run.txt"])
      # The example and the test ran their simulated forms, and passed.
      self.assertIn("all OK", (out / "heterogeneous-fork.txt").read_text())
      self.assertIn("FAIL", (out / "heterogeneous-upstream.txt").read_text())
      test_log = (out / "heterogeneous_test.txt").read_text()
      self.assertRegex(test_log, r"Ran 8 tests .*\n+OK \(skipped=4\)")
      self.assertIn("failed: none", (out / "run.txt").read_text())
      bench = out / "bench.jsonl"
      labels = [json.loads(l)["label"] for l in bench.read_text().splitlines()]
      self.assertEqual(sorted(labels),
                       ["fork"] * accel_bench.ROUNDS +
                       ["upstream"] * accel_bench.ROUNDS)
      page = out / "page.md"
      page.write_text(
          f"before\n{accel_bench.BEGIN}\nold\n{accel_bench.END}\n")
      subprocess.run([sys.executable, str(REPO / "tools/accel_bench.py"),
                      "report", "--out", str(page), str(bench)],
                     check=True, capture_output=True)
      text = page.read_text()
    self.assertNotIn("old", text)
    self.assertTrue(text.startswith(f"before\n{accel_bench.BEGIN}\nCPU: "))
    rows = [l for l in text.splitlines() if l.startswith("| eager: ")]
    self.assertLen(rows, 6)
    for row in rows:
      ratio = float(row.strip("|").split("|")[-1])
      self.assertGreater(ratio, 0.0)
    # device= is honoured eagerly on both (a CPU run: the default device).
    self.assertIn("| jnp.zeros(1024, device=a) lands on | cpu:0 | cpu:0 |",
                  text)


if __name__ == "__main__":
  absltest.main()
