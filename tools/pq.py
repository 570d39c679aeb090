#!/usr/bin/env python3
"""Patch queue: edit the series as git commits, not as diffs.

  python tools/pq.py checkout DIR   # materialize the series as a git tree
  python tools/pq.py export DIR     # write DIR's commits back to the repo

`checkout` makes DIR a git repository holding the `jax` package:

  upstream   pristine jax from the pinned, verified PyPI wheel (tag `upstream`)
  modules    the repo's jax/ folder: the fork's new modules
  one commit per patch in patches/, in order (applied with `git am`)

Edit files and commit. To fold a change into an earlier patch, commit it as
`fixup! <that patch's subject>` (`git commit --fixup <commit>`); changes to
the modules' core, which every cut from step 1 on has, go into `fixup!
modules: ...`; then `git rebase -i --autosquash upstream`.  Code of a module
that only a later patch uses enters with that patch, and a patch may add a
module (step 2's device_stages.py is added by the patch that first uses
it).  Try the tree
without building a wheel: `PYTHONPATH=DIR .venv/bin/python -m pytest tests`.

`export` turns every commit after `modules` into one patch of its changes
(git format-patch style: subject, message, diffstat, diff) and copies the
fork's modules, as they are in the `modules` commit, back to the repo's
jax/.  Checkout followed by export with no edits reproduces the series byte
for byte.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402
from forklib import BuildError, git  # noqa: E402

# Identity of the tool's own commits (the upstream and modules bases).  Patch
# commits keep the author recorded in each patch.
_TOOL_IDENTITY = ("-c", "user.name=devtrace pq", "-c",
                  "user.email=devtrace-pq@localhost")

# Options that make format-patch output independent of the machine, the git
# configuration and the size of the repository.
_FORMAT_PATCH_OPTS = ("--zero-commit", "--no-signature", "--no-numbered",
                      "--full-index", "--stat=80", "--no-renames",
                      "--encode-email-headers")


def _commit_all(tree: Path, message: str) -> None:
  git("add", "-A", ".", cwd=tree)
  git(*_TOOL_IDENTITY, "commit", "--allow-empty", "-q", "-m", message,
      cwd=tree)


def checkout(tree: Path, patch_dir: Path, repo: Path = forklib.REPO) -> int:
  if tree.exists() and any(tree.iterdir()):
    raise BuildError(f"{tree} exists and is not empty")
  pins = forklib.load_pins(repo)
  wheel = forklib.fetch_upstream(pins, repo)
  tree.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory() as tmp:
    forklib.unpack_upstream(wheel, Path(tmp))
    shutil.copytree(Path(tmp) / "jax", tree / "jax")
  git("init", "-q", "-b", "main", cwd=tree)
  _commit_all(tree, f"upstream: jax {pins.jax_version}, pristine\n\n"
              f"From PyPI's {pins.jax_filename}, sha256 {pins.jax_sha256}.")
  git("tag", "upstream", cwd=tree)
  forklib.add_modules(tree, repo)
  _commit_all(tree, "modules: the fork's new modules (the repo's jax/ folder)")
  git("tag", "modules", cwd=tree)
  patches = forklib.patch_series(patch_dir)
  for patch in patches:
    r = git(*_TOOL_IDENTITY, "am", "-q", "--keep-cr",
            "--committer-date-is-author-date", str(patch.resolve()),
            cwd=tree, check=False)
    if r.returncode != 0:
      git("am", "--abort", cwd=tree, check=False)
      raise BuildError(f"patch {patch.name} does not apply with git am:\n"
                       f"{r.stdout}{r.stderr}")
  print(f"{tree}: upstream + modules + {len(patches)} patches "
        f"({git('rev-parse', '--short', 'HEAD', cwd=tree).stdout.strip()})")
  return 0


def _lines(r) -> list[str]:
  return [l for l in r.stdout.splitlines() if l]


def _modules_commit(tree: Path) -> str:
  """The commit right after `upstream`: the fork's modules.

  Found by position, not by the `modules` tag, which a rebase leaves behind.
  """
  if git("rev-parse", "-q", "--verify", "refs/tags/upstream", cwd=tree,
         check=False).returncode:
    raise BuildError(f"{tree} has no tag 'upstream': not made by "
                     "`pq.py checkout`")
  commits = _lines(git("rev-list", "--reverse", "--first-parent",
                       "upstream..HEAD", cwd=tree))
  if not commits:
    raise BuildError(f"{tree} has no commits after 'upstream'")
  subject = git("log", "-1", "--format=%s", commits[0], cwd=tree).stdout
  if not subject.startswith("modules:"):
    raise BuildError(f"the first commit after 'upstream' in {tree} is "
                     f"{subject.strip()!r}, not the modules commit")
  return commits[0]


def export(tree: Path, patch_dir: Path, modules_root: Path) -> int:
  modules = _modules_commit(tree)
  if _lines(git("status", "--porcelain", cwd=tree)):
    raise BuildError(f"{tree} has uncommitted changes; commit them first")
  upstream_files = set(_lines(git("ls-tree", "-r", "--name-only", "upstream",
                                  cwd=tree)))
  base_files = set(_lines(git("ls-tree", "-r", "--name-only", modules,
                              cwd=tree)))
  ours = sorted(base_files - upstream_files)

  with tempfile.TemporaryDirectory() as tmp:
    git("format-patch", *_FORMAT_PATCH_OPTS, "-o", tmp, f"{modules}..HEAD",
        cwd=tree)
    new = sorted(Path(tmp).glob("*.patch"))
    patch_dir.mkdir(parents=True, exist_ok=True)
    for old in forklib.patch_series(patch_dir):
      old.unlink()
    for p in new:
      shutil.copyfile(p, patch_dir / p.name)

  # Modules as they are in the modules commit: what every cut starts from.
  for rel in forklib.module_files(modules_root):
    if rel.as_posix() not in base_files:
      (modules_root / rel).unlink()
  for rel in ours:
    data = git("show", f"{modules}:{rel}", cwd=tree).stdout
    target = modules_root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(data)
  print(f"exported {len(new)} patches to {patch_dir} and "
        f"{len(ours)} modules to {modules_root}/jax")
  return 0


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(
      description="Edit the fork's patch series as git commits.")
  sub = ap.add_subparsers(dest="cmd", required=True)
  for name in ("checkout", "export"):
    p = sub.add_parser(name)
    p.add_argument("tree", type=Path)
    p.add_argument("--patches", type=Path, default=forklib.REPO / "patches")
  sub.choices["export"].add_argument(
      "--modules-root", type=Path, default=forklib.REPO,
      help="folder whose jax/ receives the modules (default: the repo)")
  args = ap.parse_args(argv)
  try:
    if args.cmd == "checkout":
      return checkout(args.tree, args.patches)
    return export(args.tree, args.patches, args.modules_root)
  except BuildError as e:
    print(f"pq {args.cmd} failed: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
  sys.exit(main())
