#!/usr/bin/env python3
"""Upstream's linters on the series, as jax-ml/jax runs them.

  .venv/bin/python tools/lint.py [--keep]

Stages the pinned release (PyPI's wheel) and the release with the whole
series applied, in a scratch folder, and runs on both,
with the versions upstream's pre-commit configuration pins
(tools/requirements.txt) and upstream's settings (tools/lint/):

- ruff on every file the series adds or changes (tools/lint/ruff.toml);
- pyrefly over the package (tools/lint/pyrefly.toml), upstream's type
  checker.

A diagnostic is its file, rule and message (line numbers move with the
patches); every diagnostic the series has and the release has not is
printed, and fails the run. The series' new modules must carry upstream's
license header.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402

_LINT = forklib.REPO / "tools" / "lint"
# New modules carry the license header of the release's own modules, with
# the year they were written in.
_HEADER_YEAR = "2026"


def _license_header(release: Path) -> str:
  """The leading comment block of the release's core module, for new files."""
  lines = (release / "jax" / "_src" / "core.py").read_text().splitlines(True)
  block = "".join(itertools.takewhile(lambda l: l.startswith("#"), lines))
  return re.sub(r"\d{4}", _HEADER_YEAR, block, count=1)


def _bin(name: str) -> str:
  path = forklib.REPO / ".venv" / "bin" / name
  if not path.exists():
    raise forklib.BuildError(f"no {path}; run ./setup.sh --no-demo first")
  return str(path)


def _touched(patches: list[Path]) -> tuple[list[str], list[str]]:
  """The files the series changes, and those it adds."""
  changed, added = [], []
  for p in patches:
    prev = ""
    for line in p.read_text().splitlines():
      if line.startswith("diff --git "):
        name = line.split(" b/", 1)[1]
        if name.endswith(".py") and name not in changed:
          changed.append(name)
      elif line.startswith("new file mode") and prev.startswith("diff --git "):
        added.append(prev.split(" b/", 1)[1])
      prev = line
  return changed, added


def _ruff(tree: Path, files: list[str]) -> dict:
  files = [f for f in files if (tree / f).exists()]
  r = subprocess.run(
      [_bin("ruff"), "check", "--config", str(_LINT / "ruff.toml"),
       "--output-format", "json", "--no-cache", *files],
      cwd=tree, capture_output=True, text=True)
  if r.returncode not in (0, 1):
    raise forklib.BuildError(f"ruff failed:\n{r.stderr}")
  found = collections.defaultdict(list)
  for d in json.loads(r.stdout or "[]"):
    found[(Path(d["filename"]).relative_to(tree).as_posix(), d["code"],
           d["message"])].append(d["location"]["row"])
  return found


def _pyrefly(tree: Path) -> dict:
  shutil.copyfile(_LINT / "pyrefly.toml", tree / "pyrefly.toml")
  python = forklib.REPO / ".venv-upstream" / "bin" / "python"
  r = subprocess.run(
      [_bin("pyrefly"), "check", "--python-interpreter-path", str(python),
       "--output-format", "json", "--summary=none"],
      cwd=tree, capture_output=True, text=True)
  if r.returncode not in (0, 1):
    raise forklib.BuildError(f"pyrefly failed:\n{r.stderr[-3000:]}")
  found = collections.defaultdict(list)
  for e in json.loads(r.stdout)["errors"]:
    # Where pyrefly looked, which names the scratch folder, is left out.
    description = e["description"].split("\n  Looked in these locations")[0]
    found[(e["path"], e["name"], description)].append(e["line"])
  return found


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.parse_args(argv)
  try:
    with tempfile.TemporaryDirectory(prefix="devtrace-lint-") as tmp:
      failures = _lint(Path(tmp))
  except forklib.BuildError as e:
    print(f"lint: {e}", file=sys.stderr)
    return 2
  for f in failures:
    print(f, file=sys.stderr)
  return 1 if failures else 0


def _lint(out: Path) -> list[str]:
  # Staged outside the repository: git apply inside a work tree applies
  # nothing outside the current folder.
  pins = forklib.load_pins()
  wheel = forklib.fetch_upstream(pins)
  patches = forklib.patch_series(forklib.REPO / "patches")
  upstream, series = out / "upstream", out / "series"
  forklib.unpack_upstream(wheel, upstream)
  forklib.stage_fork(series, wheel, forklib.REPO / "patches")
  changed, added = _touched(patches)
  failures = []
  header = _license_header(upstream)
  for name in added:
    if not (series / name).read_text().startswith(header):
      failures.append(f"{name}: no license header (as upstream's: "
                      f"{header.splitlines()[0]!r} ...)")
  for tool, run in (("ruff", lambda t: _ruff(t, changed)),
                    ("pyrefly", _pyrefly)):
    before, after = run(upstream), run(series)
    new = [(key, lines[len(before.get(key, ())):])
           for key, lines in sorted(after.items())
           if len(lines) > len(before.get(key, ()))]
    count = lambda d: sum(len(v) for v in d.values())
    print(f"lint: {tool}: {count(before)} diagnostics on the release, "
          f"{count(after)} with the series, {sum(len(l) for _, l in new)} "
          "new", flush=True)
    failures += [f"{tool}: {f}:{line}: {code}: {msg}"
                 for (f, code, msg), lines in new for line in lines]
  return failures


if __name__ == "__main__":
  sys.exit(main())
