# The array-API libraries that the tests drive (not a test file itself).
#
# array-api-compat, array-api-extra, and SciPy, which reads SCIPY_ARRAY_API
# when it is first imported: conftest.py sets it for a pytest run, and this
# module for a run of one test file alone. Without the libraries (the pinned
# requirements install them) the names are None and the tests skip.

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

try:
  import array_api_compat
  import array_api_extra as xpx
  import scipy.fft
  import scipy.special
except ImportError:  # pragma: no cover - the pinned requirements install them
  array_api_compat = xpx = scipy = None
