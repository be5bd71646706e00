#!/usr/bin/env python3
"""The reference for tests/formats/test_formats_unicode.cpp: Python's unicodedata (CPython's
own C implementation of UAX #15, independent of formats/tokenizers/unicode_normalize.cpp).
Prints JSON: {"version", "assigned": [[first, last], ...] the ranges of code points assigned
in this Unicode version, "changed": [[cp, nfd, nfc], ...] for every assigned code point whose
NFD or NFC differs from itself, "sequences": [[text, nfd, nfc], ...] for 3000 seeded random strings
of letters, precomposed letters, combining marks of many classes, Hangul jamo and syllables,
singletons and composition exclusions}."""
import json
import random
import unicodedata as ud

changed, assigned = [], []
for cp in range(0x110000):
    if 0xD800 <= cp < 0xE000:
        continue
    c = chr(cp)
    if ud.category(c) == "Cn":
        continue
    if assigned and assigned[-1][1] == cp - 1:
        assigned[-1][1] = cp
    else:
        assigned.append([cp, cp])
    d, n = ud.normalize("NFD", c), ud.normalize("NFC", c)
    if d != c or n != c:
        changed.append([cp, d, n])
pool = [chr(c) for c in [0x41, 0x61, 0x65, 0x6F, 0x55, 0x3B1, 0x3C9, 0x438, 0x5D0, 0x627, 0x915,
                         0xC0, 0xE9, 0x1E69, 0x1E0B, 0x1EA0, 0x2126, 0x212B, 0x958, 0xFB1D, 0x344,
                         0x300, 0x301, 0x302, 0x308, 0x323, 0x327, 0x328, 0x31B, 0x345, 0x5B0,
                         0x5BC, 0x64B, 0x651, 0x93C, 0x94D, 0x3099, 0x309A, 0x304B, 0x30CF,
                         0x1100, 0x1161, 0x11A8, 0x11C2, 0xAC00, 0xAC01, 0xD7A3, 0x20, 0x1F600,
                         0x1D15E, 0x1D165, 0x1D16E, 0x0F73, 0x0F75, 0x0FB2, 0x0F80, 0x0F71]]
rng = random.Random(2026)
sequences = []
for _ in range(3000):
    s = "".join(rng.choice(pool) for _ in range(rng.randint(1, 8)))
    sequences.append([s, ud.normalize("NFD", s), ud.normalize("NFC", s)])
print(json.dumps({"version": ud.unidata_version, "assigned": assigned, "changed": changed,
                  "sequences": sequences}))
