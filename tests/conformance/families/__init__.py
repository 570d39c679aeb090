"""Program families of the conformance check: whole programs, not functions.

Each module is a family of small programs on the classes of behaviour where a
computation spans devices or meets JAX's runtime (refs, callbacks and
effects, transfer guards, donation, the AOT stages, list arguments of
jnp.array and jnp.asarray). spec.MODULES lists them as `family.<module>`, so
the table, the runner and the report treat a program as a public function.
Their oracle is eager mode (compare.check_run): under jit and through the AOT
stages a program must do what it does eagerly.

A program may set attributes the runner reads:

- call_context: a context manager factory entered around the call only (a
  transfer guard);
- jit_kwargs: keyword arguments of the runner's jax.jit (donate_argnums);
  the runner records which array inputs the call deleted.

Programs name devices by index, as the modes do: cpu:6 is another device than
the modes' cpu:3 (committed) and cpu:5 (default).
"""

OTHER_DEVICE = 6


def dev(i=OTHER_DEVICE):
  import jax
  return jax.devices()[i]
