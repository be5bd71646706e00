#!/usr/bin/env bash
# Remakes tests/data/torch/*.json.gz, the stored outputs of the PyTorch reference scripts
# (hf_reference.py, rope_reference.py, analysis_reference.py, encoder_reference.py and
# encoder_analysis_reference.py in
# tests/formats/) that the tests compare with (tests/support/torch_cache.h). Run it after
# changing a reference script, a test fixture (model_fixture.h, encoder_fixture.h,
# vit_fixture.h in tests/support/) or a test's models, ids or jobs: the tests then fail with "reference is stale: run
# scripts/remake-torch-references.sh". It removes the stored entries, runs every test that
# compares with PyTorch with ATTNSCOPE_LIVE_TORCH=update (each runs its script now, checks
# attnscope against the fresh output and writes the entry), then runs them again from the
# stored entries. Needs python3 with torch and numpy (python3-torch), and a build with tests.
# Usage: scripts/remake-torch-references.sh [BUILD_DIR]   (default: build-test)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build-test}"
if [ $# -gt 1 ] || [ ! -d "$BUILD" ]; then
  echo "usage: $0 [BUILD_DIR]   (a configured build folder with the tests built; '$BUILD' is not a folder)" >&2
  exit 2
fi
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  echo "$0: /usr/bin/python3 cannot import torch and numpy (apt-get install python3-torch)" >&2
  exit 2
fi
# Every test that reads a stored entry: test program and GoogleTest filter. A test that
# starts to use tests/support/torch_cache.h is added here.
TESTS=(
  "tests_formats ModelFamilies.MatchPyTorchReference"
  "tests_formats NewFamilies.MatchPyTorchReference"
  "tests_formats RopeForward.EveryRopeTypeMatchesPyTorchReference"
  "tests_formats Analysis.MatchesPyTorchWithForwardHooks:Analysis.LensScaleDatasetMeanAndBosRepeatMatchPyTorch"
  "tests_formats Encoders.MatchPyTorchReference"
  "tests_formats Vit.MatchesPyTorchReference"
  "tests_cli CliAnalysisBidirectional.EncoderAblationEqualsTorchHeadMask:CliAnalysisBidirectional.VitAblationEqualsTorchHeadMask:CliAnalysisBidirectional.HeadScoresOfEncoderAndVitEqualTheReferencePatterns"
  "tests_cli CliPatchingBidirectional.EncoderLensMatchesTorchHiddenStatesThroughTheMlmHead:CliPatchingBidirectional.EncoderPatchingMatchesTorchForwardHooks:CliPatchingBidirectional.VitPatchingMatchesTorchForwardHooks"
)
for entry in "${TESTS[@]}"; do
  program=${entry%% *}
  if [ ! -x "$BUILD/$program" ]; then
    echo "$0: $BUILD/$program is not built (cmake --build $BUILD --target $program)" >&2
    exit 2
  fi
done
rm -f "$ROOT"/tests/data/torch/*.json.gz
for pass in update 0; do
  for entry in "${TESTS[@]}"; do
    program=${entry%% *}
    filter=${entry#* }
    echo "== $program ($([ "$pass" = update ] && echo "PyTorch now, writing the entries" || echo "from the stored entries"))"
    (cd "$BUILD" && ATTNSCOPE_LIVE_TORCH=$pass "./$program" --gtest_filter="$filter" --gtest_brief=1)
  done
done
echo "== tests/data/torch: $(ls "$ROOT"/tests/data/torch/*.json.gz | wc -l) entries, $(du -ck "$ROOT"/tests/data/torch/*.json.gz | tail -1 | cut -f1) KB"
