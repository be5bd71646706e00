#!/usr/bin/env bash
# Install what is missing, build everything, and run the whole test suite through ctest.
source "$(dirname "$0")/scripts/common.sh"
install_missing "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
build "$ROOT/build-test" -DATTNSCOPE_BUILD_TESTS=ON -DATTNSCOPE_BUILD_BENCH=ON
cd "$ROOT/build-test"
ctest --output-on-failure -j "$JOBS" "$@"
