# The Python snippets of README.md and docs/**/*.md run as shown.
#
# A snippet is a fenced code block whose language is `python`. Each runs in a
# fresh Python process (this interpreter, from an empty folder) on 8 virtual
# CPU devices, with XLA_FLAGS=--xla_force_host_platform_device_count=8 as the
# docs say, and must exit with status 0. A block that is deliberately not
# runnable (an error demonstration, pseudo-code) is fenced as `python-norun`
# instead: it is listed here and skipped.

import os
from pathlib import Path
import re
import subprocess
import sys
import tempfile
import textwrap
from typing import NamedTuple

from absl.testing import absltest
from absl.testing import parameterized

from jax._src import config
from jax._src import test_util as jtu

config.parse_flags_with_absl()

ROOT = Path(__file__).resolve().parent.parent
XLA_FLAGS = "--xla_force_host_platform_device_count=8"
RUN = "python"          # the language of a snippet that must run
NORUN = "python-norun"  # the language of one that is deliberately not run

# A fenced code block: its opening fence, info string and body, closed by the
# same fence at the same indentation.
_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$", re.M | re.S)


class Snippet(NamedTuple):
  name: str      # a test-name-safe `file_line`
  where: str     # file:line of the opening fence
  language: str
  code: str


def markdown_files():
  return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def code_blocks(path):
  """(line of the opening fence, language, body) of each fenced block."""
  text = path.read_text()
  for m in _BLOCK.finditer(text):
    line = text.count("\n", 0, m.start()) + 1
    info = m["info"].strip()
    language = info.split()[0] if info else ""
    yield line, language, textwrap.dedent(m["body"])


def snippets():
  out = []
  for path in markdown_files():
    rel = path.relative_to(ROOT).as_posix()
    for line, language, body in code_blocks(path):
      if language in (RUN, NORUN):
        name = re.sub(r"\W", "_", f"{rel.removesuffix('.md')}_line{line}")
        out.append(Snippet(name, f"{rel}:{line}", language, body))
  return out


_SNIPPETS = snippets()


class DocSnippetsTest(jtu.JaxTestCase):

  def test_there_are_snippets_to_run(self):
    # The extraction itself works: README.md and the user guide have some.
    where = {s.where.split(":")[0] for s in _SNIPPETS if s.language == RUN}
    self.assertContainsSubset({"README.md", "docs/user-guide.md"}, where)

  def test_every_code_block_names_its_language(self):
    # So that no Python block escapes this test by having no language
    # (shell commands are `sh`, error messages and output `text`).
    untagged = [f"{path.relative_to(ROOT)}:{line}"
                for path in markdown_files()
                for line, language, _ in code_blocks(path) if not language]
    self.assertEmpty(untagged, "fenced blocks without a language")

  @parameterized.named_parameters((s.name, s) for s in _SNIPPETS)
  def test_snippet_runs(self, snippet):
    if snippet.language == NORUN:
      self.skipTest(f"{snippet.where} is marked {NORUN}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(XLA_FLAGS=XLA_FLAGS, JAX_PLATFORMS="cpu")
    with tempfile.TemporaryDirectory() as tmp:
      script = Path(tmp) / f"{snippet.name}.py"
      script.write_text(snippet.code)
      r = subprocess.run([sys.executable, str(script)], cwd=tmp, env=env,
                         capture_output=True, text=True, timeout=600)
    self.assertEqual(
        r.returncode, 0,
        f"the snippet at {snippet.where} failed:\n{snippet.code}\n"
        f"--- stdout:\n{r.stdout[-2000:]}\n--- stderr:\n{r.stderr[-4000:]}")


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
