"""Arguments for the conformance cases: values, recipes, hand-written cases.

A case is `(qualname, args, kwargs)`. In `args` and `kwargs` (nested in
tuples, lists and dicts as needed):

- a string `"@name"` is an array input: the value `values()[name]`, made a
  jax array according to the mode (committed, uncommitted) and passed to jit
  as an argument;
- a string `"$name"` is the callable `HELPERS[name]` (closed over);
- anything else is static and closed over under jit.

`"@key"` is the typed PRNG key `jax.random.key(0)`.
"""

import numpy as np

# The modules whose public functions are checked, by the short name used in
# qualnames and reports.
MODULES = {
    "jnp": "jax.numpy",
    "jnp.linalg": "jax.numpy.linalg",
    "jnp.fft": "jax.numpy.fft",
    "lax": "jax.lax",
    "lax.linalg": "jax.lax.linalg",
    "nn": "jax.nn",
    "scipy.special": "jax.scipy.special",
    "scipy.linalg": "jax.scipy.linalg",
    "scipy.signal": "jax.scipy.signal",
    "scipy.stats": "jax.scipy.stats",
    "random": "jax.random",
    # Program families (conformance/families): whole programs whose oracle
    # is eager mode.
    "family.refs": "conformance.families.refs",
    "family.callbacks": "conformance.families.callbacks",
    "family.transfer_guard": "conformance.families.transfer_guard",
    "family.donation": "conformance.families.donation",
    "family.aot": "conformance.families.aot",
    "family.array_lists": "conformance.families.array_lists",
}

FAMILY = "family."

# The key device ids of the modes (see runner.py).
COMMITTED_DEVICE = 3
DEFAULT_DEVICE = 5


def values():
  """The value bank: name -> numpy value (deterministic)."""
  rng = np.random.RandomState(0)
  u = lambda *s: rng.uniform(0.1, 0.9, s).astype(np.float32)
  m = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
  a = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
  v = {
      "f34": u(3, 4), "g34": u(3, 4), "h34": u(3, 4),
      "f4": u(4), "g4": u(4), "h4": u(4),
      "f43": u(4, 3), "f234": u(2, 3, 4), "f16": u(16), "f64": u(64),
      "f22": u(2, 2),
      "fs": np.float32(0.5), "is": np.int32(2), "bs": np.bool_(True),
      "i34": rng.randint(1, 6, (3, 4)).astype(np.int32),
      "j34": rng.randint(1, 6, (3, 4)).astype(np.int32),
      "i4": rng.randint(1, 6, (4,)).astype(np.int32),
      "idx": np.array([0, 2, 1], np.int32),
      "b34": rng.uniform(size=(3, 4)) > 0.5,
      "c34": rng.uniform(size=(3, 4)) > 0.5,
      "u34": rng.randint(0, 256, (3, 4)).astype(np.uint8),
      "u32k": np.array([1, 2, 3, 4], np.uint32),
      "u2": np.array([0, 42], np.uint32),
      "z34": (u(3, 4) + 1j * u(3, 4)).astype(np.complex64),
      "z4": (u(4) + 1j * u(4)).astype(np.complex64),
      "m44": m + 4 * np.eye(4, dtype=np.float32),
      "g44": a + 4 * np.eye(4, dtype=np.float32),
      "spd44": (m @ m.T + 4 * np.eye(4)).astype(np.float32),
      "tri44": np.triu(m) + 4 * np.eye(4, dtype=np.float32),
      "bm44": np.stack([m + 4 * np.eye(4), a + 4 * np.eye(4)]).astype(
          np.float32),
      "bspd": np.stack([m @ m.T + 4 * np.eye(4), a @ a.T + 4 * np.eye(4)])
              .astype(np.float32),
      "p4": np.array([0.1, 0.2, 0.3, 0.4], np.float32),
      "img": u(1, 1, 5, 5), "ker": u(1, 1, 3, 3),
      "qkv": u(1, 3, 2, 4),
      "perm": np.array([2, 0, 3, 1], np.int32),
      "sorted4": np.array([0.1, 0.3, 0.5, 0.9], np.float32),
  }
  return v


