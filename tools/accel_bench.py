#!/usr/bin/env python3
"""The accelerator run: jax-ml/jax#26000's case and table on a lent machine.

On a TPU (or GPU) machine lent by the `device` tool, runs the heterogeneous
example and test (the default device the accelerator, arrays on the CPU) and
benchmarks/accel.py, fork against upstream. The machine cannot fetch
packages and a call to it carries at most 64 MiB, so what it lacks travels
in parts:

  tools/accel_bench.py prepare [--platform tpu|gpu]
      Stages, under build/accel/: the fork's jax and upstream jax, each in a
      folder of its own, and what both need in a third (jaxlib, numpy,
      scipy, ml_dtypes, opt_einsum, absl-py, and libtpu for a TPU or the
      CUDA plugins for a GPU), installed with `pip install --target` from the
      wheels ./setup.sh fetched (libtpu at the version the pinned jax's
      [tpu] extra names); for a TPU also this Python 3.12 (jaxlib 0.12.1 has
      no wheel for the machine's Python 3.11), pruned, with the
      shared libraries its modules load beside libpython. Packs it all into
      one xz archive, splits that into parts of 58 MiB under .accel/
      (ignored by git) and prints the device calls to make, one right after
      the other (the machine keeps /tmp for 100 s after a call): one per
      part, then the run.

  tools/accel_bench.py device-part N    (on the machine, by those calls)
  tools/accel_bench.py device-run       (on the machine)
      Keep part N in /tmp/devtrace-accel; check and unpack the archive, then
      run, each in a process of its own (one process at a time holds a TPU):
      examples/heterogeneous.py under the fork and under upstream,
      tests/heterogeneous_test.py under the fork, and benchmarks/accel.py
      five times per environment, alternating. What they print lands in
      $OUT: heterogeneous-fork.txt, heterogeneous-upstream.txt,
      heterogeneous_test.txt, bench.jsonl (one line per benchmark process)
      and run.txt (what ran, its exit status and time). It exits 1 if the
      fork's example or test failed.

  tools/accel_bench.py report FILE
      Prints the accelerator table (with --out docs/benchmarks.md, writes it
      there) from the bench.jsonl the run brought back: the best over the
      processes of each environment.

`tools/accel_bench.py device-run --platform cpu` runs the same here on the
CPU, with .venv and .venv-upstream (a smoke of everything but the packing).
"""

import argparse
import hashlib
import io
import json
import os
import re
from pathlib import Path
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

import forklib

sys.path.insert(0, str(forklib.REPO / "benchmarks"))
from run import fmt_time  # noqa: E402  (the benchmarks' own format)

REPO = forklib.REPO
PARTS = REPO / ".accel"
STAGE = REPO / "build/accel"
PART_SIZE = 58 << 20
REMOTE = Path("/tmp/devtrace-accel")
ARCHIVE = "stage.tar.xz"
CUDA_PLUGINS = ("jax-cuda13-plugin", "jax-cuda13-pjrt")  # at jaxlib's version
COMMON = ("jaxlib", "numpy", "scipy", "ml_dtypes", "opt_einsum", "absl_py")
ROUNDS = 5  # benchmark processes per environment, alternating
TIMEOUT = 240  # seconds, one process on the machine
BEGIN, END = "<!-- accelerator: begin -->", "<!-- accelerator: end -->"
# What the staged Python leaves out: tests, IDLE, Tk, pip's bootstrap, the
# static library and headers (about 250 of its 308 MB).
_PRUNE = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip",
          "site-packages", "__pycache__", "config-*-linux-gnu")
# The C library's own libraries: every Linux machine has them, in the version
# of its C library, which they must match.
_SYSTEM_LIBS = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl.so",
                "libpthread.so", "librt.so", "libutil.so", "libresolv.so",
                "libnss_", "libanl.so", "libpython")


def libtpu_requirement(wheel: Path) -> str:
  """The libtpu that jax's [tpu] extra names, from the wheel's METADATA."""
  with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    text = z.read(meta).decode()
  for line in text.splitlines():
    m = re.match(r"Requires-Dist: (libtpu\S*);\s*extra == .tpu.", line)
    if m:
      return m.group(1)
  raise SystemExit(f"accel_bench: {wheel.name} names no libtpu for [tpu]")


