#!/usr/bin/env python3
"""Runs upstream JAX's own tests against the fork and against upstream.

  python tools/upstream_tests.py --jax-repo DIR [--fork-tree TREE]
      [-k EXPR] [-n N] TEST_FILE...

DIR is a clone (or bare git directory) of jax-ml/jax: its tests/ and
conftest.py at HEAD are extracted into build/upstream-tests (never into the
repository's tracked files). Each TEST_FILE (e.g. api_test.py) runs in
.venv-upstream and in .venv (or, with --fork-tree, in .venv with TREE, a
`tools/pq.py checkout`, first on sys.path), on 8 virtual CPU devices. The
report lists, per file, how many tests passed and failed on each, and every
test that passes upstream and fails on the fork. Exit status 1 when there is
any such test.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def extract_tests(jax_repo: Path, dest: Path) -> str:
  head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=jax_repo, text=True,
                        capture_output=True, check=True).stdout.strip()
  stamp = dest / ".commit"
  if stamp.exists() and stamp.read_text() == head:
    return head
  if dest.exists():
    shutil.rmtree(dest)
  dest.mkdir(parents=True)
  with tempfile.TemporaryDirectory() as tmp:
    tar = Path(tmp) / "tests.tar"
    # pyproject.toml holds upstream's pytest settings (warnings as errors).
    subprocess.run(["git", "archive", "--format=tar", "-o", str(tar), "HEAD",
                    "tests", "conftest.py", "pyproject.toml"], cwd=jax_repo,
                   check=True, stderr=subprocess.DEVNULL)
    with tarfile.open(tar) as t:
      t.extractall(dest, filter="data")
  stamp.write_text(head)
  return head


_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")


def make_importable(python: Path, tests_dir: Path, test_file: str) -> list[str]:
  """Drops names the installed jax lacks from a test file's imports.

  The tests come from a jax-ml/jax commit that need not be the pinned
  release: a name imported there but absent here becomes None, so that only
  the tests that use it fail (on both environments alike).
  """
  dropped = []
  path = tests_dir / "tests" / test_file
  for _ in range(20):
    r = subprocess.run([str(python), "-m", "pytest", "-q", "--co",
                        "-p", "no:cacheprovider", f"tests/{test_file}"],
                       cwd=tests_dir, capture_output=True, text=True,
                       env=_test_env(None))
    m = _CANNOT_IMPORT.search(r.stdout + r.stderr)
    if not m:
      return dropped
    name, module = m.groups()
    text = path.read_text()
    pat = re.compile(rf"^from {re.escape(module)} import ([^\n(]*\b{name}\b[^\n]*)$",
                     re.M)
    mm = pat.search(text)
    if not mm:
      return dropped
    names = [n.strip() for n in mm.group(1).split(",")
             if n.strip() and n.strip() != name]
    repl = (f"from {module} import {', '.join(names)}\n" if names else "")
    repl += f"{name} = None  # not in the installed jax"
    path.write_text(text[:mm.start()] + repl + text[mm.end():])
    dropped.append(f"{module}.{name}")
  return dropped


def _test_env(pythonpath: str | None) -> dict[str, str]:
  env = dict(os.environ)
  env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                      " --xla_force_host_platform_device_count=8").strip()
  env["JAX_PLATFORMS"] = "cpu"
  if pythonpath:
    env["PYTHONPATH"] = pythonpath
  return env


def outcomes(xml_path: Path) -> dict[str, str]:
  out = {}
  if not xml_path.exists():
    return out
  for case in ET.parse(xml_path).getroot().iter("testcase"):
    name = f"{case.get('classname')}::{case.get('name')}"
    kinds = {child.tag for child in case}
    if kinds & {"failure", "error"}:
      out[name] = "failed"
    elif "skipped" in kinds:
      out[name] = "skipped"
    else:
      out[name] = "passed"
  return out


def run(python: Path, tests_dir: Path, files: list[str], xml: Path, n: int,
        k: str | None, pythonpath: str | None) -> int:
  env = _test_env(pythonpath)
  cmd = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(tests_dir),
         "--junitxml", str(xml), "-o", "junit_family=xunit1",
         *(["-n", str(n)] if n > 1 else []), *(["-k", k] if k else []),
         *[f"tests/{f}" for f in files]]
  r = subprocess.run(cmd, cwd=tests_dir, env=env, capture_output=True,
                     text=True)
  tail = (r.stdout + r.stderr).strip().splitlines()[-1:]
  print(f"  {python.parent.parent.name}: {' '.join(tail)}", flush=True)
  return r.returncode


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--jax-repo", type=Path, required=True)
  ap.add_argument("--fork-tree", type=Path,
                  help="a pq checkout to test instead of the installed fork")
  ap.add_argument("-k", help="pytest -k expression")
  ap.add_argument("-n", type=int, default=1,
                  help="pytest-xdist workers (1: sequential; with more, test "
                  "order varies and some upstream tests flake on both)")
  ap.add_argument("--out", type=Path, default=REPO / "build" / "upstream-tests")
  ap.add_argument("files", nargs="+")
  args = ap.parse_args(argv)

  tests_dir = args.out / "src"
  head = extract_tests(args.jax_repo, tests_dir)
  print(f"upstream tests from jax-ml/jax {head[:12]}")
  regressions = []
  for f in args.files:
    print(f"{f}:", flush=True)
    dropped = make_importable(REPO / ".venv-upstream" / "bin" / "python",
                              tests_dir, f)
    if dropped:
      print(f"  (absent from the installed jax, made None: "
            f"{', '.join(dropped)})")
    res = {}
    for env_name, pythonpath in ((".venv-upstream", None),
                                 (".venv", str(args.fork_tree.resolve())
                                  if args.fork_tree else None)):
      xml = args.out / f"{Path(f).stem}.{env_name.strip('.')}.xml"
      xml.unlink(missing_ok=True)
      run(REPO / env_name / "bin" / "python", tests_dir, [f], xml, args.n,
          args.k, pythonpath)
      res[env_name] = outcomes(xml)
    up, fork = res[".venv-upstream"], res[".venv"]
    counts = {e: collections.Counter(r.values()) for e, r in res.items()}
    print(f"  upstream {dict(counts['.venv-upstream'])}; "
          f"fork {dict(counts['.venv'])}")
    for name, outcome in sorted(up.items()):
      if outcome == "passed" and fork.get(name, "missing") != "passed":
        regressions.append((f, name, fork.get(name, "missing")))
  print(f"\n{len(regressions)} tests pass upstream and fail on the fork")
  for f, name, outcome in regressions:
    print(f"  {name} ({outcome})")
  return 1 if regressions else 0


if __name__ == "__main__":
  sys.exit(main())
