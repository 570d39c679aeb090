"""Shared machinery of the fork's build and patch-queue tools.

The fork is pinned upstream JAX plus a series of patches
(``patches/*.patch``, applied in file-name order), which is the whole change:
a new module enters with the patch that first needs it.  This
module knows how to fetch and verify the upstream distribution, lay the fork
out in a staging folder, and pack it as a wheel.  Only the standard library and
the ``git`` command are used, so that it runs before any environment exists.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PINS_FILE = "upstream.toml"
CACHE_DIR = Path("build") / "cache"

# Fixed timestamp for every wheel member, so that the same inputs give the same
# wheel bytes (1980-01-01 is the earliest date a zip file can hold).
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class BuildError(Exception):
  """A build step failed; the message says what, where, and what to do."""


@dataclass(frozen=True)
class Pins:
  jax_version: str
  jax_filename: str
  jax_sha256: str
  release_commit: str
  release_tag: str
  tests_commit: str
  jaxlib_version: str
  local_prefix: str


def load_pins(repo: Path = REPO) -> Pins:
  with open(repo / PINS_FILE, "rb") as f:
    data = tomllib.load(f)
  return Pins(
      jax_version=data["jax"]["version"],
      jax_filename=data["jax"]["filename"],
      jax_sha256=data["jax"]["sha256"].lower(),
      release_commit=data["jax"]["release_commit"],
      release_tag=data["jax"]["release_tag"],
      tests_commit=data["jax"]["tests_commit"],
      jaxlib_version=data["jaxlib"]["version"],
      local_prefix=data["fork"]["local_prefix"],
  )


def git(*args: str, cwd: Path, check: bool = True,
        input: str | None = None) -> subprocess.CompletedProcess:
  """Runs git with the user's configuration shut out.

  Patches must come out byte for byte the same on every machine, so nothing in
  ~/.gitconfig (diff algorithm, prefixes, abbreviation length) may leak in.
  """
  env = dict(os.environ)
  env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
             LC_ALL="C", TZ="UTC")
  return subprocess.run(["git", *args], cwd=cwd, env=env, check=check,
                        text=True, input=input, capture_output=True)


def fork_version(pins: Pins, repo: Path = REPO) -> str:
  """The fork's PEP 440 version: upstream's, plus a local segment.

  N counts the commits in the repository's history, so every committed state
  of the fork has its own, increasing version.  DEVTRACE_BUILD_NUMBER overrides
  it where there is no git history (an exported source tree).
  """
  n = os.environ.get("DEVTRACE_BUILD_NUMBER")
  if n is None:
    r = git("rev-list", "--count", "HEAD", cwd=repo, check=False)
    if r.returncode != 0:
      raise BuildError(
          f"cannot number the build: `git rev-list --count HEAD` failed in "
          f"{repo} ({r.stderr.strip()}); build from a git clone or set "
          "DEVTRACE_BUILD_NUMBER")
    n = r.stdout.strip()
  if not n.isdigit():
    raise BuildError(f"build number must be a non-negative integer, got {n!r}")
  return f"{pins.jax_version}+{pins.local_prefix}.{int(n)}"


def sha256_of(path: Path) -> str:
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      h.update(chunk)
  return h.hexdigest()


def verify_upstream(path: Path, pins: Pins) -> Path:
  actual = sha256_of(path)
  if actual != pins.jax_sha256:
    raise BuildError(
        f"sha256 mismatch for upstream distribution {path}:\n"
        f"  expected {pins.jax_sha256} (pinned in {PINS_FILE})\n"
        f"  got      {actual}\n"
        "Refusing to build from an unverified file. Delete it to download it "
        "again; change the pin only for a new upstream release.")
  return path


def download_jax_wheel(version: str, dest: Path,
                       python: str = sys.executable) -> Path:
  """Downloads PyPI's pure-Python wheel of jax `version` into `dest`.

  pip checks the file against the sha256 that PyPI's index publishes for it.
  """
  dest.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(dir=dest) as tmp:
    r = subprocess.run(
        [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--disable-pip-version-check", "-d", tmp, f"jax=={version}"],
        capture_output=True, text=True)
    got = sorted(Path(tmp).glob(f"jax-{version}-*.whl"))
    if r.returncode != 0 or len(got) != 1:
      raise BuildError(
          f"could not download jax=={version} from PyPI "
          f"(pip exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    target = dest / got[0].name
    os.replace(got[0], target)
  return target


def release_commit_of(wheel: Path) -> str:
  """The jax-ml/jax commit a release wheel was built from (its _git_hash)."""
  with zipfile.ZipFile(wheel) as z:
    text = z.read("jax/version.py").decode()
  m = re.search(r"^_git_hash: str = '([0-9a-f]{40})'", text, re.M)
  if not m:
    raise BuildError(f"{wheel.name}: jax/version.py names no _git_hash")
  return m.group(1)


def fetch_upstream(pins: Pins, repo: Path = REPO,
                   python: str = sys.executable) -> Path:
  """Returns the verified upstream wheel, downloading it from PyPI if needed."""
  cache = repo / CACHE_DIR
  target = cache / pins.jax_filename
  if target.exists():
    return verify_upstream(target, pins)
  cache.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory(dir=cache) as tmp:
    got = download_jax_wheel(pins.jax_version, Path(tmp), python)
    if got.name != pins.jax_filename:
      raise BuildError(f"PyPI's wheel of jax {pins.jax_version} is {got.name}, "
                       f"not {pins.jax_filename} (pinned in {PINS_FILE})")
    verify_upstream(got, pins)
    os.replace(got, target)
  return target


def patch_series(patch_dir: Path) -> list[Path]:
  return sorted(patch_dir.glob("*.patch"))


# The steps of the series, in order; every patch names its own in a
# `Series-Step:` header. "fix" patches are independent fixes against upstream
# jax, which need nothing else from the series; step 1 is the device in avals
# and placement; step 2, several devices in one jit. A "fork" patch
# (fork-only: the version label, the fork's defaults) goes with the step
# before it. A cut after a step holds every patch up to and including it.
STEPS = ("fork", "fix", "1", "2")
def patch_tests(patch: Path) -> list[str]:
  """The tests a patch names in its `Tests:` lines (pytest node ids)."""
  message = patch.read_text().split("\n---\n", 1)[0]
  return [l.split(":", 1)[1].strip() for l in message.splitlines()
          if l.startswith("Tests: ")]


def patch_step(patch: Path) -> str:
  """The step of the series a patch belongs to (its Series-Step header)."""
  for line in patch.read_text().splitlines():
    if line.startswith("Series-Step:"):
      step = line.split(":", 1)[1].strip()
      if step not in STEPS:
        raise BuildError(f"{patch.name}: unknown Series-Step {step!r}")
      return step
    if line.startswith("diff --git "):
      break
  raise BuildError(f"{patch.name} has no Series-Step header")


def series_cut(patches: list[Path], step: str) -> list[Path]:
  """The patches of the series cut after `step`: a prefix of the series.

  The series is ordered by step, so that every cut is a prefix that builds
  on its own; a patch of an earlier step after one of a later step is an
  error.
  """
  if step not in STEPS:
    raise BuildError(f"no step {step!r}; the steps are {', '.join(STEPS)}")
  rank = {s: i for i, s in enumerate(STEPS)}
  cut, seen = [], 0
  for p in patches:
    s = patch_step(p)
    if s != "fork":
      if rank[s] < seen:
        raise BuildError(f"{p.name} (step {s}) comes after a patch of a "
                         f"later step: the series must be ordered by step")
      seen = rank[s]
    if seen <= rank[step]:
      cut.append(p)
  return cut


def unpack_upstream(wheel: Path, dest: Path) -> None:
  with zipfile.ZipFile(wheel) as z:
    z.extractall(dest)


_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


def patch_hunks(text: str) -> list[tuple[str, int, str]]:
  """Splits a git patch into (file, old start line, hunk text) triples."""
  hunks = []
  cur_file, cur_start, cur_lines = None, 0, None
  for line in text.splitlines(keepends=True):
    if line.startswith("diff --git "):
      if cur_lines is not None:
        hunks.append((cur_file, cur_start, "".join(cur_lines)))
      cur_lines = None
      cur_file = line.split(" b/", 1)[-1].strip()
    elif (m := _HUNK_RE.match(line)):
      if cur_lines is not None:
        hunks.append((cur_file, cur_start, "".join(cur_lines)))
      cur_start, cur_lines = int(m.group(1)), [line]
    elif cur_lines is not None:
      if line == "-- \n":  # a mail signature ends the last hunk
        hunks.append((cur_file, cur_start, "".join(cur_lines)))
        cur_lines = None
      else:
        cur_lines.append(line)
  if cur_lines is not None:
    hunks.append((cur_file, cur_start, "".join(cur_lines)))
  return hunks


def _describe_failure(patch: Path, stderr: str) -> str:
  text = patch.read_text()
  msg = [f"patch {patch.name} does not apply to upstream jax"]
  m = re.search(r"patch failed: (\S+):(\d+)", stderr)
  if m:
    path, line = m.group(1), int(m.group(2))
    msg.append(f"  upstream file: {path}")
    for f, start, body in patch_hunks(text):
      if f == path and start == line:
        msg.append(f"  failing hunk (line {line}):")
        msg.extend("    " + l for l in body.rstrip("\n").split("\n"))
        break
  else:
    m = re.search(r"error: (\S+): (No such file or directory|already exists)",
                  stderr)
    if m:
      msg.append(f"  upstream file: {m.group(1)} ({m.group(2).lower()})")
  msg.append("  git apply said:")
  msg.extend("    " + l for l in stderr.strip().splitlines())
  msg.append("Rebase the series (tools/pq.py checkout, fix, export) and build "
             "again; nothing was built.")
  return "\n".join(msg)


_DIFF_RE = re.compile(r"^diff --git a/(\S+) b/\S+\n(new file mode)?", re.M)


def upstream_test_files(patches: list[Path]) -> list[str]:
  """The files of upstream's tests/ that the series changes.

  The release's tests are in neither its wheel nor its sdist, so a patch that
  changes an upstream test file (its expectation changes with the patch) is
  written against `tests_commit` (upstream.toml). A test file that a patch
  creates is the series' own, and is not one of these.
  """
  created, changed = set(), []
  for patch in patches:
    for m in _DIFF_RE.finditer(patch.read_text()):
      path = m.group(1)
      if not path.startswith("tests/"):
        continue
      if m.group(2):
        created.add(path)
      elif path not in created and path not in changed:
        changed.append(path)
  return changed


def apply_series(stage: Path, patches: list[Path],
                 exclude: tuple[str, ...] = ()) -> None:
  """Applies each patch in order; the first that fails stops the build.

  Paths in `exclude` (upstream test files that `stage` lacks) are left out.
  """
  opts = [f"--exclude={p}" for p in exclude]
  for patch in patches:
    check = git("apply", "--check", "--verbose", *opts, str(patch.resolve()),
                cwd=stage, check=False)
    if check.returncode != 0:
      raise BuildError(_describe_failure(patch, check.stderr))
    git("apply", *opts, str(patch.resolve()), cwd=stage)


def stage_tests(stage: Path, dest: Path) -> None:
  """Moves the series' test files (tests/ of the staged tree) to `dest`."""
  shutil.rmtree(dest, ignore_errors=True)
  if (stage / "tests").is_dir():
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(stage / "tests", dest)


