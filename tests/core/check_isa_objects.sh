#!/bin/sh
# The per-ISA kernel objects (core/isa/kernels_<isa>.cpp.o) must not define anything the
# linker could merge with another translation unit's copy: no weak or unique symbols (the
# inline functions and template instances that -mavx512f code would share with everyone),
# and one global symbol each, its kernel table. AddressSanitizer's per-global ODR markers
# (__odr_asan.*) are its own bookkeeping, not code, and are not counted.
# Usage: check_isa_objects.sh OBJECT...
status=0
for object in "$@"; do
  shared=$(nm "$object" | grep -E ' [WVvu] ')
  if [ -n "$shared" ]; then
    echo "FAIL: $object defines symbols the linker may merge:"; echo "$shared"; status=1
  fi
  globals=$(nm --defined-only -g "$object" | grep -v ' __odr_asan\.' | wc -l)
  if [ "$globals" -ne 1 ]; then
    echo "FAIL: $object defines $globals global symbols, expected only its kernel table:"
    nm -C --defined-only -g "$object"; status=1
  fi
done
[ $status -eq 0 ] && echo "ok: $# kernel objects, one global symbol each, no weak symbols"
exit $status
