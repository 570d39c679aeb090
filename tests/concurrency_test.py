# Threads that share one jitted function, each on a device of its own.
#
# JAX's configuration contexts (`jax.default_device`) are thread-local, and
# one `jax.jit` function serves every thread: its caches are shared, and in
# the fork they also key on the devices that abstract values carry, which
# tracing asks for (`x.device`). These tests run
# NUM_THREADS threads at once (a barrier releases them together, so that the
# first calls, which trace and compile, overlap), each ITERATIONS times
# calling one jitted function created outside the threads, and check every
# result in its own thread: its value, its device and whether it is
# committed.
#
# - Uncommitted inputs made in the thread under
#   `jax.default_device(<the thread's device>)`: the jit runs there and its
#   results are uncommitted, as in upstream JAX (checked against
#   .venv-upstream). When the function reads `x.device` (the fork's device
#   tracing), the result is what the same function gives eagerly in the
#   thread.
# - Inputs committed to the thread's device: results there, committed.
# - Both at once, half the threads each.
# - A jit that moves a value to a second device (a computation over two
#   devices), each thread with its own pair.
#
# Thread k works on device (3 + 5k) mod 8 of the 8 devices, so that the eight
# threads cover cpu:0 to cpu:7, cpu:3 first. With fewer devices (a run with
# one device, DEVTRACE_CPU_DEVICES=1 in ./test.sh) the index is taken modulo
# their number: the threads then share devices, and the two-device test
# skips.

import concurrent.futures
import threading

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
import jax.numpy as jnp
from jax._src import config
from jax._src.internal_test_util import device_tracing_test_util as dtu
from jax._src import test_util as jtu

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

NUM_THREADS = 8
ITERATIONS = 50
BARRIER_TIMEOUT_S = 120


def _device_of_thread(k):
  devices = jax.devices()
  return devices[(3 + 5 * k) % 8 % len(devices)]


def _plain(x):
  return x * 2 + 1


def _reads_device(x):
  # The array-API pattern: a creation function on the device of x.
  return x + jnp.zeros(x.shape, x.dtype, device=x.device)


def _ones_on_device(x):
  return jnp.ones(x.shape, x.dtype, device=x.device) * x


def _np_plain(a):
  return a * 2 + 1


def _np_same(a):
  return a


