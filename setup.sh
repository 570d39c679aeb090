#!/usr/bin/env bash
# Builds the fork's wheel, installs it into .venv beside upstream jaxlib, makes
# .venv-upstream with pristine upstream jax for side-by-side runs, and runs the
# demonstration (examples/reproducer.py) in both.
#
#   ./setup.sh            build, install, demo
#   ./setup.sh --no-demo  build and install only (what ./test.sh uses)
#
# Needs a Python >= 3.12 with venv and pip (PYTHON=/path/to/python overrides
# the search), git, and access to PyPI the first time.  Re-running is cheap:
# downloads are cached in build/, and an environment is reinstalled only when
# what it was built from changed.
set -euo pipefail
cd "$(dirname "$0")"

demo=1
for arg in "$@"; do
  case "$arg" in
    --no-demo) demo=0 ;;
    *) echo "usage: $0 [--no-demo]" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*"; }

# --- A Python >= 3.12 -------------------------------------------------------
is_ok_python() {  # usage: is_ok_python CMD...
  "$@" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 12))' \
    >/dev/null 2>&1
}

find_python() {
  local c v
  if [ -n "${PYTHON:-}" ]; then
    if is_ok_python "$PYTHON"; then echo "$PYTHON"; return 0; fi
    echo "error: PYTHON=$PYTHON is not a Python >= 3.12 with venv and pip" >&2
    return 1
  fi
  # 3.12 first: the version the fork is tested on most.
  for c in python3.12 python3.13 python3.14 python3 python; do
    if command -v "$c" >/dev/null && is_ok_python "$c"; then
      command -v "$c"; return 0
    fi
  done
  # pyenv installs that are not the selected version (as on these machines,
  # where the default python3 is 3.11).
  if command -v pyenv >/dev/null; then
    for v in $(pyenv versions --bare 2>/dev/null | sort -V); do
      c="$(pyenv root)/versions/$v/bin/python3"
      if [ -x "$c" ] && is_ok_python "$c"; then echo "$c"; return 0; fi
    done
  fi
  {
    echo "error: this needs Python >= 3.12 (with the venv and pip modules);"
    echo "  found none among python3.12, python3.13, python3.14, python3, python"
    command -v python3 >/dev/null && echo "  (python3 is $(python3 --version 2>&1))"
    echo "  Install Python 3.12 or newer, or point PYTHON at one:"
    echo "    PYTHON=/path/to/python3.12 $0"
  } >&2
  return 1
}

PY="$(find_python)"
log "python: $PY ($("$PY" --version 2>&1))"

# --- Downloads: the upstream wheel and everything else, once ---------------
wheelhouse=build/wheelhouse
req=tools/requirements.txt
req_stamp="$wheelhouse/.requirements.sha256"
req_sum="$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$req_stamp" 2>/dev/null)" != "$req_sum" ]; then
  log "downloading pinned requirements into $wheelhouse"
  mkdir -p "$wheelhouse"
  "$PY" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    -d "$wheelhouse" -r "$req"
  echo "$req_sum" > "$req_stamp"
fi

# --- The fork's wheel ------------------------------------------------------
log "building the fork"
"$PY" tools/build.py | sed 's/^/[build] /'
wheel="$(ls dist/jax-*.whl)"
# The pinned release, verified (the cache may hold earlier pins' wheels).
upstream_wheel="$("$PY" -c 'import sys; sys.path.insert(0, "tools")
import forklib; print(forklib.fetch_upstream(forklib.load_pins()))')"

# --- Environments ----------------------------------------------------------
# make_env DIR JAX_WHEEL: a venv with the pinned requirements and one jax.
make_env() {
  local dir="$1" jax_wheel="$2" stamp want
  stamp="$dir/.devtrace-installed"
  want="$req_sum $(sha256sum "$jax_wheel" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    log "$dir is up to date"
    return 0
  fi
  log "installing $(basename "$jax_wheel") into $dir"
  [ -x "$dir/bin/python" ] || "$PY" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-index \
    --find-links "$wheelhouse" -r "$req"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-index \
    --find-links "$wheelhouse" --force-reinstall --no-deps "$jax_wheel"
  "$dir/bin/python" -m pip check >/dev/null || "$dir/bin/python" -m pip check
  echo "$want" > "$stamp"
}

make_env .venv "$wheel"
make_env .venv-upstream "$upstream_wheel"
log "fork:     $(.venv/bin/python -c 'import jax; print(jax.__version__, jax.__file__)')"
log "upstream: $(.venv-upstream/bin/python -c 'import jax; print(jax.__version__)')"

if [ "$demo" = 1 ]; then
  log "demonstration: examples/reproducer.py"
  .venv/bin/python examples/reproducer.py --upstream .venv-upstream/bin/python
fi
