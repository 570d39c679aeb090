# The array-API pattern on sharded inputs: eager and jit agree.
#
# Array-API code writes `xp.zeros(n, device=x.device)`. For x sharded over a
# mesh, `x.device` is its NamedSharding, and `device=` of a creation function
# fits that sharding to the new shape (`device_tracing.fit_sharding`; issue
# 15, patch 0031). Each test runs one pattern (a function of x) eagerly, in
# the fork, as the oracle, and again under a transformation:
#
#   jit             jax.jit(f)(x)                  against f(x)
#   vmap            jax.jit(jax.vmap(f))(xb)       against jax.vmap(f)(xb)
#   grad            jax.jit(jax.grad(loss))(x)     against jax.grad(loss)(x)
#
# (eager vmap and grad under jax.set_mesh, below)
#
# with loss(x) = sum(f(x) * x) where the shapes match, else
# sum(f(x)) * sum(x); xb is a batch of 8 inputs along a leading axis (sharded
# along it where the input leaves a mesh axis free). The transformed run goes
# as array-API code runs it, with no context mesh (the mesh comes from the
# sharded argument), and, in the `_setmesh` cases, under
# `jax.set_mesh(mesh)`. Eager vmap and grad, the oracles, run under
# `jax.set_mesh(mesh)`: without it eager grad fails in upstream JAX itself
# and `x.device` of an eager BatchTracer raises in the fork
# (EagerTransformTest records both).
#
# Every result must match in value (`np.asarray`; not for empty/empty_like),
# shape, dtype, mesh, partition spec, memory kind, `committed`, and
# `is_equivalent_to`. Specs are compared padded with None to the result's
# rank: eagerly an array keeps the spec it was given (fit_sharding returns
# `P('x')` as it is for a 2-D array), while a jit result's spec always has one
# entry per dimension (`P('x', None)`); both name the same layout. The
# oracle cannot be vacuous: the eager result must be committed and laid out
# over all 8 devices of the mesh, and for `device=x.device` patterns its
# spec must be the fitting rule's (`fit_sharding(x.sharding, shape)`).
#
# Cases that fail in the fork today are listed in KNOWN_FAILURES below, each
# with its reason; they run as expected failures (an unexpected success is a
# failure, so a fix shows up). ErrorAgreementTest covers inputs on which
# JAX's Explicit-sharding rules reject a library function eagerly: jit must
# reject it with the same error type.

import fnmatch
import functools
import unittest
import warnings

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
from jax._src import config
from jax._src import device_tracing
from jax._src import test_util as jtu

from array_api_util import array_api_compat, scipy, xpx

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)


# --------------------------------------------------------------------------
# Inputs: x on a mesh of 8 CPU devices (jax.make_mesh: Explicit axes).

# name: (mesh shape, axis names, x's shape, x's spec, spec of the vmap batch)
CONFIGS = {
    "mesh1d_x": ((8,), ("x",), (16,), P("x"), P(None, "x")),
    "mesh1d_rep": ((8,), ("x",), (16,), P(), P("x", None)),
    "mesh2d_xy": ((2, 4), ("x", "y"), (8, 16), P("x", "y"),
                  P(None, "x", "y")),
    "mesh2d_Ny": ((2, 4), ("x", "y"), (8, 16), P(None, "y"),
                  P("x", None, "y")),
    "mesh2d_flat": ((2, 4), ("x", "y"), (16,), P(("x", "y")),
                    P(None, ("x", "y"))),
}
SHARDED = ("mesh1d_x", "mesh2d_xy", "mesh2d_Ny")
BATCH = 8


@functools.cache
def _mesh(shape, names):
  return jax.make_mesh(shape, names)


def _inputs(config_name):
  mesh_shape, names, shape, spec, batch_spec = CONFIGS[config_name]
  mesh = _mesh(mesh_shape, names)
  n = int(np.prod(shape))
  x = jax.device_put(np.arange(n, dtype=np.float32).reshape(shape),
                     NamedSharding(mesh, spec))
  xb = jax.device_put(
      np.arange(BATCH * n, dtype=np.float32).reshape((BATCH,) + shape) % 23,
      NamedSharding(mesh, batch_spec))
  return mesh, x, xb