def upstream_file(jax_repo: Path, commit: str, path: str) -> bytes:
  """`path` at `commit` of a jax-ml/jax clone or bare git directory."""
  r = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=jax_repo,
                     capture_output=True)
  if r.returncode:
    raise BuildError(f"{path} at {commit[:12]} is not in {jax_repo}: "
                     f"{r.stderr.decode().strip()}")
  return r.stdout


def write_upstream_tests(tree: Path, tests: list[str], jax_repo: Path | None,
                         commit: str) -> list[str]:
  """Writes upstream's `tests` at `commit` into `tree`, from a jax-ml/jax clone.

  Returns the `git am` arguments that leave their hunks out when there is no
  clone to take them from (none when they were written).
  """
  if jax_repo is None:
    return [f"--exclude={p}" for p in tests]
  for path in tests:
    (tree / path).parent.mkdir(parents=True, exist_ok=True)
    (tree / path).write_bytes(upstream_file(jax_repo, commit, path))
  return []


def stamp_version(stage: Path, version: str, pins: Pins) -> None:
  """Writes the fork's version where upstream's release build writes its own."""
  path = stage / "jax" / "version.py"
  text = path.read_text()
  old = f"_release_version: str = {pins.jax_version!r}"
  if text.count(old) != 2:  # the assignment, and its mention in _write_version
    raise BuildError(f"cannot stamp the version: {old!r} not found twice in "
                     "jax/version.py")
  head, sep, tail = text.partition(old)
  path.write_text(head + f"_release_version: str = {version!r}" + tail)


