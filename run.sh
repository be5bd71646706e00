#!/usr/bin/env bash
# The main job: install what is missing, build, and open attnscope on the default scenario.
# With no display it says so and exports the default scenario's heatmaps headlessly instead.
source "$(dirname "$0")/scripts/common.sh"
install_missing "${BUILD_PACKAGES[@]}"
build "$ROOT/build" -DATTNSCOPE_BUILD_TESTS=OFF -DATTNSCOPE_BUILD_BENCH=OFF
exec "$ROOT/scripts/main-job.sh" "$ROOT/build/attnscope" "$@"
