"""Tests of tools/gpu_bench.py, here on the CPU (no GPU is needed).

The device run is made with `--platform cpu` in this repository's two
environments (skipped without them); the parts round-trip; the report
writes the table between its markers.
"""

import os
from pathlib import Path
import subprocess
import sys
import tempfile

from absl.testing import absltest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import gpu_bench  # noqa: E402

_ENVS = (REPO / ".venv/bin/python", REPO / ".venv-upstream/bin/python")


class PartsTest(absltest.TestCase):

  def test_parts_make_the_data(self):
    data = os.urandom(1000)
    with tempfile.TemporaryDirectory() as tmp:
      folder = Path(tmp)
      self.assertEqual(gpu_bench.write_parts(data, folder, 300), 4)
      self.assertLen(list(folder.glob("part-*")), 4)
      self.assertEqual(gpu_bench.read_parts(folder, folder / "sha256"), data)
      (folder / "part-03").unlink()
      with self.assertRaisesRegex(SystemExit, "missing or stale"):
        gpu_bench.read_parts(folder, folder / "sha256")


@absltest.skipIf(not all(p.exists() for p in _ENVS),
                 "needs .venv and .venv-upstream (./setup.sh)")
class DeviceRunTest(absltest.TestCase):

  def test_cpu_run_and_report(self):
    with tempfile.TemporaryDirectory() as tmp:
      out = Path(tmp)
      subprocess.run([sys.executable, str(REPO / "tools/gpu_bench.py"),
                      "device-run", "--platform", "cpu"],
                     env=dict(os.environ, OUT=str(out)), check=True,
                     capture_output=True)
      files = sorted(out.glob("*.json"))
      self.assertEqual([f.name for f in files],
                       [f"{e}-{i}.json" for e in ("fork", "upstream")
                        for i in range(gpu_bench.ROUNDS)])
      page = out / "page.md"
      page.write_text(f"before\n{gpu_bench.BEGIN}\nold\n{gpu_bench.END}\n")
      subprocess.run([sys.executable, str(REPO / "tools/gpu_bench.py"),
                      "report", "--out", str(page), *map(str, files)],
                     check=True, capture_output=True)
      text = page.read_text()
    self.assertNotIn("old", text)
    self.assertTrue(text.startswith(f"before\n{gpu_bench.BEGIN}\nGPU: "))
    rows = [l for l in text.splitlines() if l.startswith("| eager: ")]
    self.assertLen(rows, 4)
    for row in rows:
      ratio = float(row.strip("|").split("|")[-1])
      self.assertGreater(ratio, 0.0)
    # device= is honoured eagerly on both (a CPU run: the default device).
    self.assertIn("| jnp.zeros(1024, device=g) lands on | cpu:0 | cpu:0 |",
                  text)


if __name__ == "__main__":
  absltest.main()