def _fetch(names: list[str], dest: Path) -> list[Path]:
  """Wheels for CPython 3.12 on x86-64 Linux, downloaded once into `dest`.

  `dest` is a folder per set of `names`, so that a new pin fetches anew.
  """
  dest = dest / hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
  dest.mkdir(parents=True, exist_ok=True)
  if not list(dest.glob("*.whl")):
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps",
         "--only-binary=:all:", "--python-version", "3.12",
         "--implementation", "cp", "--platform", "manylinux_2_27_x86_64",
         "--platform", "manylinux_2_28_x86_64", "--platform",
         "manylinux_2_31_x86_64", "-d", str(dest), *names], check=True)
  return sorted(dest.glob("*.whl"))


def _wheels(platform: str) -> dict[str, list[Path]]:
  """The wheels of each folder: fork, upstream, common."""
  pins = forklib.load_pins()
  fork = sorted((REPO / "dist").glob("jax-*+devtrace*-py3-none-any.whl"))
  house = REPO / "build/wheelhouse"
  common = [w for name in COMMON for w in sorted(house.glob(
      f"{name}-{pins.jaxlib_version}-*.whl" if name == "jaxlib" else
      f"{name}-*.whl"))]
  if not (fork and len(common) == len(COMMON)):
    sys.exit("accel_bench: run ./setup.sh first (it makes the fork's wheel "
             "and fetches jaxlib and what it needs)")
  if platform == "tpu":
    common += _fetch([libtpu_requirement(forklib.fetch_upstream(pins))],
                     REPO / "build/tpu-wheels")
  else:
    common += _fetch([f"{p}=={pins.jaxlib_version}" for p in CUDA_PLUGINS],
                     REPO / "build/gpu-wheels")
  return {"fork": [fork[-1]], "upstream": [forklib.fetch_upstream(pins)],
          "common": common}


def _needed_libs(files: list[Path]) -> set[Path]:
  """The shared libraries `files` load that are not the C library's."""
  out = set()
  for f in files:
    res = subprocess.run(["ldd", str(f)], capture_output=True, text=True,
                         check=False)
    for line in res.stdout.splitlines():
      parts = line.split()
      if (len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/")
          and not parts[0].startswith(_SYSTEM_LIBS)):
        out.add(Path(parts[2]))
  return out


def stage_python(dest: Path):
  """This Python 3.12, pruned, with the libraries its modules load."""
  home = Path(sys.base_prefix)
  ver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
  (dest / "bin").mkdir(parents=True)
  shutil.copy2(home / "bin" / ver, dest / "bin" / ver)
  os.symlink(ver, dest / "bin/python3")
  lib = dest / "lib"
  shutil.copytree(home / "lib" / ver, lib / ver, symlinks=True,
                  ignore=shutil.ignore_patterns(*_PRUNE, "_tkinter*"))
  libpython = sorted((home / "lib").glob(f"lib{ver}.so*"))
  for f in libpython:
    shutil.copy2(f, lib / f.name, follow_symlinks=False)
  modules = sorted((lib / ver / "lib-dynload").glob("*.so"))
  for f in _needed_libs([home / "bin" / ver, *libpython, *modules]):
    shutil.copy2(f, lib / f.name)


def prepare(args):
  shutil.rmtree(STAGE, ignore_errors=True)
  shutil.rmtree(PARTS, ignore_errors=True)
  STAGE.mkdir(parents=True)
  PARTS.mkdir()
  root = STAGE / "root"
  for folder, wheels in _wheels(args.platform).items():
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index",
         "--no-deps", "--no-compile", "--no-cache-dir", "--target",
         str(root / folder), *map(str, wheels)], check=True)
  if args.platform == "tpu":
    stage_python(root / "python")
  (root / "platform").write_text(args.platform + "\n")
  archive = STAGE / ARCHIVE
  t = time.perf_counter()
  with open(archive, "wb") as f:
    tar = subprocess.Popen(["tar", "-C", str(root), "-cf", "-", "."],
                           stdout=subprocess.PIPE)
    subprocess.run(["xz", f"-T{os.cpu_count()}", "-6", "-c"],
                   stdin=tar.stdout, stdout=f, check=True)
    if tar.wait():
      sys.exit("accel_bench: tar failed")
  n = write_parts(archive.read_bytes(), PARTS, PART_SIZE)
  print(f"{archive.stat().st_size / 2**20:.0f} MiB of xz in "
        f"{time.perf_counter() - t:.0f} s: {n} parts of at most "
        f"{PART_SIZE >> 20} MiB in {PARTS.name}/; the device calls, each "
        "right after the one before:")
  for i in range(n):
    print(f'  run(command="python3 tools/accel_bench.py device-part {i}", '
          f'carry=[".accel/part-{i:02d}", ".accel/sha256"], timeout_s=120)')
  print('  run(command="PYTHONUNBUFFERED=1 python3 tools/accel_bench.py '
        'device-run", carry=[".accel/sha256"], timeout_s=600)')
  print("then: tools/accel_bench.py report --out docs/benchmarks.md "
        "<files_at>/bench.jsonl")


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
    sys.exit("accel_bench: the parts do not make the archive (a part is "
             f"missing or stale): {[p.name for p in parts]}")
  return data