# --------------------------------------------------------------------------
# Patterns: functions of x.

def _xp(x):
  return array_api_compat.array_namespace(x)


class Pattern:

  def __init__(self, fn, configs=SHARDED, transforms=("jit", "vmap", "grad"),
               values=True, fits=False):
    self.fn = fn
    self.configs = configs
    self.transforms = transforms
    self.values = values  # compare values (not for empty)
    self.fits = fits      # device=x.device: eager spec is fit_sharding's


def _xpx_expand_dims(x):
  with warnings.catch_warnings():
    # Deprecated in array-api-extra 0.11 for xp.expand_dims; still in use.
    warnings.simplefilter("ignore", DeprecationWarning)
    return xpx.expand_dims(x, axis=0)


def _same(x):
  return x.shape


_SHAPES = {"scalar": (), "same": _same, "n3": (3,), "n16": (16,),
           "5x7": (5, 7), "16x8": (16, 8)}


def _shape(s, x):
  return s(x) if callable(s) else s


def _patterns():
  c = {}
  # Creation functions with device=x.device: the fitting rule.
  for k, s in _SHAPES.items():
    c[f"zeros_{k}"] = Pattern(
        lambda x, s=s: _xp(x).zeros(_shape(s, x), device=x.device),
        configs=SHARDED + ("mesh2d_flat",), fits=True,
        transforms=("jit", "vmap", "grad") if k in ("scalar", "same", "n3")
        else ("jit",))
  c["jnp_zeros_8x4x2"] = Pattern(
      lambda x: jnp.zeros((8, 4, 2), device=x.device), fits=True,
      transforms=("jit",))
  c["ones_n3"] = Pattern(lambda x: jnp.ones(3, device=x.device), fits=True)
  c["ones_same"] = Pattern(lambda x: _xp(x).ones(x.shape, device=x.device),
                           fits=True)
  c["full_n16"] = Pattern(lambda x: _xp(x).full(16, 2.0, device=x.device),
                          fits=True)
  c["full_5x7"] = Pattern(
      lambda x: _xp(x).full((5, 7), 2.0, device=x.device), fits=True,
      transforms=("jit",))
  c["jnp_full_array_fill"] = Pattern(
      lambda x: jnp.full((2, 16), jnp.arange(16.0), device=x.device),
      fits=True, transforms=("jit",))
  c["empty_n3"] = Pattern(lambda x: _xp(x).empty(3, device=x.device),
                          values=False, fits=True, transforms=("jit", "vmap"))
  c["empty_same"] = Pattern(
      lambda x: _xp(x).empty(x.shape, device=x.device), values=False,
      fits=True, transforms=("jit", "vmap"))
  c["arange_n16"] = Pattern(lambda x: _xp(x).arange(16, device=x.device),
                            fits=True)
  c["arange_n3"] = Pattern(lambda x: _xp(x).arange(3, device=x.device),
                           fits=True, transforms=("jit",))
  c["arange_step"] = Pattern(
      lambda x: _xp(x).arange(0.0, 8.0, 0.5, device=x.device), fits=True,
      transforms=("jit",))
  c["linspace_n16"] = Pattern(
      lambda x: _xp(x).linspace(0.0, 1.0, 16, device=x.device), fits=True)
  c["linspace_n5"] = Pattern(
      lambda x: _xp(x).linspace(0.0, 1.0, 5, device=x.device), fits=True,
      transforms=("jit",))
  c["eye_8"] = Pattern(lambda x: _xp(x).eye(8, device=x.device), fits=True)
  c["eye_3x5"] = Pattern(lambda x: _xp(x).eye(3, 5, device=x.device),
                         fits=True, transforms=("jit",))
  c["jnp_eye_16_k1"] = Pattern(lambda x: jnp.eye(16, k=1, device=x.device),
                               fits=True, transforms=("jit",))
  c["asarray_scalar"] = Pattern(
      lambda x: _xp(x).asarray(0.0, device=x.device), fits=True,
      configs=SHARDED + ("mesh1d_rep",))
  c["asarray_list3"] = Pattern(
      lambda x: _xp(x).asarray([1.0, 2.0, 3.0], device=x.device), fits=True)
  c["asarray_list16"] = Pattern(
      lambda x: _xp(x).asarray([float(i) for i in range(16)],
                               device=x.device), fits=True,
      transforms=("jit",))
  c["asarray_x"] = Pattern(lambda x: _xp(x).asarray(x, device=x.device),
                           fits=True)
  c["jnp_array_x"] = Pattern(lambda x: jnp.array(x, device=x.device),
                             fits=True, transforms=("jit",))
  c["astype_device"] = Pattern(
      lambda x: _xp(x).astype(x, jnp.int32, device=x.device), fits=True,
      transforms=("jit",))
  c["zeros_like"] = Pattern(lambda x: _xp(x).zeros_like(x))
  c["zeros_like_device"] = Pattern(
      lambda x: _xp(x).zeros_like(x, device=x.device), fits=True)
  c["ones_like"] = Pattern(lambda x: jnp.ones_like(x), transforms=("jit",))
  c["ones_like_device"] = Pattern(
      lambda x: jnp.ones_like(x, device=x.device), fits=True)
  c["full_like"] = Pattern(lambda x: _xp(x).full_like(x, 3.0),
                           transforms=("jit",))
  c["full_like_device"] = Pattern(
      lambda x: _xp(x).full_like(x, 3.0, device=x.device), fits=True)
  c["empty_like"] = Pattern(lambda x: _xp(x).empty_like(x), values=False,
                            transforms=("jit", "vmap"))
  c["empty_like_device"] = Pattern(
      lambda x: _xp(x).empty_like(x, device=x.device), values=False,
      fits=True, transforms=("jit", "vmap"))
  c["jnp_zeros_like_shape3_device"] = Pattern(
      lambda x: jnp.zeros_like(x, shape=(3,), device=x.device), fits=True,
      transforms=("jit",))
  c["to_device"] = Pattern(lambda x: x.to_device(x.device), fits=True)
  c["compat_device"] = Pattern(
      lambda x: _xp(x).zeros(3, device=array_api_compat.device(x)),
      fits=True)
  c["x_plus_zeros"] = Pattern(
      lambda x: x + _xp(x).zeros(x.shape, device=x.device))
  c["x_plus_asarray_scalar"] = Pattern(
      lambda x: x * _xp(x).asarray(2.0, dtype=x.dtype, device=x.device))

  # array-api-extra. On inputs whose sharded dimension these functions sort,
  # pad or contract, JAX's Explicit-sharding rules reject them eagerly as
  # under jit (ErrorAgreementTest); here they run where eager mode accepts
  # them.
  c["xpx_nunique"] = Pattern(lambda x: xpx.nunique(x % 5),
                             configs=("mesh1d_rep",))
  c["xpx_pad2"] = Pattern(lambda x: xpx.pad(x, 2),
                          configs=("mesh2d_xy", "mesh2d_Ny", "mesh1d_rep"))
  c["xpx_pad4"] = Pattern(lambda x: xpx.pad(x, 4),
                          configs=("mesh1d_x", "mesh2d_flat"))
  c["xpx_one_hot"] = Pattern(
      lambda x: xpx.one_hot(_xp(x).astype(x, jnp.int32) % 4, 4))
  c["xpx_cov"] = Pattern(
      lambda x: xpx.cov(_xp(x).reshape(x, (2, -1))), configs=("mesh1d_rep",))
  c["xpx_at_set"] = Pattern(lambda x: xpx.at(x)[1].set(0.0),
                            configs=("mesh1d_rep",))
  c["xpx_at_set_device"] = Pattern(
      lambda x: xpx.at(x)[1].set(_xp(x).asarray(0.0, device=x.device)),
      configs=("mesh1d_rep",))
  c["jnp_setdiff1d_size"] = Pattern(
      lambda x: jnp.setdiff1d(
          x, _xp(x).asarray([1.0, 3.0, 5.0], device=x.device), size=x.size,
          fill_value=-1.0),
      configs=("mesh1d_rep",))
  c["xpx_expand_dims"] = Pattern(_xpx_expand_dims)

  # SciPy through the array API.
  c["scipy_logsumexp"] = Pattern(lambda x: scipy.special.logsumexp(x),
                                 configs=SHARDED + ("mesh1d_rep",))
  c["scipy_logsumexp_axis"] = Pattern(
      lambda x: scipy.special.logsumexp(x, axis=-1),
      configs=("mesh2d_xy", "mesh2d_Ny"))
  c["scipy_rfftfreq_n16"] = Pattern(
      lambda x: scipy.fft.rfftfreq(16, xp=_xp(x), device=x.device),
      configs=SHARDED + ("mesh2d_flat", "mesh1d_rep"), fits=True)
  c["scipy_fftfreq_n16"] = Pattern(
      lambda x: scipy.fft.fftfreq(16, xp=_xp(x), device=x.device),
      configs=SHARDED + ("mesh2d_flat",), fits=True)
  c["scipy_fftfreq_n10"] = Pattern(
      lambda x: scipy.fft.fftfreq(10, xp=_xp(x), device=x.device),
      configs=("mesh1d_x", "mesh2d_flat"), fits=True, transforms=("jit",))
  return c