def _helpers():
  import jax
  from jax import lax
  import jax.numpy as jnp
  return {
      "sq": lambda x: x * x,
      "neg": lambda x: -x,
      "sum": jnp.sum,
      "sum_keep": lambda a, axis: jnp.sum(a, axis=axis, keepdims=True),
      "add": lambda a, b: a + b,
      "lax_add": lax.add,
      "lax_max": lax.max,
      "fori": lambda i, x: x * 1.5 + i,
      "lt": lambda x: x < 10.0,
      "inc": lambda x: x * 2.0 + 1.0,
      "scan": lambda c, r: (c + r, c * r),
      "cmp": lambda a, b: a < b,
      "root_f": lambda x: x * x - 2.0,
      "root_solve": lambda f, x0: x0 - f(x0) / 4.0,
      "tangent_solve": lambda g, y: y / 2.0,
      "matvec_spd": lambda v: jnp.array(values()["spd44"]) @ v,
      "FFT": lax.FftType.FFT,
      "int32": jnp.int32,
      "triu": jnp.triu,
      "gdn": lax.GatherDimensionNumbers(
          offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
      "sdn": lax.ScatterDimensionNumbers(
          update_window_dims=(1,), inserted_window_dims=(0,),
          scatter_dims_to_operand_dims=(0,)),
      "float16": jnp.float16,
  }


_HELPERS = None


def helper(name):
  global _HELPERS
  if _HELPERS is None:
    _HELPERS = _helpers()
  return _HELPERS[name]


# Argument recipes that probe.py tries, in order, for a function without a
# hand-written case; the first that upstream accepts (eagerly and under jit,
# else eagerly) is recorded in table.json. Recipes with array inputs come
# first.
GENERIC = [
    ("@f34",), ("@f34", "@g34"), ("@f34", "@g34", "@h34"),
    ("@f4",), ("@f4", "@g4"), ("@f4", "@g4", "@h4"),
    ("@i34",), ("@i34", "@j34"), ("@b34",), ("@b34", "@c34"),
    ("@m44",), ("@spd44",), ("@m44", "@f4"), ("@m44", "@g44"),
    ("@spd44", "@f4"), ("@f34", "@f43"), ("@f43", "@f34"),
    ("@z34",), ("@z34", "@z34"), ("@u34",), ("@u34", "@u34"),
    ("@f34", 1), ("@f34", 0), ("@f34", (4, 3)), ("@f34", "@idx"),
    ("@f34", 2, 1), ("@f34", "@g34", 1), ("@i34", 1), ("@f4", 2),
    ("@f4", "@i4"), ("@f4", "@idx"), ("@i34", 6), ("@idx", 4),
    ("@f34", (0, 0), (2, 2)), ("@f34", "int32"), ("@f34", "float16"),
    ("@f34", "@g34", "@h34", "@f34"), ("@f4", "@g4", "@h4", "@f4"),
    ("@b34", "@f34", "@g34"), ("@is",), ("@fs",), ("@f234",),
    ("@f234", "@f234"), ("@p4",), ("@p4", "@f4"), ("@f16",),
    ("@f16", "@f16"), ("@f64",), ("@f64", "@f64"), ("@bm44",), ("@bspd",),
    ("@f34", "@g34", "@h34", "@f34", "@g34"),
    ("@i4", "@i4", "@i4"), ("@i34", "@j34", "@i34"),
    # No array input: the creation surface.
    (), (3,), ((3, 4),), ((3, 4), 2.0), (0.0, 1.0, 5), (1.0, 4.0, 4),
    (3, 4), (4, 3), (3, 4, 1), (5, 0.5),
]

RANDOM = [
    ("@key", (3, 4)), ("@key",), ("@key", "@f34"), ("@key", "@f34", (3, 4)),
    ("@key", "@f34", "@g34"), ("@key", "@f34", "@g34", (3, 4)),
    ("@key", "@i34"), ("@key", "@i34", "@f34"), ("@key", "@is"), ("@key", 5),
    ("@key", "@f4", "@spd44"), ("@key", "@p4"), ("@key", 5, (3,)),
    ("@key", "@f4"), ("@key", "@fs"), ("@key", "@is"), ("@is",), ("@u2",),
    ("@key", "@f34", "@g34", "@h34"), (0,), ((3, 4),),
]

# Hand-written cases, for functions the recipes cannot reach (static
# configuration, callables, shapes that must agree).
# qualname -> list of (args, kwargs) candidates, tried in order.
MANUAL = {
    # jax.numpy
    "jnp.einsum": [(("ij,kj->ik", "@f34", "@g34"), {})],
    "jnp.einsum_path": [(("ij,kj->ik", "@f34", "@g34"), {})],
    "jnp.piecewise": [(("@f34", ["@b34"], ["$sq", "$neg"]), {})],
    "jnp.apply_along_axis": [(("$sum", 0, "@f34"), {})],
    "jnp.apply_over_axes": [(("$sum_keep", "@f34", (0,)), {})],
    "jnp.select": [((["@b34", "@c34"], ["@f34", "@g34"], 0.0), {})],
    "jnp.choose": [(("@perm", ["@f4", "@g4", "@h4"]), {"mode": "clip"})],
    "jnp.cross": [(("@f43", "@g43"), {})],
    "jnp.linalg.cross": [(("@f43", "@g43"), {})],
    "jnp.dsplit": [(("@f234", 2), {})],
    "jnp.linalg.matrix_power": [(("@m44s", 3), {})],
    "jnp.moveaxis": [(("@f234", 0, 2), {})],
    "jnp.swapaxes": [(("@f234", 0, 2), {})],
    "jnp.permute_dims": [(("@f234", (2, 0, 1)), {})],
    "jnp.place": [(("@f34", "@b34", "@g4"), {"inplace": False})],
    "jnp.ravel_multi_index": [((("@idx", "@idx"), (3, 4)), {})],
    "jnp.mask_indices": [((3, "$triu"), {})],
    "lax.gather": [(("@f34", "@gi"), {"dimension_numbers": "$gdn",
                                      "slice_sizes": (1, 4)})],
    "lax.scatter": [(("@f34", "@gi", "@upd24", "$sdn"), {})],
    "lax.scatter_add": [(("@f34", "@gi", "@upd24", "$sdn"), {})],
    "lax.scatter_sub": [(("@f34", "@gi", "@upd24", "$sdn"), {})],
    "lax.scatter_mul": [(("@f34", "@gi", "@upd24", "$sdn"), {})],
    "lax.scatter_min": [(("@f34", "@gi", "@upd24", "$sdn"), {})],
    "lax.scatter_max": [(("@f34", "@gi", "@upd24", "$sdn"), {})],
    "lax.scatter_apply": [(("@f34", "@gi", "$sq", "$sdn"),
                           {"update_shape": (2, 4)})],
    "lax.index_take": [(("@f34", ("@idx",), (0,)), {})],
    "lax.ragged_dot": [(("@r64", "@r243", "@gs"), {})],
    "lax.rng_uniform": [((0.0, 1.0, (3,)), {})],
    "lax.platform_dependent": [(("@f34",), {"cpu": "$sq", "default": "$neg"})],
    "lax.linalg.ormqr": [(("@m44", "@p4", "@g44"), {})],
    "random.randint": [(("@key", (3, 4), 0, 10), {})],
    "random.multinomial": [(("@key", 10.0, "@p4"), {})],
    "scipy.linalg.hadamard": [((4,), {})],
    "scipy.linalg.solve_sylvester": [(("@m44", "@g44", "@spd44"), {})],
    "scipy.special.bessel_jn": [(("@f34",), {"v": 2})],
    "jnp.block": [((["@f34", "@g34"],), {})],
    "jnp.concatenate": [((["@f34", "@g34"],), {})],
    "jnp.concat": [((["@f34", "@g34"],), {})],
    "jnp.stack": [((["@f34", "@g34"],), {})],
    "jnp.hstack": [((["@f34", "@g34"],), {})],
    "jnp.vstack": [((["@f34", "@g34"],), {})],
    "jnp.dstack": [((["@f34", "@g34"],), {})],
    "jnp.column_stack": [((["@f4", "@g4"],), {})],
    "jnp.row_stack": [((["@f34", "@g34"],), {})],
    "jnp.fill_diagonal": [(("@m44", 2.0), {"inplace": False})],
    "jnp.put": [(("@f34", "@idx", "@f4"), {"inplace": False})],
    "jnp.put_along_axis": [(("@f34", "@i34", "@g34", 1), {"inplace": False}),
                           (("@f34", "@idxa", "@g34", 1), {"inplace": False})],
    "jnp.take_along_axis": [(("@f34", "@idxa", 1), {})],
    "jnp.nonzero": [(("@b34",), {"size": 12})],
    "jnp.argwhere": [(("@b34",), {"size": 12})],
    "jnp.flatnonzero": [(("@b34",), {"size": 12})],
    "jnp.unique": [(("@i34",), {"size": 12})],
    "jnp.unique_all": [(("@i34",), {"size": 12})],
    "jnp.unique_counts": [(("@i34",), {"size": 12})],
    "jnp.unique_inverse": [(("@i34",), {"size": 12})],
    "jnp.unique_values": [(("@i34",), {"size": 12})],
    "jnp.setdiff1d": [(("@i4", "@idx"), {"size": 4})],
    "jnp.union1d": [(("@i4", "@idx"), {"size": 7})],
    "jnp.intersect1d": [(("@i4", "@idx"), {"size": 4})],
    "jnp.setxor1d": [(("@i4", "@idx"), {"size": 7})],
    "jnp.extract": [(("@b34", "@f34"), {"size": 12})],
    "jnp.compress": [(("@b4", "@f43"), {"axis": 0, "size": 4})],
    "jnp.trim_zeros": [(("@f4",), {})],
    "jnp.bincount": [(("@idx",), {"length": 4})],
    "jnp.histogram": [(("@f16",), {"bins": 4, "range": (0.0, 1.0)})],
    "jnp.histogram2d": [(("@f16", "@f16"), {"bins": 3,
                                             "range": ((0., 1.), (0., 1.))})],
    "jnp.histogramdd": [(("@f43",), {"bins": 3,
                                      "range": ((0., 1.),) * 3})],
    "jnp.histogram_bin_edges": [(("@f16",), {"bins": 4,
                                              "range": (0.0, 1.0)})],
    "jnp.searchsorted": [(("@sorted4", "@f4"), {})],
    "jnp.digitize": [(("@f4", "@sorted4"), {})],
    "jnp.interp": [(("@f4", "@sorted4", "@g4"), {})],
    "jnp.polyfit": [(("@f16", "@f16", 2), {})],
    "jnp.polyval": [(("@f4", "@g4"), {})],
    "jnp.roots": [(("@p4",), {"strip_zeros": False})],
    "jnp.where": [(("@b34", "@f34", "@g34"), {})],
    "jnp.pad": [(("@f34", 1), {})],
    "jnp.tensordot": [(("@f34", "@f43", 1), {})],
    "jnp.fromfunction": [(("$add", (3, 4)), {"dtype": "float32"})],
    "jnp.meshgrid": [(("@f4", "@g4"), {})],
    "jnp.ix_": [(("@idx", "@idx"), {})],
    "jnp.broadcast_arrays": [(("@f34", "@f4"), {})],
    "jnp.broadcast_to": [(("@f4", (3, 4)), {})],
    "jnp.linalg.tensorsolve": [(("@m44", "@f4"), {})],
    "jnp.linalg.multi_dot": [((["@f34", "@f43", "@f34"],), {})],
    # jax.lax
    "lax.cond": [(("@bs", "$sq", "$neg", "@f34"), {})],
    "lax.switch": [(("@is", ["$sq", "$neg", "$sq"], "@f34"), {})],
    "lax.select_n": [(("@b34", "@f34", "@g34"), {})],
    "lax.fori_loop": [((0, 3, "$fori", "@f34"), {})],
    "lax.while_loop": [(("$lt", "$inc", "@fs"), {})],
    "lax.scan": [(("$scan", "@f4", "@f34"), {})],
    "lax.map": [(("$sq", "@f34"), {})],
    "lax.associative_scan": [(("$add", "@f34"), {})],
    "lax.reduce": [(("@f34", 0.0, "$lax_add", (0,)), {})],
    "lax.reduce_window": [(("@f34", 0.0, "$lax_add", (2, 2), (1, 1),
                            "VALID"), {})],
    "lax.custom_root": [(("$root_f", "@fs", "$root_solve", "$tangent_solve"),
                         {})],
    "lax.custom_linear_solve": [(("$matvec_spd", "@f4", "$tangent_solve"),
                                 {})],
    "lax.dynamic_slice": [(("@f34", ("@is", 0), (1, 2)), {})],
    "lax.dynamic_slice_in_dim": [(("@f34", "@is", 1, 1), {})],
    "lax.dynamic_index_in_dim": [(("@f34", "@is", 1), {})],
    "lax.dynamic_update_slice": [(("@f34", "@f22", ("@is", 0)), {})],
    "lax.dynamic_update_slice_in_dim": [(("@f34", "@f22", "@is", 1), {})],
    "lax.dynamic_update_index_in_dim": [(("@f34", "@f4", "@is", 0), {})],
    "lax.slice": [(("@f34", (0, 1), (2, 3)), {})],
    "lax.slice_in_dim": [(("@f34", 1, 3), {"axis": 1})],
    "lax.index_in_dim": [(("@f34", 1), {"axis": 1})],
    "lax.pad": [(("@f34", 0.0, [(1, 1, 0), (0, 1, 1)]), {})],
    "lax.broadcast_in_dim": [(("@f4", (3, 4), (1,)), {})],
    "lax.broadcast": [(("@f4", (2,)), {})],
    "lax.reshape": [(("@f34", (4, 3)), {})],
    "lax.transpose": [(("@f34", (1, 0)), {})],
    "lax.squeeze": [(("@f4", ()), {})],
    "lax.expand_dims": [(("@f4", (0,)), {})],
    "lax.rev": [(("@f34", (0,)), {})],
    "lax.concatenate": [((["@f34", "@g34"], 0), {})],
    "lax.dot_general": [(("@f34", "@f43", (((1,), (0,)), ((), ()))), {})],
    "lax.conv": [(("@img", "@ker", (1, 1), "SAME"), {})],
    "lax.conv_with_general_padding": [(("@img", "@ker", (1, 1),
                                        [(1, 1), (1, 1)], None, None), {})],
    "lax.conv_general_dilated": [(("@img", "@ker", (1, 1), "SAME"), {})],
    "lax.conv_transpose": [(("@img", "@ker", (1, 1), "SAME"),
                            {"dimension_numbers": ("NCHW", "OIHW", "NCHW")})],
    "lax.conv_general_dilated_patches": [(("@img", (2, 2), (1, 1), "VALID"),
                                          {})],
    "lax.fft": [(("@z34", "$FFT", (4,)), {})],
    "lax.rng_bit_generator": [(("@u32k", (3, 4)), {})],
    "lax.sort": [(("@f34",), {})],
    "lax.sort_key_val": [(("@f34", "@i34"), {})],
    "lax.top_k": [(("@f4", 2), {})],
    "lax.argmax": [(("@f34", 1, "$int32"), {})],
    "lax.argmin": [(("@f34", 1, "$int32"), {})],
    "lax.reduce_precision": [(("@f34", 5, 10), {})],
    "lax.convert_element_type": [(("@f34", "$int32"), {})],
    "lax.bitcast_convert_type": [(("@f34", "$int32"), {})],
    "lax.iota": [(("$int32", 5), {})],
    "lax.full": [(((3, 4), 2.0), {})],
    "lax.full_like": [(("@f34", 2.0), {})],
    "lax.broadcasted_iota": [(("$int32", (3, 4), 1), {})],
    "lax.clamp": [((0.2, "@f34", 0.7), {})],
    "lax.collapse": [(("@f234", 0, 2), {})],
    "lax.split": [(("@f34", (1, 3), 1), {})],
    "lax.cumsum": [(("@f34",), {"axis": 1})],
    "lax.cumprod": [(("@f34",), {"axis": 1})],
    "lax.cummax": [(("@f34",), {"axis": 1})],
    "lax.cummin": [(("@f34",), {"axis": 1})],
    "lax.cumlogsumexp": [(("@f34",), {"axis": 1})],
    "lax.reduce_sum": [(("@f34", (0,)), {})],
    "lax.reduce_max": [(("@f34", (0,)), {})],
    "lax.reduce_min": [(("@f34", (0,)), {})],
    "lax.reduce_prod": [(("@f34", (0,)), {})],
    "lax.reduce_and": [(("@b34", (0,)), {})],
    "lax.reduce_or": [(("@b34", (0,)), {})],
    "lax.reduce_xor": [(("@b34", (0,)), {})],
    "lax.zeros_like_array": [(("@f34",), {})],
    "lax.tie_in": [(("@f34", "@g34"), {})],
    "lax.linalg.tridiagonal_solve": [(("@tdl", "@td", "@tdu", "@f43"), {})],
    "lax.linalg.triangular_solve": [(("@tri44", "@g44"),
                                     {"left_side": True, "lower": False})],
    "lax.linalg.tridiagonal": [(("@spd44",), {})],
    # jax.scipy
    "scipy.linalg.cho_solve": [((("@spd_chol", True), "@f4"), {})],
    "scipy.linalg.lu_solve": [((("@m44", "@perm"), "@f4"), {})],
    "scipy.linalg.solve_triangular": [(("@tri44", "@f4"), {})],
    "scipy.linalg.block_diag": [(("@f34", "@f22"), {})],
    "scipy.linalg.toeplitz": [(("@f4", "@g4"), {})],
    "scipy.linalg.hilbert": [((4,), {})],
    "scipy.linalg.expm_frechet": [(("@m44s", "@g44s"), {})],
    "scipy.linalg.expm": [(("@m44s",), {})],
    "scipy.linalg.funm": [(("@m44s", "$sq"), {})],
    "scipy.linalg.eigh_tridiagonal": [(("@f4", "@h3"),
                                       {"eigvals_only": True})],
    "scipy.signal.welch": [(("@f64",), {"nperseg": 16})],
    "scipy.signal.csd": [(("@f64", "@f64"), {"nperseg": 16})],
    "scipy.signal.stft": [(("@f64",), {"nperseg": 16})],
    "scipy.signal.istft": [(("@zstft",), {"nperseg": 16})],
    "scipy.special.lpmn": [((2, 2, "@f4"), {})],
    "scipy.special.lpmn_values": [((2, 2, "@f4", False), {})],
    "scipy.special.sph_harm": [(("@i4z", "@i4", "@f4", "@g4"), {"n_max": 5})],
    "scipy.special.sph_harm_y": [(("@i4", "@i4z", "@f4", "@g4"),
                                  {"n_max": 5})],
    "scipy.special.bernoulli": [((5,), {})],
    "scipy.stats.gaussian_kde": [(("@f16",), {})],
    "scipy.stats.mode": [(("@i34",), {"axis": 0})],
    "scipy.stats.rankdata": [(("@f34",), {})],
    "scipy.stats.sem": [(("@f34",), {})],
    "scipy.stats.multivariate_normal.logpdf": [(("@f34", "@f4", "@spd44"),
                                                {})],
    "scipy.stats.multivariate_normal.pdf": [(("@f34", "@f4", "@spd44"), {})],
    "scipy.stats.dirichlet.logpdf": [(("@p4", "@f4"), {})],
    "scipy.stats.dirichlet.pdf": [(("@p4", "@f4"), {})],
    "scipy.stats.multinomial.logpmf": [(("@cnt", 10, "@p4"), {})],
    "scipy.stats.multinomial.pmf": [(("@cnt", 10, "@p4"), {})],
    # jax.nn
    "nn.dot_product_attention": [(("@qkv", "@qkv", "@qkv"), {})],
    "nn.one_hot": [(("@idx", 4), {})],
    "nn.scaled_dot_general": [(("@f34", "@f43", (((1,), (0,)), ((), ()))),
                               {})],
    "nn.scaled_matmul": [(("@f134", "@f134", "@s1341", "@s1341"), {})],
    # jax.random
    "random.multivariate_normal": [(("@key", "@f4", "@spd44"), {})],
    "random.categorical": [(("@key", "@f34"), {})],
    "random.choice": [(("@key", "@f4", (3,)), {})],
    "random.permutation": [(("@key", "@f4"), {})],
    "random.orthogonal": [(("@key", 3), {})],
    "random.ball": [(("@key", 3), {})],
    "random.wrap_key_data": [(("@u2",), {})],
    "random.rbg_key": [((0,), {})],
    "random.unsafe_rbg_key": [((0,), {})],
    "random.threefry2x32_key": [((0,), {})],
}

# Values only the hand-written cases use.
def _extra_values(v):
  spd = v["spd44"].astype(np.float64)
  v["spd_chol"] = np.linalg.cholesky(spd).astype(np.float32)
  v["m44s"] = (v["m44"] / 8).astype(np.float32)
  v["g44s"] = (v["g44"] / 8).astype(np.float32)
  v["h3"] = v["h4"][:3].copy()
  v["idxa"] = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 2, 2]], np.int32)
  v["b4"] = np.array([True, False, True, True])
  v["tdl"] = np.array([0.0, 0.1, 0.2, 0.3], np.float32)
  v["td"] = np.array([2.0, 2.5, 3.0, 3.5], np.float32)
  v["tdu"] = np.array([0.3, 0.2, 0.1, 0.0], np.float32)
  v["i4z"] = np.array([0, 1, 1, 2], np.int32)
  v["cnt"] = np.array([1, 2, 3, 4], np.float32)
  v["zstft"] = (v["f16"].reshape(2, 8).T[:, :3] + 0.5j).astype(np.complex64)
  v["zstft"] = np.concatenate([v["zstft"]] * 3, axis=0)[:9, :]
  v["f134"] = v["f34"].reshape(1, 3, 4)
  v["s1341"] = np.ones((1, 3, 1), np.float32)
  v["g43"] = v["f34"].T[::-1].copy()
  v["gi"] = np.array([[0], [2]], np.int32)
  v["upd24"] = v["g34"][:2].copy()
  v["r64"] = np.concatenate([v["f34"], v["g34"]])
  v["r243"] = np.stack([v["f43"], v["f43"][::-1]])
  v["gs"] = np.array([2, 4], np.int32)
  return v