class ConcurrencyTest(jtu.JaxTestCase):

  def run_threads(self, work):
    """Runs work(k) for k < NUM_THREADS in as many threads, released at once.

    Returns the results in the order of k; re-raises the failure of the
    first thread (by k) that failed, with its k.
    """
    barrier = threading.Barrier(NUM_THREADS)

    def run(k):
      barrier.wait(timeout=BARRIER_TIMEOUT_S)
      return work(k)

    with concurrent.futures.ThreadPoolExecutor(NUM_THREADS) as pool:
      futures = [pool.submit(run, k) for k in range(NUM_THREADS)]
      concurrent.futures.wait(futures)
    for k, f in enumerate(futures):
      if f.exception() is not None:
        raise AssertionError(
            f"thread {k} (device {_device_of_thread(k)}) failed: "
            f"{type(f.exception()).__name__}: {f.exception()}"
        ) from f.exception()
    return [f.result() for f in futures]

  def assertOn(self, a, device, committed, msg):
    self.assertEqual(a.devices(), {device}, msg)
    self.assertEqual(a.device, device, msg)
    self.assertEqual(a.committed, committed, msg)

  def assertThreadsCovered(self):
    """The threads' devices: all 8 when there are 8 (the test is not vacuous),
    cpu:3 among them."""
    devices = {_device_of_thread(k) for k in range(NUM_THREADS)}
    self.assertLen(devices, min(8, jax.device_count()))
    if jax.device_count() >= 8:
      self.assertIn(jax.devices()[3], devices)

  def test_uncommitted_inputs_under_default_device(self):
    f = jax.jit(_plain)  # one function for all threads

    def work(k):
      dev = _device_of_thread(k)
      with jax.default_device(dev):
        for i in range(ITERATIONS):
          msg = f"thread {k}, iteration {i}"
          x = jnp.arange(4.0) + k + i   # uncommitted, on dev
          self.assertOn(x, dev, False, msg)
          y = f(x)
          np.testing.assert_array_equal(
              np.asarray(y), _np_plain(np.arange(4.0) + k + i), msg)
          # As upstream JAX: where the default device is, uncommitted.
          self.assertOn(y, dev, False, msg)
      return dev

    self.assertThreadsCovered()
    self.assertEqual(self.run_threads(work),
                     [_device_of_thread(k) for k in range(NUM_THREADS)])

  def test_uncommitted_inputs_reading_x_device(self):
    f = jax.jit(_reads_device)

    def work(k):
      dev = _device_of_thread(k)
      with jax.default_device(dev):
        x = jnp.arange(4.0) + k
        eager = _reads_device(x)
        self.assertOn(eager, dev, eager.committed, f"thread {k}, eager")
        for i in range(ITERATIONS):
          msg = f"thread {k}, iteration {i}"
          y = f(x)
          np.testing.assert_array_equal(np.asarray(y), np.asarray(eager), msg)
          # Where eager JAX puts it, committed alike (device= commits it).
          self.assertOn(y, dev, eager.committed, msg)
      return eager.committed

    self.assertThreadsCovered()
    # Eagerly, device= commits the zeros, and so the sum.
    self.assertEqual(self.run_threads(work), [True] * NUM_THREADS)

  @parameterized.named_parameters(
      ("plain", _plain, _np_plain),
      ("reads_device", _reads_device, _np_same),
      ("ones_on_device", _ones_on_device, _np_same),
  )
  def test_committed_inputs_on_different_devices(self, fun, np_fun):
    f = jax.jit(fun)

    def work(k):
      dev = _device_of_thread(k)
      for i in range(ITERATIONS):
        msg = f"thread {k}, iteration {i}"
        a = np.arange(4.0) + k + i
        x = jax.device_put(a, dev)
        self.assertOn(x, dev, True, msg)
        y = f(x)
        np.testing.assert_array_equal(np.asarray(y), np_fun(a), msg)
        self.assertOn(y, dev, True, msg)

    self.assertThreadsCovered()
    self.run_threads(work)

  def test_committed_and_uncommitted_threads_at_once(self):
    # Even threads: inputs committed to their device, under no default
    # device. Odd threads: uncommitted inputs under their default device.
    f = jax.jit(_plain)

    def work(k):
      dev = _device_of_thread(k)
      committed = k % 2 == 0
      for i in range(ITERATIONS):
        msg = f"thread {k}, iteration {i}"
        a = np.arange(4.0) + k + i
        if committed:
          y = f(jax.device_put(a, dev))
        else:
          with jax.default_device(dev):
            y = f(jnp.asarray(a))
        np.testing.assert_array_equal(np.asarray(y), _np_plain(a), msg)
        self.assertOn(y, dev, committed, msg)

    self.run_threads(work)

  @dtu.needs_cross_device
  def test_device_put_to_another_device_under_jit(self):
    if jax.device_count() < 2:
      self.skipTest("needs 2 devices: a jit over two devices "
                    f"(got {jax.device_count()})")
    n = jax.device_count()
    iterations = ITERATIONS // 2   # two compiled stages and a copy per call

    def other_device(k):
      # Another device for each thread, at an offset from its own that
      # varies with k (1 to n-1), so that the pairs differ.
      i = jax.devices().index(_device_of_thread(k))
      return jax.devices()[(i + 1 + k % (n - 1)) % n]

    def two_devices(x, other):
      return x * 2, jax.device_put(x + 1, other)

    # One function for all threads; the target device is static.
    f = jax.jit(two_devices, static_argnums=1)

    def work(k):
      dev, other = _device_of_thread(k), other_device(k)
      assert dev != other, (dev, other)
      x = jax.device_put(np.arange(4.0) + k, dev)
      # Eagerly, the oracle.
      eager_a, eager_b = two_devices(x, other)
      self.assertOn(eager_a, dev, True, f"thread {k}, eager")
      self.assertOn(eager_b, other, True, f"thread {k}, eager")
      for i in range(iterations):
        msg = f"thread {k}, iteration {i}"
        # On (the fork's default) whatever the process's setting; set in
        # the thread, since configuration contexts are thread-local.
        with config.device_tracing_cross_device(True):
          a, b = f(x, other)
        np.testing.assert_array_equal(np.asarray(a), (np.arange(4.0) + k) * 2,
                                      msg)
        np.testing.assert_array_equal(np.asarray(b), np.arange(4.0) + k + 1,
                                      msg)
        self.assertOn(a, dev, True, msg)
        self.assertOn(b, other, True, msg)
      return dev, other

    pairs = self.run_threads(work)
    if n >= 8:
      self.assertLen(set(pairs), NUM_THREADS)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