def device_part(args):
  REMOTE.mkdir(parents=True, exist_ok=True)
  name = f"part-{args.n:02d}"
  shutil.copy(PARTS / name, REMOTE / name)
  print(f"kept {name}: {sorted(p.name for p in REMOTE.glob('part-*'))}")


def _unpack() -> str:
  """Unpacks the parts (once per machine); returns the platform packed."""
  root = REMOTE / "root"
  if not (root / "platform").exists():
    data = io.BytesIO(read_parts(REMOTE, PARTS / "sha256"))
    with tarfile.open(fileobj=data, mode="r:xz") as tar:
      if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
        tar.extractall(root, filter="data")
      else:
        tar.extractall(root)
  return (root / "platform").read_text().strip()


def _environments(platform: str) -> dict[str, tuple[list[str], dict]]:
  """The interpreter and environment of the fork and of upstream."""
  if platform == "cpu":  # a smoke here: this repository's two environments
    return {env: ([str(REPO / venv / "bin/python")],
                  dict(os.environ, JAX_PLATFORMS="cpu"))
            for env, venv in (("fork", ".venv"),
                              ("upstream", ".venv-upstream"))}
  root = REMOTE / "root"
  python = root / "python/bin/python3"  # staged for a TPU, not for a GPU
  staged = python.exists()
  out = {}
  for env in ("fork", "upstream"):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONHOME", "PYTHONSTARTUP")}
    # The machine's PYTHONPATH names its own JAX, for its own Python: replaced.
    # Its TPU_ variables stay.
    environ["PYTHONPATH"] = f"{root / env}:{root / 'common'}"
    if staged:
      environ["LD_LIBRARY_PATH"] = ":".join(
          [str(root / "python/lib")] +
          [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])
    if platform == "tpu":
      environ["JAX_PLATFORMS"] = "tpu,cpu"
    out[env] = ([str(python) if staged else sys.executable], environ)
  return out


def _text(v) -> str:
  return v.decode(errors="replace") if isinstance(v, bytes) else (v or "")