_VALUES = None


def value_bank():
  global _VALUES
  if _VALUES is None:
    _VALUES = _extra_values(values())
  return _VALUES


# Public callables that are not checked, by qualname, with the reason.
SKIP = {
    # Not array functions.
    "jnp.load": "reads a file",
    "jnp.save": "writes a file",
    "jnp.savez": "writes a file",
    "jnp.printoptions": "context manager, no arrays",
    "jnp.set_printoptions": "global state, no arrays",
    "jnp.get_printoptions": "global state, no arrays",
    "jnp.show_config": "prints",
    "jnp.vectorize": "returns a transformed function, not arrays",
    "jnp.frompyfunc": "returns a ufunc object, not arrays",
    "jnp.iinfo": "dtype information class",
    "jnp.finfo": "dtype information class",
    "jnp.dtype": "dtype constructor",
    "jnp.promote_types": "dtypes only",
    "jnp.result_type": "dtypes only",
    "jnp.can_cast": "dtypes only",
    "jnp.issubdtype": "dtypes only",
    "jnp.isdtype": "dtypes only",
    "jnp.__array_namespace_info__": "namespace information",
    "jnp.ufunc": "class",
    "jnp.fromstring": "parses text; no arrays in, no device",
    "jnp.fromfile": "reads a file",
    "jnp.fromiter": "not implemented in JAX",
    "lax.psum": "collective: needs a named axis",
    "lax.pmean": "collective: needs a named axis",
    "lax.pmax": "collective: needs a named axis",
    "lax.pmin": "collective: needs a named axis",
    "lax.psum_scatter": "collective: needs a named axis",
    "lax.pshuffle": "collective: needs a named axis",
    "lax.ppermute": "collective: needs a named axis",
    "lax.pswapaxes": "collective: needs a named axis",
    "lax.all_gather": "collective: needs a named axis",
    "lax.all_to_all": "collective: needs a named axis",
    "lax.axis_index": "collective: needs a named axis",
    "lax.axis_size": "collective: needs a named axis",
    "lax.pbroadcast": "collective: needs a named axis",
    "lax.pvary": "collective: needs a named axis",
    "lax.pcast": "collective: needs a named axis",
    "lax.psend": "collective: needs a named axis",
    "lax.precv": "collective: needs a named axis",
    "lax.ragged_all_to_all": "collective: needs a named axis",
    "lax.psum_invariant": "collective: needs a named axis",
    "lax.all_gather_invariant": "collective: needs a named axis",
    "lax.infeed": "needs an infeed queue",
    "lax.outfeed": "needs an outfeed queue",
    "lax.create_token": "returns a token, no arrays",
    "lax.after_all": "tokens, no arrays",
    "jnp.array_repr": "returns a string",
    "jnp.array_str": "returns a string",
    "jnp.iscomplexobj": "returns a Python bool",
    "jnp.isrealobj": "returns a Python bool",
    "jnp.isscalar": "returns a Python bool",
    "jnp.iterable": "returns a Python bool",
    "jnp.ndim": "returns a Python int",
    "jnp.shape": "returns a Python tuple",
    "jnp.size": "returns a Python int",
    "jnp.broadcast_shapes": "shape arithmetic, no arrays",
    "jnp.einsum_path": "returns the contraction path, no arrays",
    "lax.dtype": "returns a dtype",
    "lax.shape_as_value": "returns a Python tuple",
    "lax.dce_sink": "no outputs",
    "lax.composite": "a decorator",
    "lax.empty": "uninitialised contents: values are undefined",
    "lax.with_sharding_constraint": "sharding annotation; covered by "
                                    "tests/placement_test.py",
    "lax.conv_dimension_numbers": "shape arithmetic, no arrays",
    "lax.conv_general_permutations": "shape arithmetic, no arrays",
    "lax.conv_general_shape_tuple": "shape arithmetic, no arrays",
    "lax.conv_shape_tuple": "shape arithmetic, no arrays",
    "lax.conv_transpose_shape_tuple": "shape arithmetic, no arrays",
    "lax.padtype_to_pads": "shape arithmetic, no arrays",
    "lax.reduce_window_shape_tuple": "shape arithmetic, no arrays",
    "lax.psum_scatter_start": "collective: needs a named axis",
    "nn.get_scaled_dot_general_config": "returns a configuration object",
    "random.key_dtype": "returns a dtype",
    "random.key_impl": "returns the implementation object, not arrays",
    "random.default_prng_impl": "returns the implementation object",
    "random.resolve_prng_impl": "returns the implementation object",
}


