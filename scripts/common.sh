#!/usr/bin/env bash
# Shared by run.sh and test.sh: install missing Debian packages, configure and build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc 2>/dev/null || echo 2)"

# Debian 12 packages attnscope needs to build, run and test (see README.md and docs/).
# One package per line, so that branches adding packages merge cleanly.
BUILD_PACKAGES=(
  cmake g++ make pkg-config
  ninja-build
  libimgui-dev libglfw3-dev libgl-dev libgl1-mesa-dri fonts-dejavu-core
  fonts-droid-fallback
  libeigen3-dev libstb-dev nlohmann-json3-dev
  libopenblas-dev
  libopenblas0-pthread
  libzip-dev
  zlib1g-dev
  libpcre2-dev
  libsentencepiece-dev
  libicu-dev
  libfreetype-dev
  libfontconfig-dev
  libharfbuzz-dev
  libcairo2-dev
  libgif-dev
  fonts-noto-cjk
)
TEST_PACKAGES=(libgtest-dev libbenchmark-dev xvfb xauth
  zlib1g-dev
  time
  binutils
  desktop-file-utils
  libxml2-utils
  man-db
  python3
  python3-numpy
  python3-distributed
  python3-torch
  x11-utils
  dpkg-dev
  sentencepiece
  python3-pil
  poppler-utils
  ccache
  lld
)

# install_missing PKG...: apt-get installs only what dpkg says is not installed yet.
install_missing() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  echo "attnscope: installing missing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# build DIR [cmake args...]: configure once, then build incrementally.
# ATTNSCOPE_UNITY_BUILD=ON in the environment makes a new build folder a unity build, as
# .ci/run's two builds are: each library's sources (CMAKE_UNITY_BUILD, no batch limit) and
# each layer's test files (ATTNSCOPE_TEST_UNITY_BATCH=0) compile as ONE translation unit,
# so the headers are parsed and their templates instantiated once per library, not once
# per batch of 8: half the compile time of batches of 8 (docs/ci.md, "Seventh pass").
# Left unset (test.sh, run.sh), each library file is its own translation unit and the test
# files are batched by 8, so editing one file recompiles one file or one batch.
build() {
  local dir="$1"; shift
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    # Ninja when it is there (a folder made before keeps its generator): it starts a
    # library's files as soon as the headers they need exist, not after the libraries below
    # it are archived as make does, so both cores stay busy while the last, largest
    # translation unit of a layer compiles (docs/ci.md, "Sixth pass").
    local generator=()
    if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
    local unity=()
    if [ "${ATTNSCOPE_UNITY_BUILD:-OFF}" = ON ]; then
      unity=(-DCMAKE_UNITY_BUILD_BATCH_SIZE=0 -DATTNSCOPE_TEST_UNITY_BATCH=0)
    fi
    cmake -S "$ROOT" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_UNITY_BUILD="${ATTNSCOPE_UNITY_BUILD:-OFF}" "${unity[@]}" "$@" >/dev/null
  fi
  cmake --build "$dir" -j "$JOBS"
}