PATTERNS = _patterns() if xpx is not None else {}


def _cases():
  """(name, pattern, config, transform, under set_mesh) of each test.

  jit runs on every config of a pattern, and also under jax.set_mesh on its
  last one; vmap and grad on its first two configs, and under jax.set_mesh
  on its first: representative without a product of everything.
  """
  for name, pat in PATTERNS.items():
    for i, cfg in enumerate(pat.configs):
      runs = [("jit", False)]
      if i == len(pat.configs) - 1:
        runs.append(("jit", True))
      for t in ("vmap", "grad"):
        if t in pat.transforms and i < 2:
          runs.append((t, False))
        if t in pat.transforms and i == 0:
          runs.append((t, True))
      for t, setmesh in runs:
        yield (f"{name}__{cfg}__{t}{'_setmesh' if setmesh else ''}", name,
               cfg, t, setmesh)


# --------------------------------------------------------------------------
# Known failures in the fork (2026-12, patch 0031): globs over the test-case
# names (the part after `test_agrees_`), each with its reason. They run as
# expected failures: a fix shows up as an unexpected success, which fails.

def _names(patterns, configs, transforms):
  return [f"{p}__{c}__{t}" for p in patterns for c in configs
          for t in transforms]


# Most are upstream JAX's own behaviour over Explicit mesh axes with no
# context mesh, met by the same array-API code (checked against
# .venv-upstream, which has no `x.device` under jit but shows the same error
# given the sharding itself); the two fork-only ones say so.
_REASONS = {
    "like_jit": (
        "no context mesh (upstream too): without device=, zeros_like/"
        "ones_like/full_like(x) of x sharded over Explicit axes is laid out "
        "like x eagerly, but jit (and jit(vmap)) does not lay it out like x: "
        "upstream returns it uncommitted on one device (cpu:0), the fork "
        "replicated over x's devices (a GSPMDSharding: x, unused, places the "
        "computation, patch 0008); under jax.set_mesh it agrees"),
    "empty_like_device_vmap": (
        "fork regression: eager vmap(lambda x: empty_like(x, "
        "device=x.device)) returns the batch replicated, spec P(None, None), "
        "where jit(vmap) and upstream's eager vmap (given the same sharding) "
        "keep P(None, 'x'); zeros_like(x, device=x.device) keeps it"),
    "setdiff1d_eager": (
        "upstream too: eager jnp.setdiff1d(x, y, size=...) of a replicated x "
        "calls full_like(x, fill, shape=()), which reuses x's sharding "
        "P(None,) for a scalar: ValueError 'Length of sharding.spec (1) must "
        "be equal to aval's ndim (0)' (with or without a context mesh); the "
        "eager oracle fails, jit works"),
    "scatter_vmap": (
        "no context mesh (upstream too): jit(vmap(f)) of a batch sharded "
        "along its batch axis raises ShardingTypeError 'Use .at[...].set/"
        "add/mul/...(out_sharding=) to provide output PartitionSpec for the "
        "scatter update' (xpx.nunique, jnp.setdiff1d); under jax.set_mesh "
        "it works"),
    "at_set_scalar": (
        "no context mesh (upstream too): eager x.at[1].set(0.0) of an array "
        "over Explicit axes raises ValueError 'Length of device assignment 1 "
        "is not equal to the size of the mesh 8 of aval f32[]' (the Python "
        "scalar update sits on one device); with the update made by "
        "xp.asarray(0.0, device=x.device) (xpx_at_set_device), or under "
        "jax.set_mesh, it works"),
    "logsumexp": (
        "upstream too: under jit/vmap/grad of a sharded x, scipy's "
        "xp_promote calls np.iterable(a), which iterates the tracer: "
        "Tracer.__iter__ binds lax.unstack, which raises ShardingTypeError "
        "'unstack operand cannot be sharded on the unstacking axis 0' (not "
        "the TypeError np.iterable expects); an eager Array iterates without "
        "unstack, so eager works"),
}

