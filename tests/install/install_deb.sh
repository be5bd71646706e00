#!/bin/sh
# Build the Debian package with cpack, check its Depends, extract it into a scratch root
# with dpkg -x and run `attnscope export` on a preset from there.
#   install_deb.sh BUILD_DIR SCRATCH_DIR
set -eu
build=$(cd "$1" && pwd)
rm -rf "$2"
mkdir -p "$2"
scratch=$(cd "$2" && pwd)
mkdir -p "$scratch/root"
fail() { echo "install_deb: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$scratch/out" > "$scratch/cpack.log") ||
  { cat "$scratch/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$scratch"/out/attnscope_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "install_deb: Depends: $depends"
for package in libc6 libstdc++6 libglfw3 libopenblas0 libzip4 libpcre2-8-0 libgl1 \
    fonts-dejavu-core; do
  echo "$depends" | grep -q -e "$package" || fail "Depends lacks $package: $depends"
done
dpkg-deb -c "$deb" | grep './usr/share/applications/attnscope.desktop' > /dev/null || fail "no .desktop"

dpkg -x "$deb" "$scratch/root"
"$scratch/root/usr/bin/attnscope" export \
  "$scratch/root/usr/share/attnscope/scenarios/decoder_state.json" --out "$scratch/out.png"
"$build/attnscope" export "$scratch/root/usr/share/attnscope/scenarios/decoder_state.json" \
  --out "$scratch/expected.png"
cmp "$scratch/out.png" "$scratch/expected.png" || fail "the packaged export differs"
# the Python module, from where Debian's python3 looks, talking to the packaged binary
dpkg-deb -c "$deb" | grep './usr/lib/python3/dist-packages/attnscope/session.py' > /dev/null ||
  fail "no Python module in the package"
if /usr/bin/python3 -c 'import numpy' 2> /dev/null; then
  PYTHONPATH="$scratch/root/usr/lib/python3/dist-packages" ATTNSCOPE_BIN="$scratch/root/usr/bin/attnscope" \
    /usr/bin/python3 -c 'import attnscope, sys; m = attnscope.Model(sys.argv[1]); print(m._call(["--version"])["out"].split()[0]); m.close()' \
    "$scratch/root/usr/bin/attnscope" | grep -q '^attnscope$' || fail "the packaged Python session does not answer"
fi
echo "install_deb: ok ($(basename "$deb"), $(stat -c %s "$deb") bytes)"
