# The fork's export is upstream's, byte for byte: an artifact serialized by
# the fork's wheel is the one upstream jax 0.12.1 (.venv-upstream)
# serializes from the same program (the fork-only patch 0002 keeps the local
# version label out of it). A test of the wheel against upstream's, so it is
# the project's, not the series'.

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from absl.testing import absltest
from jax._src import config
from jax._src import test_util as jtu

config.parse_flags_with_absl()

_EXPORT_SCRIPT = """
import sys
import jax, jax.numpy as jnp
from jax import export
jax.config.update("jax_num_cpu_devices", 8)
x = jax.device_put(jnp.arange(3.0), jax.devices()[3])
def f(x):
  return jnp.sin(x) * 2 + jnp.zeros(3)
sys.stdout.buffer.write(export.export(jax.jit(f))(x).serialize())
"""


class ExportAgainstUpstreamTest(jtu.JaxTestCase):

  def test_serialization_is_byte_identical_to_upstream_jax(self):
    upstream = (Path(__file__).resolve().parent.parent / ".venv-upstream" /
                "bin" / "python")
    if not upstream.exists():
      self.skipTest("no .venv-upstream (run ./setup.sh)")
    with tempfile.TemporaryDirectory() as tmp:
      script = Path(tmp) / "export_case.py"  # same path and lines for both
      script.write_text(_EXPORT_SCRIPT)
      env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
      out = [subprocess.run([str(py), str(script)], capture_output=True,
                            env=env, check=True).stdout
             for py in (sys.executable, upstream)]
    fork, up = out
    self.assertNotEmpty(fork)
    self.assertEqual(fork, up)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