_JVG = ("jit", "vmap", "grad")
KNOWN_FAILURES = {
    **dict.fromkeys(
        _names(["zeros_like", "ones_like", "full_like"], SHARDED, ["jit"]) +
        _names(["zeros_like"], ["mesh1d_x", "mesh2d_xy"], ["vmap"]),
        "like_jit"),
    **dict.fromkeys(
        _names(["empty_like_device"], ["mesh1d_x"], ["vmap", "vmap_setmesh"])
        + _names(["empty_like_device"], ["mesh2d_xy"], ["vmap"]),
        "empty_like_device_vmap"),
    **dict.fromkeys(_names(["jnp_setdiff1d_size"], ["mesh1d_rep"],
                           ["jit", "jit_setmesh"]), "setdiff1d_eager"),
    **dict.fromkeys(_names(["jnp_setdiff1d_size", "xpx_nunique"],
                           ["mesh1d_rep"], ["vmap"]), "scatter_vmap"),
    "xpx_at_set__mesh1d_rep__jit": "at_set_scalar",
    "scipy_logsumexp__mesh1d_x__*": "logsumexp",
    "scipy_logsumexp__mesh2d_xy__*": "logsumexp",
    "scipy_logsumexp_axis__mesh2d_xy__*": "logsumexp",
}