def _module(short):
  import importlib
  return importlib.import_module(MODULES[short])


def public_functions():
  """Every public function of MODULES: a list of (qualname, object).

  Classes and modules are left out; the distribution objects of
  jax.scipy.stats (norm, beta, ...) contribute their functions
  (`scipy.stats.norm.logpdf`). Aliases keep every public name; see
  `distinct_count` for the count of distinct objects.
  """
  import types
  out = []
  for short in MODULES:
    mod = _module(short)
    for name in sorted(dir(mod)):
      if name.startswith("_"):
        continue
      obj = getattr(mod, name)
      if short == "scipy.stats" and isinstance(obj, types.ModuleType):
        for sub in sorted(dir(obj)):
          f = getattr(obj, sub)
          if (not sub.startswith("_") and callable(f)
              and not isinstance(f, (type, types.ModuleType))
              and getattr(f, "__module__", "").startswith("jax")):
            out.append((f"{short}.{name}.{sub}", f))
        continue
      if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
        continue
      if short.startswith(FAMILY) and obj.__module__ != mod.__name__:
        continue  # imported, not a program of the family
      out.append((f"{short}.{name}", obj))
  return out


def resolve(qualname):
  """The object of a qualname such as `jnp.linalg.norm`."""
  parts = qualname.split(".")
  for i in range(len(parts) - 1, 0, -1):
    short = ".".join(parts[:i])
    if short in MODULES:
      obj = _module(short)
      for p in parts[i:]:
        obj = getattr(obj, p)
      return obj
  raise KeyError(qualname)


