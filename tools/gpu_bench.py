#!/usr/bin/env python3
"""The GPU table of docs/benchmarks.md, on a lent GPU machine (`device`).

The machine has CUDA and a Python with numpy and scipy, but not jaxlib
0.12.0.1 or its CUDA plugin, and it cannot fetch them; a call to it carries
at most 64 MiB of files. So the wheels travel in parts:

  tools/gpu_bench.py prepare
      Downloads the CUDA plugin wheels (jax-cuda13-plugin, jax-cuda13-pjrt
      0.12.0.1) beside the wheels ./setup.sh made (the fork's, upstream jax's,
      upstream jaxlib), packs them into one archive, splits it into parts of
      58 MiB under .gpu/ (ignored by git) and prints the device calls, in
      order: one per part, then the run. Make them one after the other (the
      machine keeps what a call wrote for 30 s after it returns).

  tools/gpu_bench.py device-part N    (on the machine, by those calls)
  tools/gpu_bench.py device-run       (on the machine)
      Keep part N in /tmp/devtrace-gpu; check and unpack the archive, install
      each environment with `pip install --target` (no index), and run
      benchmarks/gpu.py alternating the fork and upstream in separate
      processes; the results land in $OUT.

  tools/gpu_bench.py report FILE...
      Prints the GPU table (with --out docs/benchmarks.md, writes it there)
      from the JSON files the run brought back: the best over the processes
      of each environment.

`tools/gpu_bench.py device-run --platform cpu` runs the same here, on the CPU
(a smoke of everything but the CUDA install).
"""

import argparse
import hashlib
import io
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tarfile

import forklib

REPO = forklib.REPO
PARTS = REPO / ".gpu"
PART_SIZE = 58 << 20
REMOTE = Path("/tmp/devtrace-gpu")
CUDA_PLUGINS = ("jax-cuda13-plugin", "jax-cuda13-pjrt")  # at jaxlib's version
ROUNDS = 3  # processes per environment, alternating
BEGIN, END = "<!-- gpu: begin -->", "<!-- gpu: end -->"


def _wheels() -> dict[str, Path]:
  pins = forklib.load_pins()
  fork = sorted((REPO / "dist").glob("jax-*+devtrace*-py3-none-any.whl"))
  jaxlib = sorted((REPO / "build/wheelhouse").glob(
      f"jaxlib-{pins.jaxlib_version}-*.whl"))
  if not (fork and jaxlib):
    sys.exit("gpu_bench: run ./setup.sh first (it makes the fork's wheel and "
             "downloads jaxlib)")
  upstream = forklib.fetch_upstream(pins)
  cuda = REPO / "build/gpu-wheels"
  if not list(cuda.glob("*.whl")):
    cuda.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps",
         "--only-binary=:all:", "--python-version", "3.12",
         "--implementation", "cp", "--platform", "manylinux_2_27_x86_64",
         "--platform", "manylinux_2_28_x86_64", "-d", str(cuda),
         *(f"{p}=={pins.jaxlib_version}" for p in CUDA_PLUGINS)], check=True)
  out = {"fork/" + fork[-1].name: fork[-1],
         "upstream/" + upstream.name: upstream,
         "common/" + jaxlib[-1].name: jaxlib[-1]}
  for w in sorted(cuda.glob("*.whl")):
    out["cuda/" + w.name] = w
  return out


def write_parts(data: bytes, folder: Path, size: int) -> int:
  """Splits `data` into files part-00, part-01, ... and its sha256."""
  n = 0
  for n, start in enumerate(range(0, len(data), size)):
    (folder / f"part-{n:02d}").write_bytes(data[start:start + size])
  (folder / "sha256").write_text(hashlib.sha256(data).hexdigest() + "\n")
  return n + 1


def read_parts(folder: Path, sha256_file: Path) -> bytes:
  """The data the parts in `folder` make; exits if one is missing or stale."""
  parts = sorted(folder.glob("part-*"))
  data = b"".join(p.read_bytes() for p in parts)
  if hashlib.sha256(data).hexdigest() != sha256_file.read_text().split()[0]:
    sys.exit("gpu_bench: the parts do not make the archive (a part is "
             f"missing or stale): {[p.name for p in parts]}")
  return data


def prepare(args):
  shutil.rmtree(PARTS, ignore_errors=True)
  PARTS.mkdir()
  archive = io.BytesIO()
  with tarfile.open(fileobj=archive, mode="w") as tar:
    for name, path in _wheels().items():
      tar.add(path, arcname=name)
  n = write_parts(archive.getvalue(), PARTS, PART_SIZE)
  print(f"{n} parts of at most {PART_SIZE >> 20} MiB in {PARTS}; "
        "device calls, one after the other:")
  for i in range(n):
    print(f'  run(command="python3 tools/gpu_bench.py device-part {i}", '
          f'carry=[".gpu/part-{i:02d}", ".gpu/sha256"], timeout_s=120)')
  print('  run(command="PYTHONUNBUFFERED=1 python3 tools/gpu_bench.py '
        'device-run", carry=[".gpu/sha256"], timeout_s=600)')
  print("then: tools/gpu_bench.py report --out docs/benchmarks.md "
        "<files_at>/*.json")