def _known_failure(case):
  for pattern, reason in KNOWN_FAILURES.items():
    if fnmatch.fnmatchcase(case, pattern):
      return _REASONS[reason]
  return None


# --------------------------------------------------------------------------

def _padded(spec, ndim):
  parts = tuple(spec)
  return parts + (None,) * (ndim - len(parts))


def _loss(f):
  def loss(x):
    y = f(x)
    y = y.astype(x.dtype)
    if y.shape == x.shape:
      return jnp.sum(y * x)
    return jnp.sum(y) * jnp.sum(x)
  return loss


class ShardedTestCase(jtu.JaxTestCase):

  def setUp(self):
    super().setUp()
    if jax.device_count() < 8:
      self.skipTest("needs 8 devices")
    if xpx is None:
      self.skipTest("array-api-compat, array-api-extra and scipy are needed")

  def assertAgrees(self, out, want, mesh, *, values=True):
    """`out` (a transformed run) is `want` (the eager run) in every respect,
    and `want` is committed and laid out over all devices of `mesh`."""
    self.assertIsInstance(want, jax.Array)
    self.assertIsInstance(out, jax.Array)
    # The oracle is not vacuous.
    self.assertIsInstance(want.sharding, NamedSharding)
    self.assertEqual(want.sharding.mesh, mesh)
    self.assertEqual(want.sharding.device_set, set(mesh.devices.flat))
    self.assertLen(want.sharding.device_set, 8)
    self.assertTrue(want.committed)
    # The transformed run agrees.
    self.assertEqual(out.shape, want.shape)
    self.assertEqual(out.dtype, want.dtype)
    self.assertIsInstance(out.sharding, NamedSharding)
    self.assertEqual(out.sharding.mesh, want.sharding.mesh)
    self.assertEqual(_padded(out.sharding.spec, out.ndim),
                     _padded(want.sharding.spec, want.ndim))
    self.assertEqual(out.sharding.memory_kind, want.sharding.memory_kind)
    self.assertTrue(out.sharding.is_equivalent_to(want.sharding, out.ndim),
                    f"{out.sharding} is not equivalent to {want.sharding}")
    self.assertEqual(out.committed, want.committed)
    if values:
      np.testing.assert_allclose(np.asarray(out), np.asarray(want),
                                 rtol=1e-6, atol=1e-6)


