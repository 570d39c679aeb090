#!/usr/bin/env python3
"""Applies the series to another JAX with `git am -3`: a release or a commit.

  .venv/bin/python tools/forward_port.py --release VERSION [--wheel PATH]
      [--sha256 HEX] [--jax-repo DIR] [--out DIR] [--table PATH]
  .venv/bin/python tools/forward_port.py --jax-repo DIR [--ref REF]
      [--out DIR] [--table PATH]

Staying current, measured. The target is either a release of jax on PyPI
(--release VERSION: its pure-Python wheel, downloaded with pip, which checks
it against the sha256 PyPI publishes; --wheel takes a file already here
instead, and --sha256 refuses a file with another digest), or REF of DIR, a
clone (or bare git directory) of jax-ml/jax (a commit, tag or branch;
default HEAD). Every patch whose `Series-Step` is not `fork` is applied in
order with `git am -3` onto the target's jax/ (and the files of upstream's
tests/ that the series changes, from `tests_commit` of DIR: a release's tests
are not in its wheel; without DIR their hunks are left out), and reported as

- clean: it applies as it is;
- 3-way: it applies after a three-way merge with the blobs it names;
- conflict: it does not; its conflicted files, blocks and lines (the lines
  between the conflict markers) are counted, and each block is resolved
  with the patch's side, so that the rest are measured on a tree that has
  it.

For a release, the report names what upstream.toml pins for it (file name,
sha256, the commit its jax/version.py names). Then `git range-diff` compares
the series as it applies to the pinned release (tools/branch.py) with the
series as refreshed onto the target (the patches that applied, three-way
merges included): what a maintainer forwarding it would review. --table
writes the per-patch table as Markdown. README, "Moving to a new JAX
release", says how a refresh goes from there.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402
from forklib import BuildError, git  # noqa: E402

_CONFLICT = re.compile(
    r"^<<<<<<< [^\n]*\n(?:.*?\n)?=======\n(.*?)^>>>>>>> [^\n]*\n",
    re.S | re.M)
_IDENTITY = ("-c", "user.name=devtrace forward-port", "-c",
             "user.email=devtrace-forward-port@localhost")


def _conflicts(tree: Path) -> tuple[list[str], int, int]:
  """The conflicted files, conflict blocks and lines in them."""
  files = [l for l in git("diff", "--name-only", "--diff-filter=U",
                          cwd=tree).stdout.splitlines() if l]
  blocks = lines = 0
  for f in files:
    inside = False
    for line in (tree / f).read_text(errors="replace").splitlines():
      if line.startswith("<<<<<<< "):
        inside, blocks = True, blocks + 1
      elif line.startswith(">>>>>>> "):
        inside = False
      elif inside and not line.startswith("======="):
        lines += 1
  return files, blocks, lines


def _commit(tree: Path, message: str) -> None:
  git("add", "-A", cwd=tree)
  git(*_IDENTITY, "commit", "-q", "--allow-empty", "-m", message, cwd=tree)


def release_wheel(version: str, out: Path, wheel: Path | None = None,
                  sha256: str | None = None) -> tuple[Path, str]:
  """The wheel of jax `version` (PyPI's, or `wheel`) and its sha256."""
  if wheel is None:
    wheel = forklib.download_jax_wheel(version, out / "download")
  elif not wheel.name.startswith(f"jax-{version}-"):
    raise BuildError(f"{wheel} is not a wheel of jax {version}")
  digest = forklib.sha256_of(wheel)
  if sha256 is not None and digest != sha256.lower():
    raise BuildError(f"sha256 mismatch for {wheel}:\n  expected {sha256}\n"
                     f"  got      {digest}")
  return wheel, digest


def forward_port(jax_repo: Path | None, ref: str | None, out: Path, *,
                 release: str | None = None, wheel: Path | None = None,
                 sha256: str | None = None):
  """(rows, tree, base, desc): per patch (name, outcome, files, blocks, lines).

  One repository holds the pinned release's jax/ files (tag `release-files`,
  from PyPI's wheel) with the series applied (branch `on-release`: the blobs
  the patches name, so that `git am -3` can merge) and, on the branch
  `forward-port`, the target's jax/ files with the series applied: those of
  the wheel of `release`, or of REF (from `git archive`, which reads nothing
  outside jax/: a stored mirror may lack large blobs elsewhere).
  """
  if (release is None) == (ref is None):
    raise BuildError("give a release or a ref, not both")
  if release is None and jax_repo is None:
    raise BuildError("a ref needs --jax-repo")
  shutil.rmtree(out, ignore_errors=True)
  tree = out / "jax"
  tree.mkdir(parents=True)
  pins = forklib.load_pins()
  if release is None:
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=jax_repo,
                 check=False)
    if commit.returncode:
      raise BuildError(f"no commit {ref!r} in {jax_repo}")
    commit = commit.stdout.strip()
    date = git("log", "-1", "--format=%cs", commit, cwd=jax_repo).stdout.strip()
  else:
    target_wheel, digest = release_wheel(release, out, wheel, sha256)
    commit = forklib.release_commit_of(target_wheel)
  git("init", "-q", "-b", "release", cwd=tree)
  forklib.unpack_upstream(forklib.fetch_upstream(pins), out / "wheel")
  shutil.copytree(out / "wheel" / "jax", tree / "jax")
  # Upstream's test files that the series changes, as the patches have them
  # (the release's tests are not in its wheel): from tests_commit, where
  # both it and REF have them (for a release, where tests_commit has them);
  # without them, their hunks are left out.
  tests = forklib.upstream_test_files(_series())
  have = [p for p in tests
          if jax_repo is not None and _has(jax_repo, pins.tests_commit, p) and
          (release is not None or _has(jax_repo, commit, p))]
  forklib.write_upstream_tests(tree, have, jax_repo, pins.tests_commit)
  exclude = [f"--exclude={p}" for p in tests if p not in have]
  _commit(tree, f"the release's jax/ files ({pins.jax_filename})")
  git("tag", "release-files", cwd=tree)
  # The series on the release, as a maintainer has it: the blobs every patch
  # names as its preimage, which `git am -3` merges from.
  git("checkout", "-q", "-b", "on-release", cwd=tree)
  for patch in _series():
    git(*_IDENTITY, "am", "-q", *exclude, str(patch.resolve()), cwd=tree)
  git("checkout", "-q", "--orphan", "forward-port", cwd=tree)
  for entry in tree.iterdir():  # the series' files too: only REF's stay
    if entry.name != ".git":
      shutil.rmtree(entry)
  if release is None:
    archive = (out / "ref.tar")
    with open(archive, "wb") as f:
      r = forklib.subprocess.run(
          ["git", "archive", "--format=tar", commit, "jax", *have],
          cwd=jax_repo, stdout=f, stderr=forklib.subprocess.PIPE)
    if r.returncode:
      raise BuildError(f"git archive {commit} jax failed: {r.stderr.decode()}")
    forklib.subprocess.run(["tar", "-xf", str(archive)], cwd=tree, check=True)
    desc = f"jax-ml/jax {ref} ({commit[:12]}, {date})"
  else:
    forklib.unpack_upstream(target_wheel, out / "target")
    shutil.copytree(out / "target" / "jax", tree / "jax")
    forklib.write_upstream_tests(tree, have, jax_repo, pins.tests_commit)
    desc = (f"jax {release} from PyPI ({target_wheel.name}, sha256 {digest}, "
            f"built from jax-ml/jax {commit[:12]})")
  _commit(tree, f"{desc}: jax/")
  base = git("rev-parse", "HEAD", cwd=tree).stdout.strip()
  rows = []
  for patch in _series():
    r = git(*_IDENTITY, "am", "-3", *exclude, str(patch.resolve()), cwd=tree,
            check=False)
    text = r.stdout + r.stderr
    if r.returncode == 0:
      merged = "3-way merge" in text or "Falling back" in text
      rows.append((patch.name, "3-way" if merged else "clean", [], 0, 0))
      continue
    files, blocks, lines = _conflicts(tree)
    if not files:
      files = sorted(set(re.findall(r"patch failed: ([\w/.]+)", text)))
    rows.append((patch.name, "conflict", files, blocks, lines))
    # Resolved with the patch's side of each conflict block (what merged
    # cleanly around them stays), so that the rest are measured against a
    # tree that has this patch: a measure, not a forward port to ship.
    for f in _conflicts(tree)[0]:
      path = tree / f
      path.write_text(_CONFLICT.sub(lambda m: m.group(1), path.read_text()))
      git("add", f, cwd=tree)
    if git(*_IDENTITY, "am", "--continue", cwd=tree,
           check=False).returncode:
      git(*_IDENTITY, "am", "--abort", cwd=tree, check=False)
  if exclude:
    desc += (f", without the hunks of {', '.join(p for p in tests if p not in have)}"
             " (not in it)")
  return rows, tree, base, desc


