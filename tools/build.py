#!/usr/bin/env python3
"""Builds the fork's wheel: pinned upstream jax + the series.

  python tools/build.py [--upstream-wheel PATH] [--patches DIR] [--out DIR]
                        [--tests-out DIR] [--step fork|fix|1|2]

Steps: fetch the pinned upstream wheel from PyPI (or take --upstream-wheel)
and check its sha256; unpack it in a scratch folder; apply patches/*.patch
in order (new modules and test files come with their patches; the hunks of
upstream's test files, which the wheel does not have, are left out); stamp
the version 0.12.1+devtrace.N; write dist/jax-<version>-py3-none-any.whl,
and the series' test files (tests/ of the patched tree, which upstream's
wheel does not ship either) to build/series-tests.  Any failure stops the
build with a message naming the step, and leaves dist/ as it was.

--step builds the series cut after that step (tools/cut.py builds and tests
one): the patches up to it, versioned 0.12.1+devtrace.N.stepS.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--upstream-wheel", type=Path,
                  help="use this file instead of downloading (still verified)")
  ap.add_argument("--patches", type=Path, default=forklib.REPO / "patches")
  ap.add_argument("--out", type=Path, default=forklib.REPO / "dist")
  ap.add_argument("--tests-out", type=Path,
                  default=forklib.REPO / "build" / "series-tests",
                  help="where the series' test files go")
  ap.add_argument("--step", choices=forklib.STEPS,
                  help="build the cut of the series after this step")
  ap.add_argument("--quiet", action="store_true")
  args = ap.parse_args(argv)
  say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))

  try:
    pins = forklib.load_pins()
    version = forklib.fork_version(pins)
    step = args.step or forklib.STEPS[-1]
    if step != forklib.STEPS[-1]:
      version += f".step{step}"
    if args.upstream_wheel:
      wheel = forklib.verify_upstream(args.upstream_wheel, pins)
    else:
      wheel = forklib.fetch_upstream(pins)
    say(f"upstream: {wheel.name} (sha256 verified)")
    patches = forklib.patch_series(args.patches)
    patches = forklib.series_cut(patches, step)
    with tempfile.TemporaryDirectory(prefix="devtrace-stage-") as tmp:
      stage = Path(tmp) / "stage"
      forklib.unpack_upstream(wheel, stage)
      forklib.apply_series(stage, patches,
                           tuple(forklib.upstream_test_files(patches)))
      say(f"patches:  {len(patches)} applied")
      forklib.stamp_version(stage, version, pins)
      tests = Path(tmp) / "tests"
      forklib.stage_tests(stage, tests)  # not in the wheel
      # Only now, with everything applied, does anything reach dist/.
      out = forklib.build_wheel(stage, version, pins, args.out)
      shutil.rmtree(args.tests_out, ignore_errors=True)
      if tests.is_dir():
        shutil.copytree(tests, args.tests_out)
    for old in args.out.glob("jax-*.whl"):
      if old != out:
        old.unlink()
  except forklib.BuildError as e:
    print(f"build failed: {e}", file=sys.stderr)
    return 1
  say(f"wheel:    {out.relative_to(forklib.REPO) if out.is_relative_to(forklib.REPO) else out}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