class ShardedArrayApiTest(ShardedTestCase):

  @parameterized.named_parameters(*_cases())
  def test_agrees(self, pattern, config_name, transform, setmesh):
    pat = PATTERNS[pattern]
    mesh, x, xb = _inputs(config_name)
    f = pat.fn
    if transform == "jit":
      arg, eager, staged = x, f, jax.jit(f)
    elif transform == "vmap":
      arg, eager, staged = xb, jax.vmap(f), jax.jit(jax.vmap(f))
    else:
      arg, eager, staged = x, jax.grad(_loss(f)), jax.jit(jax.grad(_loss(f)))
    if transform == "jit" and not setmesh:
      want = eager(arg)
    else:
      # Eager vmap and grad run under jax.set_mesh: without a context mesh,
      # eager grad of any loss of an array over Explicit axes fails in
      # upstream JAX itself (its seed is placed on one device), and `x.device`
      # of an eager BatchTracer over a sharded array raises in the fork
      # (EagerTransformTest).
      with jax.set_mesh(mesh):
        want = eager(arg)
    if setmesh:
      with jax.set_mesh(mesh):
        out = staged(arg)
    else:
      out = staged(arg)
    self.assertAgrees(out, want, mesh, values=pat.values)
    if pat.fits and transform == "jit":
      # The eager oracle follows the fitting rule.
      fitted = device_tracing.fit_sharding(x.sharding, want.shape)
      self.assertEqual(_padded(want.sharding.spec, want.ndim),
                       _padded(fitted.spec, want.ndim))
      self.assertEqual(want.sharding.mesh, fitted.mesh)
    if transform == "grad":
      # The gradient lands as x does.
      self.assertEqual(_padded(want.sharding.spec, want.ndim),
                       _padded(x.sharding.spec, x.ndim))


  def test_known_failures_name_existing_cases(self):
    cases = [c[0] for c in _cases()]
    for pattern, reason in KNOWN_FAILURES.items():
      self.assertIn(reason, _REASONS)
      self.assertTrue(any(fnmatch.fnmatchcase(c, pattern) for c in cases),
                      f"{pattern} names no test case")


def _mark_known_failures(cls, prefix):
  for attr in list(vars(cls)):
    if attr.startswith(prefix) and _known_failure(attr[len(prefix):]):
      setattr(cls, attr, unittest.expectedFailure(getattr(cls, attr)))


_mark_known_failures(ShardedArrayApiTest, "test_agrees_")


# --------------------------------------------------------------------------
# Eager vmap and grad as array-API code runs them, with no context mesh:
# they must give what they give under jax.set_mesh (the oracle above).

_EAGER_VMAP = (
    "fork: eagerly, `x.device` of a BatchTracer over a concrete array "
    "sharded over Explicit axes raises DeviceTracingUnavailable ('it is "
    "sharded over the abstract mesh ..., and no devices are known for it "
    "while tracing. Enter the concrete mesh with jax.set_mesh'): no jit "
    "computation is being staged, so the mesh of the concrete argument is "
    "not found; jit(vmap(f)) and eager vmap under jax.set_mesh work")
_EAGER_GRAD = (
    "upstream JAX too, whatever the loss: eager jax.grad of a scalar loss of "
    "an array over Explicit axes, without a context mesh, raises ValueError "
    "'Length of device assignment 1 is not equal to the size of the mesh 8 "
    "of aval f32[]' (the cotangent seed 1.0 is put on one device); under "
    "jax.set_mesh, and under jit, it works")

