#!/usr/bin/env python3
"""Runs upstream JAX's own tests against the fork and against upstream.

  python tools/upstream_tests.py --jax-repo DIR [--ref REF] [--fork-tree TREE]
      [--flags-off] [--devices N] [--out OUT] [-k EXPR] [-n N] TEST...

DIR is a clone (or bare git directory) of jax-ml/jax: its tests/, conftest.py
and pyproject.toml at REF (a commit, tag or branch; default HEAD) are
extracted into OUT/src (OUT defaults to build/upstream-tests; never the
repository's tracked files), and re-extracted when REF resolves to another
commit. Each TEST is a file of tests/ (api_test.py) or a pytest node id in one
(api_test.py::APITest::test_jit_basic). The tests of each file run in
.venv-upstream and in .venv (or, with --fork-tree, in .venv with TREE, a
`tools/pq.py checkout`, first on sys.path), on 8 virtual CPU devices
(N with --devices N, below). Names that the test file imports from jax but
the installed jax lacks are bound to None first, so that only the tests
that use them fail (on both alike).
Where the series changes an upstream test's expectation (a hunk of the
test file in a patch), the extracted file gets the series' hunks, so that
both run the test as the series has it. The report lists, per file, how
many tests passed and failed on each, and every test that passes upstream
and fails on the fork.

--flags-off runs the fork with every device-tracing flag off
(JAX_DEVICE_TRACING=0, JAX_DEVICE_TRACING_CROSS_DEVICE=0) and applies only
the hunks of the patches proposed upstream (not the fork-only ones, whose
changes follow the fork's defaults): the series as upstream would have it.

--devices N runs both on N virtual CPU devices instead of 8 (--devices 1:
what most users have, one device). Upstream's test files ask for 8 at
import (`jtu.request_cpu_devices(8)`, which overrides XLA_FLAGS), so the
pytest runs load the plugin tools/pytest_plugins/devtrace_cpu_devices.py
(`-p`, with DEVTRACE_CPU_DEVICES=N), which fixes the count before the files
load; the tests that need more devices skip, as upstream's own do. Use an
--out of its own, or the 8-device runs' reports there are overwritten.

Exit status: 0 when every run gave a verdict and no test passes upstream and
fails on the fork; 1 when some test does; 2 when some run gave no verdict
(pytest stopped with an error: a collection error, a usage error such as an
invalid -k, an internal error, an interruption; or no test ran; or a test file
could not be made importable). Each such problem is named, with the file, the
environment and the relevant lines of pytest's output (all of which is kept
in OUT/<file>.<env>.log).
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
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
sys.path.insert(0, str(REPO / "tools"))
import forklib  # noqa: E402

ENVS = (".venv-upstream", ".venv")
# The pytest plugin that fixes the number of CPU devices (--devices).
_DEVICES_PLUGIN = "devtrace_cpu_devices"
_DEVICES_PLUGIN_DIR = REPO / "tools" / "pytest_plugins"
_DEVICES_ENV = "DEVTRACE_CPU_DEVICES"
_FLAGS_OFF = {"JAX_DEVICE_TRACING": "0", "JAX_DEVICE_TRACING_CROSS_DEVICE": "0"}
_MARK = "# not in the installed jax"


class ToolError(Exception):
  """A problem that stops the whole run (bad repository, unknown ref)."""


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
  return subprocess.run(["git", *args], cwd=cwd, text=True,
                        capture_output=True)


def resolve_ref(jax_repo: Path, ref: str) -> str:
  """Returns the commit that `ref` names in `jax_repo`."""
  r = _git("rev-parse", "--verify", "--quiet", "--end-of-options",
           f"{ref}^{{commit}}", cwd=jax_repo)
  if r.returncode != 0:
    raise ToolError(f"{ref!r} is not a commit in {jax_repo}"
                    f"{': ' + r.stderr.strip() if r.stderr.strip() else ''}")
  return r.stdout.strip()


def extract_tests(jax_repo: Path, dest: Path, ref: str = "HEAD",
                  patches: tuple[Path, ...] = ()) -> str:
  """Extracts the tests of `ref` into `dest`; returns the commit.

  The hunks of `patches` that change upstream's test files are applied to
  the extracted files. `dest/.commit` records the commit extracted and the
  patches applied: the extraction is reused only while they are the same.
  """
  if not jax_repo.is_dir():
    raise ToolError(f"--jax-repo {jax_repo}: no such directory")
  commit = resolve_ref(jax_repo, ref)
  stamp = dest / ".commit"
  key = "\n".join([commit, *(forklib.sha256_of(p) for p in patches)])
  if stamp.exists() and stamp.read_text() == key:
    return commit
  if dest.exists():
    shutil.rmtree(dest)
  dest.mkdir(parents=True)
  # pyproject.toml holds upstream's pytest settings (warnings as errors);
  # older commits may lack it or conftest.py.
  present = _git("ls-tree", "--name-only", commit, "--", "tests",
                 "conftest.py", "pyproject.toml", cwd=jax_repo)
  paths = present.stdout.split()
  if present.returncode != 0 or "tests" not in paths:
    raise ToolError(f"commit {commit[:12]} of {jax_repo} has no tests/ folder"
                    f" {present.stderr.strip()}".rstrip())
  with tempfile.TemporaryDirectory() as tmp:
    tar = Path(tmp) / "tests.tar"
    r = _git("archive", "--format=tar", "-o", str(tar), commit, *paths,
             cwd=jax_repo)
    if r.returncode != 0:
      raise ToolError(f"git archive of {commit[:12]} failed: "
                      f"{r.stderr.strip()}")
    with tarfile.open(tar) as t:
      t.extractall(dest, filter="data")
  apply_test_hunks(dest, list(patches))
  stamp.write_text(key)
  return commit


def apply_test_hunks(dest: Path, patches: list[Path]) -> None:
  """Applies the series' hunks of upstream's test files in `dest`."""
  files = [f for f in forklib.upstream_test_files(patches)
           if (dest / f).is_file()]  # REF may lack one
  if not files:
    return
  # Outside any git work tree: there, git apply would skip these paths.
  with tempfile.TemporaryDirectory() as tmp:
    for f in files:
      (Path(tmp) / f).parent.mkdir(parents=True, exist_ok=True)
      shutil.copyfile(dest / f, Path(tmp) / f)
    include = [f"--include={f}" for f in files]
    for patch in patches:
      r = _git("apply", *include, str(patch.resolve()), cwd=Path(tmp))
      if r.returncode:
        raise ToolError(f"{patch.name}'s hunks of {', '.join(files)} do not "
                        f"apply to these tests (written against "
                        f"tests_commit in upstream.toml): {r.stderr.strip()}")
    for f in files:
      shutil.copyfile(Path(tmp) / f, dest / f)


_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
_NO_MODULE = re.compile(r"No module named '((?:jax|jaxlib)(?:\.\w+)*)'")


def _none_missing(text: str, module: str, name: str | None) -> str | None:
  """Binds the names that an absent jax name or module would give to None.

  With `name`, `name` is absent from `module`: every `from module import ...`
  that imports it loses it, and the name it would have bound (its alias, if
  any) is set to None. Without `name`, `module` itself is absent: every
  `from module[.sub] import a as b, c` and `import module[.sub] as m` binds
  its names to None instead. Parenthesised, multi-line imports and imports
  inside blocks are handled. Returns the new text, or None when there is no
  such import or it cannot be rewritten (it shares a line with other code).
  """
  try:
    tree = ast.parse(text)
  except SyntaxError:
    return None

  def in_module(mod):
    return mod == module or mod.startswith(module + ".")

  edits = []  # (node, names kept, names bound to None)
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      if name is not None and node.module == module:
        gone = [a for a in node.names if a.name == name]
      elif name is None and in_module(node.module):
        gone = list(node.names)
      else:
        continue
    elif isinstance(node, ast.Import) and name is None:
      gone = [a for a in node.names if in_module(a.name)]
      if any(a.asname is None for a in gone):
        return None  # `import jax.foo` binds `jax`: nothing to set to None
    else:
      continue
    if gone:
      edits.append((node, [a for a in node.names if a not in gone], gone))
  if not edits:
    return None
  lines = text.splitlines(keepends=True)
  for node, kept, gone in sorted(edits, key=lambda e: -e[0].lineno):
    first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
    indent, rest = first[:node.col_offset], last[node.end_col_offset:]
    if indent.strip() or not (rest.strip() == "" or
                              rest.strip().startswith("#")):
      return None
    new = []
    if kept:
      names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "")
                        for a in kept)
      new.append(f"from {node.module} import {names}"
                 if isinstance(node, ast.ImportFrom) else f"import {names}")
    for a in gone:
      new.append(f"{a.asname or a.name} = None  {_MARK}")
    comment = rest.strip()
    block = "".join(f"{indent}{s}\n" for s in new[:-1])
    block += f"{indent}{new[-1]}{'  ' + comment if comment else ''}\n"
    lines[node.lineno - 1:node.end_lineno] = [block]
  return "".join(lines)


def make_importable(python: Path, tests_dir: Path,
                    test_file: str) -> tuple[list[str], str | None]:
  """Drops names the installed jax lacks from a test file's imports.

  The tests come from a jax-ml/jax commit that need not be the pinned
  release: a name imported there but absent here becomes None, so that only
  the tests that use it fail (on both environments alike). Each absent name
  is edited once: an import error that an edit did not cure is a problem.

  Returns:
    The names set to None (including by an earlier run on the same
    extraction), and None or, when the file cannot be made importable, why.
  """
  path = tests_dir / "tests" / test_file
  seen = set()
  while True:
    r = subprocess.run([str(python), "-m", "pytest", "-q", "--co",
                        "-p", "no:cacheprovider", f"tests/{test_file}"],
                       cwd=tests_dir, capture_output=True, text=True,
                       env=_test_env(None))
    output = r.stdout + r.stderr
    m = _CANNOT_IMPORT.search(output)
    if m:
      name, module = m.groups()
      key, what = (module, name), f"{module}.{name}"
    else:
      m = _NO_MODULE.search(output)
      if not m:
        break
      key, what = (m.group(1), None), f"module {m.group(1)}"
      module, name = m.group(1), None
    line = m.group(0)
    if key in seen:
      return _dropped(path), (
          f"the import error came back after {what} was set to None: {line}")
    seen.add(key)
    text = path.read_text()
    new = _none_missing(text, module, name)
    if new is None or new == text:
      return _dropped(path), (
          f"{line}, and tests/{test_file} has no import of it that can be "
          f"rewritten (it may come from another file)")
    path.write_text(new)
  return _dropped(path), None


def _dropped(path: Path) -> list[str]:
  if not path.exists():
    return []
  return [line.split("=")[0].strip() for line in path.read_text().splitlines()
          if line.rstrip().endswith(_MARK)]


def _test_env(pythonpath: str | None,
              devices: int | None = None) -> dict[str, str]:
  """The environment of a pytest run: 8 CPU devices, or `devices` with the
  plugin that fixes the count on the path (the run loads it with -p)."""
  env = dict(os.environ)
  env.pop(_DEVICES_ENV, None)   # only --devices sets it
  env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                      " --xla_force_host_platform_device_count="
                      f"{devices or 8}").strip()
  env["JAX_PLATFORMS"] = "cpu"
  if pythonpath:
    env["PYTHONPATH"] = pythonpath
  if devices:
    env[_DEVICES_ENV] = str(devices)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (env.get("PYTHONPATH"), str(_DEVICES_PLUGIN_DIR)) if p)
  return env


@dataclasses.dataclass
class Result:
  """One pytest run: outcomes per test, and why it gave no verdict, if so."""
  outcomes: dict[str, str]
  problem: str | None = None
  details: list[str] = dataclasses.field(default_factory=list)


def outcomes(xml_path: Path) -> tuple[dict[str, str], list[str]]:
  """Reads a junit xml: outcome per test, and the collection errors."""
  out, collection_errors = {}, []
  if not xml_path.exists():
    return out, collection_errors
  try:
    root = ET.parse(xml_path).getroot()
  except ET.ParseError as e:
    return out, [f"unreadable junit xml {xml_path}: {e}"]
  for case in root.iter("testcase"):
    name = f"{case.get('classname')}::{case.get('name')}"
    kinds = {child.tag for child in case}
    errors = [child for child in case if child.tag == "error"]
    if any(e.get("message") == "collection failure" for e in errors):
      collection_errors.append(case.get("name") or name)
    elif kinds & {"failure", "error"}:
      out[name] = "failed"
    elif "skipped" in kinds:
      out[name] = "skipped"
    else:
      out[name] = "passed"
  return out, collection_errors


_EXIT_STATUS = {2: "interrupted (e.g. by collection errors)",
                3: "internal error", 4: "usage error",
                5: "no tests collected"}
_RELEVANT = re.compile(
    r"^(E  |ERROR|INTERNALERROR|Interrupted|FAILED|ImportError|SyntaxError|"
    r"[\w.]*(Error|Exception):|_+ ERROR collecting|.*errors? during collection"
    r"|.*no tests ran|.*not found:|.*error:)")


def relevant_lines(output: str, limit: int = 20) -> list[str]:
  """The lines of pytest's output that say what went wrong."""
  lines = [l.rstrip() for l in output.splitlines() if l.strip()]
  picked = [l for l in lines if _RELEVANT.match(l)]
  if not picked:
    picked = lines[-8:]
  if len(picked) > limit:
    picked = picked[:limit - 1] + [f"... ({len(picked) - limit + 1} more)"]
  return picked


