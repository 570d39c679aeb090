#!/usr/bin/env python3
"""Applies the series to the release's files with `git am`, as a maintainer would.

  .venv/bin/python tools/branch.py [--step fix|1|2] [--jax-repo JAX]
                                   [--out DIR] [--no-tests] [pytest args]

A stand-in for a jax-ml/jax checkout at the release tag: a git repository
holding the `jax/` files of the pinned release (PyPI's wheel, sha256
checked), tagged as upstream tags it (`jax-v0.12.1`). The release's tests
are in neither its wheel nor its sdist: with --jax-repo (a jax-ml/jax
clone), the upstream test files that the series changes are added from
`tests_commit` (upstream.toml) in a commit of their own; without it, their
hunks are left out (`git am --exclude`). Every patch whose `Series-Step` is
not `fork`, up to the cut after STEP (default: the whole series), is
applied with `git am`, in order: the fork-only patches (the version label,
the fork's defaults) are what a branch for upstream leaves out, so the flags
are off there, as proposed. Then, with the tree first on the Python path:

1. a smoke: jax imports, and under jit `x.device` of an argument committed
   to cpu:3 is cpu:3 with the flags on, while the default (flags off) is
   upstream's AttributeError (from step 1 on);
2. the series' own tests (the tree's tests/, which its patches add) and
   the project's tests/ (but for the build's and the doc snippets', which
   describe the fork's wheel, and the tools' that run in .venv and
   .venv-upstream whatever jax is on the path), with every flag on; from
   step 1 on, the project's need step 1;
3. the series' own tests again, with the flags at their defaults (off).

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
# The fork's wheel (build, doc snippets), and tools that run their own
# environments (.venv, .venv-upstream), not the jax under test: the first run
# of ./test.sh has run them.
_NOT_HERE = ("tests/build_test.py", "tests/doc_snippets_test.py",
             "tests/upstream_tests_tool_test.py",
             "tests/export_upstream_test.py",
             "tests/benchmarks_run_test.py", "tests/accel_bench_test.py")
_FLAGS_ON = {"JAX_DEVICE_TRACING": "1", "JAX_DEVICE_TRACING_CROSS_DEVICE": "1"}

_SMOKE = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
x = jax.device_put(jnp.arange(3.0), jax.devices()[3])
f = lambda x: x + jnp.zeros(x.shape, device=x.device)
if not hasattr(jax.config, "jax_device_tracing"):
  pass  # the independent fixes alone
elif os.environ.get("JAX_DEVICE_TRACING") == "1":
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


def make_branch(out: Path, patch_dir: Path = forklib.REPO / "patches",
                step: str = forklib.STEPS[-1], jax_repo: Path | None = None
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
  series = [p for p in forklib.series_cut(forklib.patch_series(patch_dir),
                                          step)
            if forklib.patch_step(p) != "fork"]
  tests = forklib.upstream_test_files(series)
  exclude = forklib.write_upstream_tests(tree, tests, jax_repo,
                                         pins.tests_commit)
  if tests and not exclude:
    git("add", "-A", cwd=tree)
    git(*_IDENTITY, "commit", "-q", "-m",
        f"{', '.join(tests)} from jax-ml/jax {pins.tests_commit[:12]}\n\n"
        "The release's tests are in neither its wheel nor its sdist.",
        cwd=tree)
  for patch in series:
    r = git(*_IDENTITY, "am", "-q", *exclude, str(patch.resolve()), cwd=tree,
            check=False)
    if r.returncode:
      git("am", "--abort", cwd=tree, check=False)
      raise BuildError(f"git am stops at {patch.name}:\n{r.stdout}{r.stderr}")
  return tree, series


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--out", type=Path, default=forklib.REPO / "build" / "branch")
  ap.add_argument("--step", choices=forklib.STEPS[1:], default=forklib.STEPS[-1],
                  help="the cut of the series to apply (default: all of it)")
  ap.add_argument("--jax-repo", type=Path,
                  help="a jax-ml/jax clone: upstream's test files")
  ap.add_argument("--no-tests", action="store_true",
                  help="apply and smoke only")
  args, pytest_args = ap.parse_known_args(argv)
  python = forklib.REPO / ".venv" / "bin" / "python"
  if not python.exists():
    print("branch: no .venv; run ./setup.sh --no-demo first", file=sys.stderr)
    return 2
  try:
    tree, series = make_branch(args.out, step=args.step,
                               jax_repo=args.jax_repo)
  except BuildError as e:
    print(f"branch: {e}", file=sys.stderr)
    return 1
  head = git("rev-parse", "--short", "HEAD", cwd=tree).stdout.strip()
  left_out = forklib.upstream_test_files(series)
  print(f"branch: {len(series)} patches (up to step {args.step}) applied "
        f"with git am onto {forklib.load_pins().release_tag} in {tree} "
        f"({head})" + (f"; without --jax-repo, their hunks of "
                       f"{', '.join(left_out)} are left out"
                       if left_out and args.jax_repo is None else ""),
        flush=True)
  env = {k: v for k, v in os.environ.items() if k not in _FLAGS_ON}
  env["PYTHONPATH"] = os.pathsep.join(
      p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)
  for flags in ({}, _FLAGS_ON):
    r = subprocess.run([str(python), "-c", _SMOKE], env={**env, **flags},
                       cwd=args.out)
    if r.returncode:
      return r.returncode
  if args.no_tests:
    return 0
  # The tests the series adds (upstream's own files, which it may change,
  # run with tools/upstream_tests.py).
  own = [str(t) for t in sorted(tree.glob("tests/*_test.py"))
         if t.relative_to(tree).as_posix() not in left_out]
  if any(not a.startswith("-") for a in pytest_args):
    runs = [(pytest_args, _FLAGS_ON)]
  else:
    project = (["tests", *(f"--ignore={t}" for t in _NOT_HERE)]
               if args.step != "fix" else [])
    runs = [([*pytest_args, *own, *project], _FLAGS_ON),
            ([*pytest_args, *own], {})]
  rc = 0
  for run_args, flags in runs:
    print(f"branch: tests with the flags {'on' if flags else 'at their defaults'}",
          flush=True)
    rc |= subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", *run_args],
        env={**env, **flags}, cwd=forklib.REPO).returncode
  return rc


if __name__ == "__main__":
  sys.exit(main())