def _has(jax_repo: Path, commit: str, path: str) -> bool:
  return git("cat-file", "-e", f"{commit}:{path}", cwd=jax_repo,
             check=False).returncode == 0


def _series() -> list[Path]:
  return [p for p in forklib.patch_series(forklib.REPO / "patches")
          if forklib.patch_step(p) != "fork"]


def range_diff(tree: Path, base: str) -> str:
  """The series on the release against the series refreshed onto `base`."""
  return git("range-diff", "--no-color", "release-files..on-release",
             f"{base}..forward-port", cwd=tree).stdout


def table(rows, ref_desc: str) -> str:
  counts = {k: sum(1 for r in rows if r[1] == k)
            for k in ("clean", "3-way", "conflict")}
  lines = [f"`git am -3` of the {len(rows)} non-fork patches onto "
           f"{ref_desc}: {counts['clean']} clean, {counts['3-way']} by "
           f"three-way merge, {counts['conflict']} in conflict "
           f"({sum(r[3] for r in rows)} blocks, "
           f"{sum(r[4] for r in rows)} lines).", "",
           "| patch | outcome | files in conflict | blocks | lines |",
           "|---|---|---|---:|---:|"]
  for name, outcome, files, blocks, n in rows:
    if outcome == "clean":
      continue
    lines.append(f"| {name[:4]} {name[5:].removesuffix('.patch')} | "
                 f"{outcome} | {', '.join(f'`{f}`' for f in files)} | "
                 f"{blocks} | {n} |")
  return "\n".join(lines) + "\n"


