"""Tests of tools/accel_bench.py, here on the CPU (no accelerator is needed).

The device run is made with `--platform cpu` in this repository's two
environments (skipped without them); the parts round-trip; an archive kept
in parts unpacks once into the environments the machine's programs get; the
staged Python runs from another folder; the report writes the table between
its markers.
"""

import argparse
import io
import json
import os
from pathlib import Path
import subprocess
import sys
import tarfile
import tempfile
from unittest import mock

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


def _xz_archive(files: dict[str, bytes]) -> bytes:
  out = io.BytesIO()
  with tarfile.open(fileobj=out, mode="w:xz") as tar:
    for name, data in files.items():
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  return out.getvalue()


class UnpackTest(absltest.TestCase):
  """What device-part and device-run do with the parts, on the machine."""

  def test_parts_unpack_once_into_the_environments(self):
    with tempfile.TemporaryDirectory() as tmp:
      remote, parts = Path(tmp) / "remote", Path(tmp) / "parts"
      parts.mkdir()
      data = _xz_archive({"platform": b"tpu\n",
                          "fork/jax/__init__.py": b"",
                          "upstream/jax/__init__.py": b"",
                          "common/numpy/__init__.py": b"",
                          "python/bin/python3": b"",
                          "python/lib/libpython3.12.so.1.0": b""})
      n = accel_bench.write_parts(data, parts, 64)
      self.assertGreater(n, 1)
      machine = {"PYTHONPATH": "/opt/machine-jax", "PYTHONHOME": "/opt/py",
                 "TPU_ACCELERATOR_TYPE": "v5litepod-4", "PATH": "/usr/bin"}
      with (mock.patch.object(accel_bench, "REMOTE", remote),
            mock.patch.object(accel_bench, "PARTS", parts),
            mock.patch.dict(os.environ, machine, clear=True)):
        for i in range(n):
          accel_bench.device_part(argparse.Namespace(n=i))
        self.assertEqual(accel_bench._unpack(), "tpu")
        root = remote / "root"
        self.assertFalse((remote / accel_bench.ARCHIVE).exists())
        for p in remote.glob("part-*"):
          p.unlink()
        self.assertEqual(accel_bench._unpack(), "tpu")  # unpacked once
        envs = accel_bench._environments("tpu")
      self.assertEqual(sorted(envs), ["fork", "upstream"])
      for env, (python, environ) in envs.items():
        self.assertEqual(python, [str(root / "python/bin/python3")])
        # The machine's PYTHONPATH (its own JAX) is replaced, not added to.
        self.assertEqual(environ["PYTHONPATH"],
                         f"{root / env}:{root / 'common'}")
        self.assertNotIn("PYTHONHOME", environ)
        self.assertEqual(environ["TPU_ACCELERATOR_TYPE"], "v5litepod-4")
        self.assertEqual(environ["JAX_PLATFORMS"], "tpu,cpu")
        self.assertEqual(environ["LD_LIBRARY_PATH"], str(root / "python/lib"))

  def test_stale_parts_stop_the_run(self):
    with tempfile.TemporaryDirectory() as tmp:
      remote, parts = Path(tmp) / "remote", Path(tmp) / "parts"
      parts.mkdir()
      accel_bench.write_parts(_xz_archive({"platform": b"tpu\n"}), parts, 100)
      remote.mkdir()
      (remote / "part-00").write_bytes(b"left by another run")
      with (mock.patch.object(accel_bench, "REMOTE", remote),
            mock.patch.object(accel_bench, "PARTS", parts),
            self.assertRaisesRegex(SystemExit, "missing or stale")):
        accel_bench._unpack()


@absltest.skipUnless(
    (Path(sys.base_prefix) / "bin" /
     f"python{sys.version_info[0]}.{sys.version_info[1]}").exists(),
    "needs a Python installed as bin/pythonX.Y under its prefix")
class StagePythonTest(absltest.TestCase):

  def test_the_staged_python_runs_from_another_folder(self):
    with tempfile.TemporaryDirectory() as tmp:
      staged = Path(tmp) / "moved" / "python"
      accel_bench.stage_python(staged)
      libs = sorted(p.name for p in (staged / "lib").glob("*.so*"))
      # The C library's own libraries stay the machine's.
      self.assertFalse([l for l in libs if l.startswith(
          ("libc.so", "libm.so", "libresolv", "ld-linux", "libpthread"))],
                       libs)
      self.assertFalse((staged / "lib/python3.12/test").exists())
      self.assertEmpty(list((staged / "lib/python3.12").glob("config-*")))
      res = subprocess.run(
          [str(staged / "bin/python3"), "-I", "-c",
           "import sys, ctypes, ssl, lzma, bz2, zlib, json; "
           "print(sys.prefix)"],
          env={"LD_LIBRARY_PATH": str(staged / "lib"), "PATH": "/usr/bin"},
          capture_output=True, text=True, check=False)
      self.assertEqual(res.returncode, 0, res.stderr)
      self.assertEqual(res.stdout.strip(), str(staged))


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
