# common.sh: shell helpers shared by scripts/run-tests and scripts/run-bench.
# Sourced, not run:
#
#   source "$(dirname "$0")/common.sh"
#   iov_configure release && iov_build release --target iov-bench

# The repository root, whatever the caller's directory.
IOV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Parallel compile jobs (the default: one per core).
IOV_JOBS=${IOV_JOBS:-$(nproc 2>/dev/null || echo 2)}

# The generator for a build directory: the one it was configured with, else
# Ninja when installed, else Unix Makefiles. CMakePresets.json leaves it open.
iov_generator() {
  local cache="$1/CMakeCache.txt"
  if [[ -f "$cache" ]]; then
    sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache"
  elif command -v ninja >/dev/null 2>&1; then
    echo Ninja
  else
    echo "Unix Makefiles"
  fi
}

# iov_configure PRESET: configures build/PRESET.
iov_configure() {
  local preset=$1
  CMAKE_GENERATOR=$(iov_generator "$IOV_ROOT/build/$preset") \
    cmake -S "$IOV_ROOT" --preset "$preset"
}

# iov_build PRESET [cmake --build args...]
iov_build() {
  local preset=$1
  shift
  (cd "$IOV_ROOT" && cmake --build --preset "$preset" -j "$IOV_JOBS" "$@")
}

# iov_build_keep_going PRESET [TARGET...]: builds all it can (or the targets)
# past a failing target, so the tests that do build still run; fails if
# anything failed.
iov_build_keep_going() {
  local preset=$1 keep=(-k)
  shift
  [[ "$(iov_generator "$IOV_ROOT/build/$preset")" == Ninja ]] && keep=(-k 0)
  local targets=()
  (( $# )) && targets=(--target "$@")
  iov_build "$preset" "${targets[@]}" -- "${keep[@]}"
}

# iov_cache_value BUILD_DIR VAR: a variable's value in a configured tree.
iov_cache_value() {
  sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" 2>/dev/null
}
