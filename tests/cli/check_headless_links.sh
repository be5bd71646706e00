#!/bin/sh
# The headless build (-DATTNSCOPE_BUILD_GUI=OFF) links no window library: `ldd` of its
# attnscope names no libGL / libGLX / libOpenGL / libglfw / imgui.
# Usage: check_headless_links.sh ATTNSCOPE_BINARY
libraries=$(ldd "$1") || { echo "FAIL: ldd $1 failed"; exit 1; }
window=$(echo "$libraries" | grep -iE 'libGL|libOpenGL|glfw|imgui')
if [ -n "$window" ]; then
  echo "FAIL: $1 links window libraries:"; echo "$window"; exit 1
fi
count=$(echo "$libraries" | wc -l)
echo "ok: $1 links $count libraries, none of GL, GLFW or ImGui"
