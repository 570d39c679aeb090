#!/usr/bin/env python3
"""Builds the series cut after a step and runs the tests with it.

  .venv/bin/python tools/cut.py STEP [pytest args]   # STEP: fix, 1 or 2

The series is ordered by step (each patch's `Series-Step:` header): fork-only
patches, then the independent fixes (step `fix`: against upstream jax, they
need nothing else from the series), then step 1 (the device in avals,
`x.device`, the join, placement before DCE, `device=`/`device_put`
honoured), then step 2 (several devices in one jit). A cut is upstream jax
and the patches up to and including STEP. This builds its wheel and its
test files (`build/cut-STEP/`, versioned 0.12.1+devtrace.N.stepSTEP),
unpacks the wheel, and runs pytest in .venv (./setup.sh makes it) with the
cut's jax first on the path.

Without test paths, a cut runs its own tests (those its patches add,
build/cut-STEP/tests), and, from step 1 on, the project's tests/, where
the tests that need a later step skip themselves
(`device_tracing_test_util.needs_cross_device`). The build's own tests and
the doc snippets, which describe the whole series, are left out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402

_NOT_FOR_CUTS = ("tests/build_test.py", "tests/doc_snippets_test.py",
                 "tests/upstream_tests_tool_test.py")


def _default_tests(step: str, cut_tests: Path) -> list[str]:
  """What a cut runs when no test is named.

  Before step 1 the project's tests (tests/) exercise what the fixes alone do
  not give, so those cuts run the cut's own tests only.
  """
  tests = [str(cut_tests)] if cut_tests.is_dir() else []
  if forklib.STEPS.index(step) >= forklib.STEPS.index("1"):
    tests.append("tests")
  return tests


def main(argv=None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  # The cut after the fork-only patches is upstream jax with the fork's
  # version label: build it with `tools/build.py --step fork`; its tests are
  # upstream's (tools/upstream_tests.py).
  if not argv or argv[0] not in forklib.STEPS[1:]:
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    return 2
  step, pytest_args = argv[0], argv[1:]
  repo = forklib.REPO
  python = repo / ".venv" / "bin" / "python"
  if not python.exists():
    print("cut: no .venv; run ./setup.sh --no-demo first", file=sys.stderr)
    return 2
  out = repo / "build" / f"cut-{step}"
  shutil.rmtree(out, ignore_errors=True)
  r = subprocess.run([sys.executable, str(repo / "tools" / "build.py"),
                      "--step", step, "--out", str(out / "dist"),
                      "--tests-out", str(out / "tests")])
  if r.returncode:
    return r.returncode
  wheel, = (out / "dist").glob("jax-*.whl")
  site = out / "site"
  forklib.unpack_upstream(wheel, site)  # a wheel is a zip: unpacked as is
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p))
  check = subprocess.run(
      [str(python), "-c", "import jax; print(jax.__version__, jax.__file__)"],
      env=env, capture_output=True, text=True, check=True).stdout.strip()
  print(f"cut after step {step}: jax {check}", flush=True)
  if not any(Path(repo, a.split("::")[0]).exists() for a in pytest_args
             if not a.startswith("-")):
    pytest_args = [*pytest_args, *_default_tests(step, out / "tests")]
  pytest_args += [f"--ignore={t}" for t in _NOT_FOR_CUTS]
  rc = subprocess.run([str(python), "-m", "pytest", "-p",
                       "no:cacheprovider", *pytest_args],
                      env=env, cwd=repo).returncode
  if rc == 5:  # only files left out of cuts were named: nothing to run
    print(f"cut after step {step}: no tests to run", flush=True)
    return 0
  return rc


if __name__ == "__main__":
  sys.exit(main())
