# Integration tests: array-API consumers under jit on a non-default device.
#
# array-api-compat, array-api-extra and SciPy (with SCIPY_ARRAY_API=1, set in
# the repository's conftest.py before anything imports SciPy) create arrays with
# `device=device(x)`. Under jit on cpu:3 their results must stay on cpu:3,
# equal the eager results, and need no implicit transfer.

import os

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
import jax.numpy as jnp
from jax._src import config
from jax._src.internal_test_util import device_tracing_test_util as dtu
from jax._src import test_util as jtu

from array_api_util import array_api_compat, xpx

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)


def _on3(a):
  return jax.device_put(jnp.asarray(a), jax.devices()[3])


# Each takes x (float32[6] on cpu:3) and returns an array.
def _extra_cases():
  m = lambda x: x.reshape(2, 3)
  return {
      "pad": lambda x: xpx.pad(x, 2),
      "atleast_nd": lambda x: xpx.atleast_nd(x, ndim=3),
      "cov": lambda x: xpx.cov(m(x)),
      "create_diagonal": lambda x: xpx.create_diagonal(x),
      "expand_dims": lambda x: xpx.expand_dims(x, axis=(0, 2)),
      "kron": lambda x: xpx.kron(x, x),
      "nunique": lambda x: xpx.nunique(x.astype(jnp.int32) % 3),
      "sinc": lambda x: xpx.sinc(x),
      "isclose": lambda x: xpx.isclose(x, x + 1e-9),
      "one_hot": lambda x: xpx.one_hot(x.astype(jnp.int32) % 4, 4),
      "broadcast_shapes": lambda x: jnp.broadcast_to(
          x, xpx.broadcast_shapes(x.shape, (2, 6))),
      "at_set": lambda x: xpx.at(x)[1].set(0.0),
      "at_add": lambda x: xpx.at(x, slice(0, 2)).add(1.0),
      "apply_where": lambda x: xpx.apply_where(x > 2, x, lambda v: v * 2,
                                               fill_value=0.0),
      "nan_to_num": lambda x: xpx.nan_to_num(x / (x - 2.0)),
      "nansum": lambda x: xpx.nansum(x / (x - 2.0) * 0 + x),
      "partition": lambda x: xpx.partition(x[::-1], 2),
      "searchsorted": lambda x: xpx.searchsorted(x, x[:3]),
      "isin": lambda x: xpx.isin(x, x[:2]),
      "default_dtype": lambda x: jnp.zeros(
          2, dtype=xpx.default_dtype(jnp), device=array_api_compat.device(x)),
      # setdiff1d, union1d, triu_indices: data-dependent shapes, not jittable.
  }


def _scipy_cases():
  import scipy.special as special
  import scipy.stats as stats
  return {
      "special.erf": special.erf,
      "special.logsumexp": special.logsumexp,
      "special.entr": special.entr,
      "special.expit": special.expit,
      "special.softmax": special.softmax,
      "special.xlogy": lambda x: special.xlogy(x, x),
      "stats.zscore": stats.zscore,
      "stats.moment": lambda x: stats.moment(x, order=2),
      "stats.gmean": stats.gmean,
      "stats.skew": stats.skew,
  }


@absltest.skipIf(array_api_compat is None, "array-api-compat and "
                 "array-api-extra are not installed (see tools/requirements.txt)")
class ArrayApiTest(dtu.DeviceTestCase):

  def setUp(self):
    super().setUp()
    self.d3 = jax.devices()[3]
    self.x = _on3(np.arange(1.0, 7.0, dtype=np.float32))

  def assertSameAsEager(self, f):
    eager = f(self.x)
    jitted = jax.jit(f)
    jitted(self.x)  # compile outside the guard
    with jax.transfer_guard("disallow"):
      out = jitted(self.x)
    self.assertEqual(out.devices(), {self.d3})
    self.assertTrue(out.committed)
    self.assertEqual(eager.devices(), {self.d3})
    self.assertAllClose(out, eager, rtol=1e-5)

  def test_compat_device_on_a_tracer_is_the_real_device(self):
    seen = []
    jax.jit(lambda v: seen.append(array_api_compat.device(v)) or v)(self.x)
    self.assertEqual(seen, [self.d3])   # not its workaround's None

  def test_compat_to_device(self):
    d2 = jax.devices()[2]
    out = jax.jit(lambda v: array_api_compat.to_device(v * 2, d2))(
        jnp.arange(3.0))
    self.assertEqual(out.devices(), {d2})
    self.assertTrue(out.committed)

  @jtu.thread_unsafe_test()  # sets a transfer guard
  def test_fast_exit_pattern(self):
    # `return xp.zeros(1, dtype=x.dtype, device=x.device)` on one branch.
    def f(x, early):
      xp = array_api_compat.array_namespace(x)
      if early:
        return xp.zeros(1, dtype=x.dtype, device=array_api_compat.device(x))
      return xp.sum(x, keepdims=True)
    for early in (True, False):
      self.assertSameAsEager(lambda v: f(v, early))

  @parameterized.parameters(sorted(_extra_cases()))
  @jtu.thread_unsafe_test()  # sets a transfer guard
  def test_array_api_extra(self, name):
    self.assertSameAsEager(_extra_cases()[name])

  @parameterized.parameters(sorted(_scipy_cases()))
  @jtu.thread_unsafe_test()  # sets a transfer guard
  def test_scipy_through_the_array_api(self, name):
    import scipy
    if os.environ.get("SCIPY_ARRAY_API") != "1":
      self.skipTest("SCIPY_ARRAY_API was not set before SciPy was imported")
    del scipy
    self.assertSameAsEager(_scipy_cases()[name])


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