def device_part(args):
  REMOTE.mkdir(parents=True, exist_ok=True)
  name = f"part-{args.n:02d}"
  shutil.copy(PARTS / name, REMOTE / name)
  print(f"kept {name}: {sorted(p.name for p in REMOTE.glob('part-*'))}")


def _install(target: Path, wheels: list[Path]):
  subprocess.run(
      [sys.executable, "-m", "pip", "install", "-q", "--no-index",
       "--no-deps", "--no-compile", "--no-cache-dir", "--target",
       str(target), *map(str, wheels)], check=True)


def device_run(args):
  out = Path(os.environ.get("OUT", REPO / "build/gpu-out"))
  out.mkdir(parents=True, exist_ok=True)
  envs = {}
  if args.platform == "gpu":
    data = read_parts(REMOTE, PARTS / "sha256")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
      tar.extractall(REMOTE / "wheels", filter="data")
    w = REMOTE / "wheels"
    common = sorted((w / "common").glob("*.whl")) + sorted(
        (w / "cuda").glob("*.whl"))
    for env in ("fork", "upstream"):
      target = REMOTE / f"site-{env}"
      shutil.rmtree(target, ignore_errors=True)
      _install(target, sorted((w / env).glob("*.whl")) + common)
      envs[env] = str(target)
  else:
    # A smoke here: this repository's two environments.
    envs = {"fork": None, "upstream": None}
  for i in range(ROUNDS):
    order = ("fork", "upstream") if i % 2 == 0 else ("upstream", "fork")
    for env in order:
      cmd = [sys.executable, str(REPO / "benchmarks/gpu.py"), "--label", env,
             "--platform", args.platform]
      environ = dict(os.environ)
      if envs[env] is not None:
        environ["PYTHONPATH"] = envs[env]
      else:
        venv = ".venv" if env == "fork" else ".venv-upstream"
        cmd[0] = str(REPO / venv / "bin/python")
        cmd += ["--repeats", "2", "--mlp", "128,2,16"]
      res = subprocess.run(cmd, env=environ, capture_output=True, text=True,
                           check=False)
      if res.returncode:
        print(res.stdout, res.stderr, file=sys.stderr)
        sys.exit(f"gpu_bench: {env} failed")
      (out / f"{env}-{i}.json").write_text(res.stdout)
      print(f"{env} round {i}: done", flush=True)


def _fmt(seconds: float) -> str:
  if seconds >= 1:
    return f"{seconds:.2f} s"
  if seconds >= 1e-3:
    return f"{seconds * 1e3:.2f} ms"
  return f"{seconds * 1e6:.1f} µs"


def report(args):
  runs: dict[str, list[dict]] = {}
  for f in args.files:
    r = json.loads(Path(f).read_text())
    runs.setdefault(r["label"], []).append(r)
  fork, up = runs["fork"], runs["upstream"]
  names = list(fork[0]["results"])
  lines = [
      (f"GPU: {fork[0]['device']} ({fork[0]['platform']}), upstream jax "
       f"{up[0]['jax']} against the fork, jax {fork[0]['jax']} (flags on), "
       f"both on jaxlib {forklib.load_pins().jaxlib_version} with its CUDA "
       f"plugin; {len(fork)} "
       "processes each, alternating; the best of each process's "
       "repetitions, then the best over processes."),
      "",
      "| measurement | upstream | fork | fork/upstream |",
      "|---|---|---|---|"]
  for name in names:
    u = min(r["results"][name] for r in up)
    f = min(r["results"][name] for r in fork)
    lines.append(f"| {name} | {_fmt(u)} | {_fmt(f)} | {f / u:.3f} |")
  lines += ["", "| where it lands | upstream | fork |", "|---|---|---|"]
  for name in fork[0]["facts"]:
    lines.append(f"| {name} | {up[0]['facts'][name]} | "
                 f"{fork[0]['facts'][name]} |")
  table = "\n".join(lines)
  print(table)
  if args.out:
    page = args.out.read_text()
    a, b = page.index(BEGIN) + len(BEGIN), page.index(END)
    args.out.write_text(page[:a] + "\n" + table + "\n" + page[b:])


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  sub = ap.add_subparsers(dest="cmd", required=True)
  sub.add_parser("prepare").set_defaults(fn=prepare)
  p = sub.add_parser("device-part")
  p.add_argument("n", type=int)
  p.set_defaults(fn=device_part)
  p = sub.add_parser("device-run")
  p.add_argument("--platform", default="gpu")
  p.set_defaults(fn=device_run)
  p = sub.add_parser("report")
  p.add_argument("files", nargs="+")
  p.add_argument("--out", type=Path, default=None,
                 help="the page to write the table into (docs/benchmarks.md)")
  p.set_defaults(fn=report)
  args = ap.parse_args()
  args.fn(args)


if __name__ == "__main__":
  main()
