#!/bin/bash
# Idle CPU of the window (docs/performance.md): opens SCENARIO, waits 4 s, then prints the
# process's CPU use (utime+stime from /proc/PID/stat) over 10 s without input, in % of one
# core. Needs a display: run as
#   xvfb-run -a -s '-screen 0 1600x1000x24' scripts/measure_idle_cpu.sh build/attnscope SCENARIO
# Uses a throwaway HOME so the autosave of the real session is not touched.
set -eu
BIN=$1
SCENARIO=$2
TMP_HOME=$(mktemp -d)
HOME=$TMP_HOME XDG_STATE_HOME=$TMP_HOME/state "$BIN" "$SCENARIO" >/dev/null 2>&1 &
PID=$!
sleep 4
T0=$(awk '{print $14+$15}' /proc/$PID/stat)
S0=$(date +%s.%N)
sleep 10
T1=$(awk '{print $14+$15}' /proc/$PID/stat)
S1=$(date +%s.%N)
HZ=$(getconf CLK_TCK)
echo "idle cpu: $(echo "($T1-$T0)/$HZ/($S1-$S0)*100" | bc -l | cut -c1-5) % of a core"
kill $PID
wait $PID 2>/dev/null || true
rm -rf "$TMP_HOME"
