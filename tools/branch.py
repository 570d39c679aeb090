#!/usr/bin/env python3
"""Applies the series to the release's files with `git am`, as a maintainer would.

  .venv/bin/python tools/branch.py [--out DIR] [--no-tests] [pytest args]

A stand-in for a jax-ml/jax checkout at the release tag: a git repository
holding the `jax/` files of the pinned release (PyPI's wheel, sha256
checked), tagged as upstream tags it (`jax-v0.12.0.1`). Every patch whose
`Series-Step` is not `fork` is applied with `git am`, in order: the fork-only
patches (the version label, the fork's defaults) are what a branch for
upstream leaves out, so the flags are off there, as proposed. Then, with
the tree first on the Python path:

1. a smoke: jax imports, and under jit `x.device` of an argument committed
   to cpu:3 is cpu:3 with the flags on, while the default (flags off) is
   upstream's AttributeError;
2. the series' own tests (tests/, but for the build's and the doc
   snippets', which describe the fork's wheel), with both flags on.

A patch that does not apply stops it with the patch's name and git's
output. DIR defaults to build/branch (the repository is made anew).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402
from forklib import BuildError, git  # noqa: E402

_IDENTITY = ("-c", "user.name=devtrace branch", "-c",
             "user.email=devtrace-branch@localhost")
_NOT_HERE = ("tests/build_test.py", "tests/doc_snippets_test.py",
             "tests/upstream_tests_tool_test.py")
_FLAGS_ON = {"JAX_DEVICE_TRACING": "1", "JAX_DEVICE_TRACING_CROSS_DEVICE": "1"}

_SMOKE = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
x = jax.device_put(jnp.arange(3.0), jax.devices()[3])
f = lambda x: x + jnp.zeros(x.shape, device=x.device)
if os.environ.get("JAX_DEVICE_TRACING") == "1":
  assert jax.jit(f)(x).device == jax.devices()[3]
else:
  try:
    jax.jit(f)(x)
  except AttributeError:
    pass
  else:
    raise AssertionError("flags off, x.device under jit did not raise")
print("smoke:", jax.__version__, jax.__file__, "ok")
"""


def make_branch(out: Path, patch_dir: Path = forklib.REPO / "patches"
                ) -> tuple[Path, list[Path]]:
  """The release's files in a git repository, with the series applied."""
  pins = forklib.load_pins()
  wheel = forklib.fetch_upstream(pins)
  tree = out / "jax-checkout"
  shutil.rmtree(out, ignore_errors=True)
  tree.mkdir(parents=True)
  unpacked = out / "wheel"
  forklib.unpack_upstream(wheel, unpacked)
  shutil.copytree(unpacked / "jax", tree / "jax")
  git("init", "-q", "-b", "main", cwd=tree)
  git("add", "-A", cwd=tree)
  git(*_IDENTITY, "commit", "-q", "-m",
      f"jax {pins.jax_version}: the release's jax/ files ({pins.jax_filename})",
      cwd=tree)
  git("tag", pins.release_tag, cwd=tree)
  series = [p for p in forklib.patch_series(patch_dir)
            if forklib.patch_step(p) != "fork"]
  for patch in series:
    r = git(*_IDENTITY, "am", "-q", str(patch.resolve()), cwd=tree,
            check=False)
    if r.returncode:
      git("am", "--abort", cwd=tree, check=False)
      raise BuildError(f"git am stops at {patch.name}:\n{r.stdout}{r.stderr}")
  return tree, series


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--out", type=Path, default=forklib.REPO / "build" / "branch")
  ap.add_argument("--no-tests", action="store_true",
                  help="apply and smoke only")
  args, pytest_args = ap.parse_known_args(argv)
  python = forklib.REPO / ".venv" / "bin" / "python"
  if not python.exists():
    print("branch: no .venv; run ./setup.sh --no-demo first", file=sys.stderr)
    return 2
  try:
    tree, series = make_branch(args.out)
  except BuildError as e:
    print(f"branch: {e}", file=sys.stderr)
    return 1
  head = git("rev-parse", "--short", "HEAD", cwd=tree).stdout.strip()
  print(f"branch: {len(series)} patches applied with git am onto "
        f"{forklib.load_pins().release_tag} in {tree} ({head})", flush=True)
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p))
  for flags in ({}, _FLAGS_ON):
    r = subprocess.run([str(python), "-c", _SMOKE], env={**env, **flags},
                       cwd=args.out)
    if r.returncode:
      return r.returncode
  if args.no_tests:
    return 0
  if not any(not a.startswith("-") for a in pytest_args):
    pytest_args = [*pytest_args, "tests"]
  pytest_args += [f"--ignore={t}" for t in _NOT_HERE]
  return subprocess.run(
      [str(python), "-m", "pytest", "-p", "no:cacheprovider", *pytest_args],
      env={**env, **_FLAGS_ON}, cwd=forklib.REPO).returncode


if __name__ == "__main__":
  sys.exit(main())