def distance(tree: Path, base: str) -> str:
  """How far the target's jax/ is from the pinned release's, in numbers."""
  def stat(*paths):
    return git("diff", "--shortstat", "release-files", base, "--", *paths,
               cwd=tree).stdout.strip() or "no change"
  touched = sorted({f for p in _series() for f in re.findall(
      r"^diff --git a/(jax/\S+) b/", p.read_text(), re.M)})
  touched = [f for f in touched if git("cat-file", "-e", f"release-files:{f}",
                                       cwd=tree, check=False).returncode == 0]
  return (f"From the pinned release to the target, jax/: {stat('jax')}; "
          f"the {len(touched)} files of jax/ the series changes: "
          f"{stat(*touched)}.\n")


def pins_for(release: str, wheel: Path, digest: str) -> str:
  """What upstream.toml pins for `release` (its [jax] table's release lines)."""
  return (f'version = "{release}"\nfilename = "{wheel.name}"\n'
          f'sha256 = "{digest}"\n'
          f'release_commit = "{forklib.release_commit_of(wheel)}"\n'
          f'release_tag = "jax-v{release}"\n')


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  target = ap.add_mutually_exclusive_group(required=True)
  target.add_argument("--release", metavar="VERSION",
                      help="a release of jax on PyPI")
  target.add_argument("--ref", help="a commit, tag or branch of --jax-repo")
  ap.add_argument("--jax-repo", type=Path,
                  help="a jax-ml/jax clone: a ref's files, and upstream's "
                  "test files at tests_commit")
  ap.add_argument("--wheel", type=Path,
                  help="with --release: its wheel, already downloaded")
  ap.add_argument("--sha256", help="with --release: the wheel's expected sha256")
  ap.add_argument("--out", type=Path,
                  default=forklib.REPO / "build" / "forward-port")
  ap.add_argument("--table", type=Path, help="write the table here")
  ap.add_argument("--no-range-diff", action="store_true")
  args = ap.parse_args(argv)
  if (args.wheel or args.sha256) and not args.release:
    ap.error("--wheel and --sha256 go with --release")
  try:
    wheel = digest = None
    if args.release:
      # Fetched beside --out, which forward_port clears.
      wheel, digest = release_wheel(
          args.release, args.out.with_name(args.out.name + "-release"),
          args.wheel, args.sha256)
    rows, tree, base, desc = forward_port(
        args.jax_repo, args.ref, args.out, release=args.release,
        wheel=wheel, sha256=digest)
    text = table(rows, desc) + "\n" + distance(tree, base)
    print(text)
    if args.table:
      args.table.write_text(text)
    if args.release:
      print("upstream.toml, [jax], for this release:\n" +
            pins_for(args.release, wheel, digest))
    if not args.no_range_diff:
      print(range_diff(tree, base))
  except BuildError as e:
    print(f"forward_port: {e}", file=sys.stderr)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main())