def _record_hash(data: bytes) -> str:
  digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
  return "sha256=" + digest.rstrip(b"=").decode()


def _rewrite_metadata(text: str, version: str, pins: Pins) -> str:
  out = []
  for line in text.splitlines(keepends=True):
    if line.startswith("Version: "):
      line = f"Version: {version}\n"
    elif line.startswith("Requires-Dist: jaxlib"):
      # The fork is tested against exactly one jaxlib: every requirement of
      # jaxlib pins it, an extra's too (upstream's [ci] and [minimum-jaxlib]
      # ask for an older jaxlib, which would contradict the pin).
      marker = line.partition(";")[2].strip()
      line = (f"Requires-Dist: jaxlib=={pins.jaxlib_version}"
              f"{'; ' + marker if marker else ''}\n")
    out.append(line)
  return "".join(out)


def build_wheel(stage: Path, version: str, pins: Pins, out_dir: Path) -> Path:
  """Packs the staged tree as a wheel; returns its path."""
  old_info = stage / f"jax-{pins.jax_version}.dist-info"
  info_name = f"jax-{version}.dist-info"
  files: dict[str, bytes] = {}
  for p in sorted(stage.rglob("*")):
    if not p.is_file() or "__pycache__" in p.parts:
      continue
    rel = p.relative_to(stage).as_posix()
    if rel.startswith(old_info.name + "/"):
      name = rel.split("/", 1)[1]
      if name == "RECORD":
        continue
      data = p.read_bytes()
      if name == "METADATA":
        data = _rewrite_metadata(data.decode(), version, pins).encode()
      files[f"{info_name}/{name}"] = data
    else:
      files[rel] = p.read_bytes()
  record = io.StringIO()
  writer = csv.writer(record, lineterminator="\n")
  for name, data in files.items():
    writer.writerow([name, _record_hash(data), len(data)])
  writer.writerow([f"{info_name}/RECORD", "", ""])
  files[f"{info_name}/RECORD"] = record.getvalue().encode()

  out_dir.mkdir(parents=True, exist_ok=True)
  wheel = out_dir / f"jax-{version}-py3-none-any.whl"
  tmp = wheel.with_suffix(".tmp")
  with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    # dist-info last, as the wheel spec recommends.
    for name in sorted(files, key=lambda n: (n.startswith(info_name), n)):
      zi = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
      zi.external_attr = 0o644 << 16
      zi.compress_type = zipfile.ZIP_DEFLATED
      z.writestr(zi, files[name])
  os.replace(tmp, wheel)
  return wheel


def stage_fork(stage: Path, wheel: Path, patch_dir: Path) -> None:
  """Lays out upstream + the series in `stage` (the wheel's files)."""
  unpack_upstream(wheel, stage)
  patches = patch_series(patch_dir)
  apply_series(stage, patches, tuple(upstream_test_files(patches)))
