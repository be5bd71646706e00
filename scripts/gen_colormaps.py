#!/usr/bin/python3
"""Generates render/colormap_data.inc: attnscope's 256-entry RGB colormap tables.

Run once by hand (NOT at build time) with Debian's matplotlib:

    apt-get install -y python3-matplotlib
    /usr/bin/python3 scripts/gen_colormaps.py > render/colormap_data.inc

Entry i of a table is matplotlib's cmap(i / 255) with each channel rounded to 8 bits,
so entry 0 and entry 255 are the exact ends of the map.

The maps are the colormap table's (ATTN_COLORMAPS in core/scenario/view_options.h, the one
list the enum, the names and the CLI help read too): one table for each entry with a
matplotlib source, in the table's order. Entries without one (RdBu) are computed in
render/colormap.cpp.
"""
import os
import re
import sys

import matplotlib
from matplotlib import colormaps

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "scenario",
                     "view_options.h")
ENTRY = re.compile(r'X\((\w+),\s*"([^"]*)",\s*"([^"]*)",\s*(true|false),\s*"((?:[^"\\]|\\.)*)"\)')


def read_maps(path=TABLE):
    """(attnscope name, matplotlib name) of each table entry with a source, in table order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("#define ATTN_COLORMAPS(X)")
    end = text.index("// clang-format on", start)
    entries = ENTRY.findall(text[start:end])
    if not entries:
        sys.exit("gen_colormaps.py: no X(...) entries in ATTN_COLORMAPS of " + path)
    return [(name, source) for _kind, name, source, _diverging, _description in entries if source]


MAPS = read_maps()

HEADER = """\
// GENERATED FILE, do not edit: produced by scripts/gen_colormaps.py from matplotlib {version}'s
// colormap data (cmap(i / 255) for i = 0..255, each channel rounded to 8 bits).
//
// Licences of the underlying colour data:
//   * viridis, magma: Nathaniel J. Smith and Stefan van der Walt (viridis with Eric Firing),
//     released under the CC0 1.0 public-domain dedication (https://bids.github.io/colormap/).
//   * cividis: Jamie R. Nuñez, Christopher R. Anderton and Ryan S. Renslow (PLOS ONE 13(7),
//     e0199239, 2018); the authors released the lookup table under CC0 1.0.
//   * greys, purples, oranges, blues: sequential ColorBrewer schemes, "This product includes
//     color specifications and designs developed by Cynthia Brewer (http://colorbrewer.org/)."
//     Copyright (c) 2002 Cynthia Brewer, Mark Harrower, and The Pennsylvania State
//     University; Apache-style ColorBrewer licence v1.1 (matplotlib's
//     LICENSE/LICENSE_COLORBREWER). matplotlib interpolates the 9 Brewer colours linearly.
//
// Included by render/colormap.cpp only. Order: the maps with a matplotlib source in
// ATTN_COLORMAPS (core/scenario/view_options.h).
"""


def to8(x):
    return max(0, min(255, int(round(x * 255.0))))


def main():
    out = sys.stdout
    out.write(HEADER.format(version=matplotlib.__version__))
    out.write("// clang-format off\n")
    out.write("inline constexpr std::array<std::array<Rgb, 256>, %d> kColormapTables = {{\n" % len(MAPS))
    for ours, theirs in MAPS:
        cmap = colormaps[theirs]
        out.write("  // %s (matplotlib '%s')\n  std::array<Rgb, 256>{{\n" % (ours, theirs))
        entries = []
        for i in range(256):
            r, g, b, _ = cmap(i / 255.0)
            entries.append("{%d,%d,%d}" % (to8(r), to8(g), to8(b)))
        for row in range(0, 256, 8):
            out.write("    " + ", ".join(entries[row:row + 8]) + ",\n")
        out.write("  }},\n")
    out.write("}};\n// clang-format on\n")


if __name__ == "__main__":
    main()