EAGER_CASES = {
    **{f"vmap_{p}__{c}": (p, c, "vmap")
       for p in ("zeros_n3", "zeros_same", "asarray_scalar", "x_plus_zeros",
                 "compat_device")
       for c in ("mesh1d_x", "mesh2d_xy")},
    **{f"grad_{p}__{c}": (p, c, "grad")
       for p in ("x_plus_zeros", "xpx_expand_dims")
       for c in ("mesh1d_x", "mesh2d_xy")},
}


class EagerTransformTest(ShardedTestCase):

  @parameterized.named_parameters((n, n) for n in sorted(EAGER_CASES))
  def test_without_context_mesh(self, name):
    pattern, config_name, transform = EAGER_CASES[name]
    mesh, x, xb = _inputs(config_name)
    f = PATTERNS[pattern].fn
    if transform == "vmap":
      arg, g = xb, jax.vmap(f)
    else:
      arg, g = x, jax.grad(_loss(f))
    with jax.set_mesh(mesh):
      want = g(arg)
    self.assertAgrees(g(arg), want, mesh)


# Every case of EagerTransformTest fails today, for these reasons.
EAGER_KNOWN_FAILURES = {"vmap_*": _EAGER_VMAP, "grad_*": _EAGER_GRAD}

for _attr in list(vars(EagerTransformTest)):
  _case = _attr[len("test_without_context_mesh_"):]
  if _attr.startswith("test_without_context_mesh_") and any(
      fnmatch.fnmatchcase(_case, k) for k in EAGER_KNOWN_FAILURES):
    setattr(EagerTransformTest, _attr, unittest.expectedFailure(
        getattr(EagerTransformTest, _attr)))


# --------------------------------------------------------------------------
# Where JAX's Explicit-sharding rules reject a library function eagerly (it
# sorts, pads, contracts or scatters along a sharded dimension), jit must
# reject it with the same error type.

ERROR_CASES = {
    "xpx_nunique__mesh1d_x": lambda x: xpx.nunique(x % 5),
    "xpx_nunique__mesh2d_xy": lambda x: xpx.nunique(x % 5),
    "xpx_pad2__mesh1d_x": lambda x: xpx.pad(x, 2),
    "xpx_cov__mesh2d_xy": lambda x: xpx.cov(x),
    "xpx_cov__mesh1d_x": lambda x: xpx.cov(x),
    "xpx_at_set__mesh2d_xy": lambda x: xpx.at(x)[1].set(0.0),
    "xpx_at_set__mesh1d_x": lambda x: xpx.at(x)[1].set(0.0),
    "jnp_setdiff1d_size__mesh1d_x": lambda x: jnp.setdiff1d(
        x, _xp(x).asarray([1.0, 3.0, 5.0], device=x.device), size=x.size,
        fill_value=-1.0),
}

ERROR_KNOWN_FAILURES = {
    "xpx_at_set__mesh1d_x": (
        "upstream JAX too: eagerly x.at[1].set(0.0) of an array sharded over "
        "Explicit axes raises ValueError ('Length of device assignment 1 is "
        "not equal to the size of the mesh 8 of aval f32[]': the Python "
        "scalar update is placed on one device), under jit ShardingTypeError "
        "('Use .at[...].set(out_sharding=)')"),
}


class ErrorAgreementTest(ShardedTestCase):

  @parameterized.named_parameters((n, n) for n in sorted(ERROR_CASES))
  def test_same_error(self, name):
    f = ERROR_CASES[name]
    _, x, _ = _inputs(name.split("__")[1])
    with self.assertRaises(Exception) as eager:
      f(x)
    with self.assertRaises(Exception) as staged:
      jax.jit(f)(x)
    self.assertIs(type(staged.exception), type(eager.exception),
                  f"eager: {eager.exception!r}\njit: {staged.exception!r}")


for _attr in list(vars(ErrorAgreementTest)):
  if _attr.startswith("test_same_error_") and (
      _attr[len("test_same_error_"):] in ERROR_KNOWN_FAILURES):
    setattr(ErrorAgreementTest, _attr,
            unittest.expectedFailure(getattr(ErrorAgreementTest, _attr)))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