def _run(cmd: list[str], environ: dict, log) -> subprocess.CompletedProcess:
  """Runs `cmd`; once more after 5 s if the chip was not free yet."""
  for attempt in range(2):
    t = time.perf_counter()
    try:
      res = subprocess.run(cmd, env=environ, capture_output=True, text=True,
                           timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired as e:
      res = subprocess.CompletedProcess(
          cmd, 124, _text(e.stdout), _text(e.stderr) + "\ntimed out")
    took = time.perf_counter() - t
    shown = " ".join([Path(cmd[0]).name, Path(cmd[1]).name, *cmd[2:]])
    print(f"{shown}: rc {res.returncode} in {took:.1f} s", file=log,
          flush=True)
    busy = "lockfile" in res.stderr or "already in use" in res.stderr
    if not (res.returncode and busy and attempt == 0):
      return res
    time.sleep(5)
  return res


def device_run(args):
  out = Path(os.environ.get("OUT", REPO / "build/accel-out"))
  out.mkdir(parents=True, exist_ok=True)
  start = time.perf_counter()
  platform = "cpu" if args.platform == "cpu" else _unpack()
  envs = _environments(platform)
  failed = []
  with open(out / "run.txt", "w") as log:
    print(f"unpacked and set up in {time.perf_counter() - start:.1f} s",
          file=log, flush=True)
    for env in ("fork", "upstream"):
      python, environ = envs[env]
      example = [*python, str(REPO / "examples/heterogeneous.py")]
      if platform == "cpu":
        example.append("--simulate")
      res = _run(example, environ, log)
      (out / f"heterogeneous-{env}.txt").write_text(res.stdout + res.stderr)
      if env == "fork" and res.returncode:
        failed.append("examples/heterogeneous.py")
    python, environ = envs["fork"]
    res = _run([*python, str(REPO / "tests/heterogeneous_test.py")],
               environ, log)
    (out / "heterogeneous_test.txt").write_text(res.stdout + res.stderr)
    if res.returncode:
      failed.append("tests/heterogeneous_test.py")
    with open(out / "bench.jsonl", "w") as bench:
      for i in range(ROUNDS):
        order = ("fork", "upstream") if i % 2 == 0 else ("upstream", "fork")
        for env in order:
          python, environ = envs[env]
          cmd = [*python, str(REPO / "benchmarks/accel.py"), "--label", env,
                 "--platform", platform]
          if platform == "cpu":
            cmd += ["--repeats", "2", "--mlp", "128,2,16"]
          res = _run(cmd, environ, log)
          if res.returncode:
            print(res.stdout, res.stderr, file=log, flush=True)
            failed.append(f"benchmarks/accel.py ({env})")
            continue
          bench.write(res.stdout.strip() + "\n")
          bench.flush()
    print(f"all in {time.perf_counter() - start:.1f} s; failed: "
          f"{failed or 'none'}", file=log, flush=True)
  print((out / "run.txt").read_text(), end="")
  if failed:
    sys.exit(1)


def table(runs: list[dict]) -> str:
  """The markdown table of the benchmark processes `runs`."""
  by: dict[str, list[dict]] = {}
  for r in runs:
    by.setdefault(r["label"], []).append(r)
  fork, up = by["fork"], by["upstream"]
  f0 = fork[0]
  lines = [
      (f"{f0['platform'].upper()}: {f0['device']}, upstream jax "
       f"{up[0]['jax']} against the fork, jax {f0['jax']} (flags on), both "
       f"on jaxlib {f0['jaxlib']}{f0.get('plugin', '')}, Python "
       f"{f0['python']}; {len(fork)} processes each, alternating; the best "
       "of each process's repetitions, then the best over processes. `a` "
       "is the accelerator (the default device), `c` the host's CPU."),
      "",
      "| measurement | upstream | fork | fork/upstream |",
      "|---|---|---|---|"]
  for name in f0["results"]:
    u = min(r["results"][name] for r in up)
    f = min(r["results"][name] for r in fork)
    lines.append(f"| {name} | {fmt_time(u)} | {fmt_time(f)} | {f / u:.3f} |")
  lines += ["", "| where it lands | upstream | fork |", "|---|---|---|"]
  for name in f0["facts"]:
    lines.append(f"| {name} | {up[0]['facts'][name]} | {f0['facts'][name]} |")
  return "\n".join(lines)


def report(args):
  runs = [json.loads(line) for line in args.file.read_text().splitlines()
          if line.strip()]
  text = table(runs)
  print(text)
  if args.out:
    page = args.out.read_text()
    a, b = page.index(BEGIN) + len(BEGIN), page.index(END)
    args.out.write_text(page[:a] + "\n" + text + "\n" + page[b:])


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  sub = ap.add_subparsers(dest="cmd", required=True)
  p = sub.add_parser("prepare")
  p.add_argument("--platform", choices=("tpu", "gpu"), default="tpu")
  p.set_defaults(fn=prepare)
  p = sub.add_parser("device-part")
  p.add_argument("n", type=int)
  p.set_defaults(fn=device_part)
  p = sub.add_parser("device-run")
  p.add_argument("--platform", choices=("cpu",), default=None,
                 help="cpu: a smoke here (default: the platform packed)")
  p.set_defaults(fn=device_run)
  p = sub.add_parser("report")
  p.add_argument("file", type=Path)
  p.add_argument("--out", type=Path, default=None,
                 help="the page to write the table into (docs/benchmarks.md)")
  p.set_defaults(fn=report)
  args = ap.parse_args()
  args.fn(args)


if __name__ == "__main__":
  main()