def module_of(qualname):
  parts = qualname.split(".")
  for i in range(len(parts) - 1, 0, -1):
    if ".".join(parts[:i]) in MODULES:
      return ".".join(parts[:i])
  raise KeyError(qualname)


# The fast subset that tests/conformance_test.py runs: functions spread over
# every module, with one, two and three array inputs, creation functions,
# control flow and keys, and programs of every family.
FAST = [
    "jnp.add", "jnp.sin", "jnp.where", "jnp.matmul", "jnp.sum", "jnp.cumsum",
    "jnp.sort", "jnp.take", "jnp.concatenate", "jnp.einsum", "jnp.clip",
    "jnp.unique", "jnp.zeros", "jnp.arange", "jnp.full_like", "jnp.asarray",
    "jnp.eye", "jnp.linspace", "jnp.searchsorted", "jnp.interp",
    "jnp.linalg.solve", "jnp.linalg.cholesky", "jnp.linalg.svd",
    "jnp.linalg.norm", "jnp.fft.fft", "jnp.fft.rfft2", "jnp.fft.fftfreq",
    "lax.add", "lax.dot_general", "lax.cond", "lax.scan", "lax.fori_loop",
    "lax.dynamic_update_slice", "lax.conv", "lax.sort_key_val", "lax.iota",
    "lax.select_n", "lax.linalg.qr", "lax.linalg.triangular_solve",
    "nn.relu", "nn.softmax", "nn.one_hot", "nn.dot_product_attention",
    "scipy.special.gammaln", "scipy.special.logsumexp", "scipy.special.xlogy",
    "scipy.linalg.solve_triangular", "scipy.linalg.cho_solve",
    "scipy.linalg.lu",
    "scipy.signal.convolve", "scipy.signal.welch",
    "scipy.stats.norm.logpdf", "scipy.stats.expon.pdf",
    "scipy.stats.uniform.logpdf",
    "random.normal", "random.uniform", "random.split", "random.bits",
    "random.choice", "random.key", "random.bernoulli", "random.fold_in",
    "family.refs.written_on_another_device", "family.refs.updated_then_moved",
    "family.callbacks.ordered_io_callbacks_across_devices",
    "family.callbacks.debug_callback_on_two_devices",
    "family.transfer_guard.explicit_moves_of_an_argument",
    "family.transfer_guard.implicit_move",
    "family.donation.read_by_a_stage_after_its_transfer",
    "family.donation.returned_as_it_is",
    "family.aot.computed_where_committed",
    "family.aot.moved_to_a_one_device_mesh",
    "family.array_lists.asarray_with_numpy",
    "family.array_lists.array_of_two_arguments",
]
