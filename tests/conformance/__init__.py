"""Differential conformance check of the fork against upstream JAX.

Every public function of jax.numpy (with .linalg and .fft), jax.lax (with
.linalg), jax.nn, jax.scipy (special, linalg, signal, stats) and jax.random is
called with fixed, valid arguments in three placement modes, eagerly and under
jit, in the fork's environment and in upstream's; the results are compared
value for value (bitwise) and checked against the fork's placement rule.

Modules:

- `spec`: the value bank, the argument recipes that `probe` tries, the
  hand-written cases and the functions left out (each with its reason);
- `probe`: run with UPSTREAM jax, picks each function's arguments and writes
  `table.json` (committed, so the fork is checked against a fixed table);
- `table`: reads the generated case table, `table.json`;
- `runner`: runs the table's cases in one environment and pickles results;
- `compare`: the placement rule, the EXPECTED departures (read from
  `expected.toml`) and the comparison.

The command is `tools/conformance.py`; `tests/conformance_test.py` runs a
fast subset inside the test suite.
"""
