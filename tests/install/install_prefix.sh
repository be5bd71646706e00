#!/bin/sh
# Install into a scratch prefix, then run the installed attnscope from there with the
# source tree out of reach (hidden under an empty tmpfs in a private mount namespace when
# unshare is allowed; always: no source path compiled into the binary), and check the
# desktop file, the man page and the bash completion that were installed.
#   install_prefix.sh BUILD_DIR SCRATCH_DIR
set -eu
build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$2"
mkdir -p "$2"
scratch=$(cd "$2" && pwd)
prefix=$scratch/prefix

fail() { echo "install_prefix: $*" >&2; exit 1; }

# 1 install
cmake --install "$build" --prefix "$prefix" > "$scratch/install.log"
for f in bin/attnscope share/attnscope/scenarios/decoder_state.json \
         share/attnscope/images/shapes.png share/attnscope/shaders/heatmap.frag \
         share/applications/attnscope.desktop share/mime/packages/attnscope.xml \
         share/icons/hicolor/scalable/apps/attnscope.svg \
         share/icons/hicolor/256x256/apps/attnscope.png \
         share/man/man1/attnscope.1 share/bash-completion/completions/attnscope; do
  [ -e "$prefix/$f" ] || fail "missing $prefix/$f"
done

# 2 nothing in the binary points into the source tree or the build folder (not checked in
# the sanitizer build: ASan keeps every object's source path for its reports)
if [ "${ATTNSCOPE_SANITIZED:-0}" = 1 ]; then
  echo "install_prefix: sanitizer build, the path checks of step 2 are skipped"
else
  if grep -a -q -F "$source_dir/" "$prefix/bin/attnscope"; then
    fail "$prefix/bin/attnscope holds the source path $source_dir"
  fi
  if grep -a -q -F "$build/" "$prefix/bin/attnscope"; then
    fail "$prefix/bin/attnscope holds the build path $build"
  fi
fi

# 3 export a preset from the install; the same bytes as the build folder's binary writes
expected=$scratch/expected.png
"$build/attnscope" export "$source_dir/assets/scenarios/fbi_causal.json" --out "$expected"
run_export='cd / && "$0/bin/attnscope" export "$0/share/attnscope/scenarios/fbi_causal.json" --out "$1"'
# The prefix moved to a folder outside the source tree (an install is relocatable), which
# is then hidden.
moved=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-moved-XXXXXX")
trap 'rm -rf "$moved"' EXIT
case "$moved" in "$source_dir"/*) fail "TMPDIR must lie outside the source tree" ;; esac
cp -a "$prefix" "$moved/prefix"
hidden=no
if unshare -m sh -c "mount -t tmpfs none '$source_dir' && ! test -e '$source_dir/assets'" \
    2>/dev/null; then
  unshare -m sh -c "mount -t tmpfs none '$source_dir' &&
    sh -c '$run_export' '$moved/prefix' '$moved/installed.png'"
  hidden=yes
else
  sh -c "$run_export" "$moved/prefix" "$moved/installed.png"
fi
cp "$moved/installed.png" "$scratch/installed.png"
cmp "$expected" "$scratch/installed.png" || fail "the installed export differs from the build's"
# The data folder is found from the binary: the presets menu's folder is P/share/attnscope.
"$prefix/bin/attnscope" export "$prefix/share/attnscope/scenarios/decoder_state.json" \
  --matrix scores --out "$scratch/scores.csv"
[ -s "$scratch/scores.csv" ] || fail "no CSV written"

# 4 desktop entry, MIME types, icon
desktop-file-validate "$prefix/share/applications/attnscope.desktop"
grep -q '^Exec=attnscope %f$' "$prefix/share/applications/attnscope.desktop" || fail "Exec"
grep -q '^MimeType=.*application/x-npy;application/x-npz;application/json;' \
  "$prefix/share/applications/attnscope.desktop" || fail "MimeType"
xmllint --noout "$prefix/share/mime/packages/attnscope.xml"
xmllint --noout "$prefix/share/icons/hicolor/scalable/apps/attnscope.svg"
head -c 26 "$prefix/share/icons/hicolor/256x256/apps/attnscope.png" | od -An -tx1 | tr -d ' \n' \
  | grep -q '^89504e470d0a1a0a0000000d4948445200000100000001000806' || fail "icon is not a 256x256 RGBA PNG"

# 5 the man page renders and documents every command and an option of each
man_text=$(MANWIDTH=100 man -P cat -l "$prefix/share/man/man1/attnscope.1" 2>"$scratch/man.err")
[ ! -s "$scratch/man.err" ] || fail "man -l warned: $(cat "$scratch/man.err")"
for word in compute export screenshot bench info image train model --matrix --colormap \
            --predict --scan ATTNSCOPE_DATA_DIR; do
  echo "$man_text" | grep -q -e "$word" || fail "the man page does not mention $word"
done

# 6 the completion completes commands and a command's options
completions=$(bash -c '. "$0"; COMP_WORDS=(attnscope ex); COMP_CWORD=1; _attnscope;
  echo "${COMPREPLY[*]}"; COMP_WORDS=(attnscope export --col); COMP_CWORD=2; _attnscope;
  echo "${COMPREPLY[*]}"; COMP_WORDS=(attnscope model /x --pr); COMP_CWORD=3; _attnscope;
  echo "${COMPREPLY[*]}"' "$prefix/share/bash-completion/completions/attnscope")
[ "$completions" = "export
--color-scale --colormap
--predict" ] || fail "completion gave: $completions"

echo "install_prefix: ok (source tree hidden: $hidden)"