def _gist(details: list[str], limit: int = 2) -> list[str]:
  """The lines among `details` that name the error, for the summary."""
  named = [l for l in details
           if re.search(r"\w+Error\b|ERROR:|error:|not found", l)
           and "ERROR collecting" not in l]
  return (named or details)[:limit]


def run(python: Path, tests_dir: Path, tests: list[str], xml: Path, n: int,
        k: str | None, pythonpath: str | None,
        flags: dict[str, str] | None = None,
        devices: int | None = None) -> Result:
  """Runs pytest on `tests` (paths or node ids under tests/), on 8 CPU
  devices or, with `devices`, on that many."""
  env = {**_test_env(pythonpath, devices), **(flags or {})}
  cmd = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
         *(["-p", _DEVICES_PLUGIN] if devices else []),
         "--rootdir", str(tests_dir),
         "--junitxml", str(xml), "-o", "junit_family=xunit1",
         *(["-n", str(n)] if n > 1 else []), *(["-k", k] if k else []),
         *[f"tests/{t}" for t in tests]]
  r = subprocess.run(cmd, cwd=tests_dir, env=env, capture_output=True,
                     text=True)
  output = r.stdout + r.stderr
  xml.with_suffix(".log").write_text(f"$ {' '.join(cmd)}\n\n{output}")
  tail = output.strip().splitlines()[-1:]
  print(f"  {python.parent.parent.name}: {' '.join(tail)}", flush=True)
  res, collection_errors = outcomes(xml)
  result = Result(res)
  ran = sum(1 for o in res.values() if o != "skipped")
  if r.returncode not in (0, 1):
    why = _EXIT_STATUS.get(r.returncode, "killed by a signal"
                           if r.returncode < 0 else "unexpected")
    result.problem = f"pytest exit status {r.returncode} ({why})"
  elif collection_errors:
    result.problem = ("collection errors in " + ", ".join(collection_errors))
  elif re.search(r"errors? during collection|^ERROR collecting", output,
                 re.M):
    result.problem = "collection errors reported in the output"
  elif not xml.exists():
    result.problem = "pytest wrote no junit xml"
  elif not ran:
    result.problem = (f"no test ran ({len(res)} skipped)" if res
                      else "no test ran")
  if result.problem:
    result.details = relevant_lines(output)
  return result


def _select(tests: list[str]) -> dict[str, list[str]]:
  """Groups TEST arguments by file: {file: [node ids or the file]}."""
  by_file = {}
  for t in tests:
    t = t.removeprefix("tests/")
    f = t.split("::")[0]
    by_file.setdefault(f, [])
    if f in by_file[f]:
      continue
    by_file[f] = [f] if t == f else by_file[f] + [t]
  return by_file


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(
      description=__doc__.split("\n\n")[0],
      formatter_class=argparse.RawDescriptionHelpFormatter,
      epilog=__doc__.split("\n\n", 2)[2])
  ap.add_argument("--jax-repo", type=Path, required=True,
                  help="a clone or bare git directory of jax-ml/jax")
  ap.add_argument("--ref", default="HEAD",
                  help="the commit, tag or branch whose tests run "
                  "(default HEAD)")
  ap.add_argument("--fork-tree", type=Path,
                  help="a pq checkout to test instead of the installed fork")
  ap.add_argument("--flags-off", action="store_true",
                  help="the fork with every device-tracing flag off, and the "
                  "hunks of the non-fork patches only")
  ap.add_argument("--devices", type=int, metavar="N",
                  help="run both on N virtual CPU devices instead of the 8 "
                  "the test files request (1: as with one accelerator); "
                  "tests that need more skip")
  ap.add_argument("-k", help="pytest -k expression")
  ap.add_argument("-n", type=int, default=1,
                  help="pytest-xdist workers (1: sequential; with more, test "
                  "order varies and some upstream tests flake on both)")
  ap.add_argument("--out", type=Path, default=REPO / "build" / "upstream-tests",
                  help="where the tests are extracted and the junit xml and "
                  "logs are written (default build/upstream-tests)")
  ap.add_argument("tests", nargs="+", metavar="TEST",
                  help="a file of tests/ (api_test.py) or a node id "
                  "(api_test.py::APITest::test_jit_basic)")
  args = ap.parse_args(argv)
  if args.devices is not None and args.devices < 1:
    ap.error(f"--devices {args.devices}: expected a number >= 1")

  out = args.out.resolve()
  tests_dir = out / "src"
  patches = tuple(p for p in forklib.patch_series(REPO / "patches")
                  if not (args.flags_off and forklib.patch_step(p) == "fork"))
  try:
    commit = extract_tests(args.jax_repo, tests_dir, args.ref, patches)
  except ToolError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  print(f"upstream tests from jax-ml/jax {args.ref} ({commit[:12]})"
        + (", the fork with its flags off" if args.flags_off else "")
        + (f", on {args.devices} CPU device(s)" if args.devices else ""))
  regressions, problems = [], []
  for f, selected in _select(args.tests).items():
    print(f"{f}:", flush=True)
    if not (tests_dir / "tests" / f).is_file():
      problems.append((f, "-", f"no tests/{f} at {commit[:12]}", []))
      print(f"  SKIPPED: no tests/{f} at {commit[:12]}")
      continue
    dropped, why = make_importable(REPO / ENVS[0] / "bin" / "python",
                                   tests_dir, f)
    if dropped:
      print(f"  (absent from the installed jax, made None: "
            f"{', '.join(dropped)})")
    if why:
      print(f"  SKIPPED: cannot make tests/{f} importable: {why}")
      problems.append((f, ENVS[0], f"cannot make it importable: {why}", []))
      continue
    res = {}
    for env_name, pythonpath in ((ENVS[0], None),
                                 (ENVS[1], str(args.fork_tree.resolve())
                                  if args.fork_tree else None)):
      xml = out / f"{Path(f).stem}.{env_name.strip('.')}.xml"
      xml.unlink(missing_ok=True)
      result = run(REPO / env_name / "bin" / "python", tests_dir, selected,
                   xml, args.n, args.k, pythonpath,
                   _FLAGS_OFF if args.flags_off and env_name == ENVS[1]
                   else None, args.devices)
      res[env_name] = result.outcomes
      if result.problem:
        print(f"  ERROR on {env_name}: {result.problem}")
        for line in result.details:
          print(f"    | {line}")
        problems.append((f, env_name, result.problem, result.details))
    up, fork = res[ENVS[0]], res[ENVS[1]]
    counts = {e: collections.Counter(r.values()) for e, r in res.items()}
    print(f"  upstream {dict(counts[ENVS[0]])}; fork {dict(counts[ENVS[1]])}")
    for name, outcome in sorted(up.items()):
      if outcome == "passed" and fork.get(name, "missing") != "passed":
        regressions.append((f, name, fork.get(name, "missing")))
  print(f"\n{len(regressions)} tests pass upstream and fail on the fork")
  for f, name, outcome in regressions:
    print(f"  {name} ({outcome})")
  if problems:
    print(f"\nNO VERDICT: {len(problems)} run(s) gave no verdict, so the "
          f"comparison is incomplete:")
    for f, env_name, problem, details in problems:
      print(f"  {f} ({env_name}): {problem}")
      for line in _gist(details):
        print(f"    | {line}")
    print(f"(full pytest output: {out}/<file>.<env>.log)")
    return 2
  return 1 if regressions else 0


if __name__ == "__main__":
  sys.exit(main())
