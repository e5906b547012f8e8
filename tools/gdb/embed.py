#!/usr/bin/env python3
"""embed.py SCRIPT OUT.S: an assembly file whose .debug_gdb_scripts section
holds SCRIPT inline (entry kind 4, SECTION_SCRIPT_ID_PYTHON_TEXT: a name
line, then the text), so that gdb runs it when it loads libppl.so."""
import sys

src, out = sys.argv[1], sys.argv[2]
text = open(src, encoding="utf-8").read()
lines = [".pushsection .debug_gdb_scripts, \"MS\",@progbits,1", ".byte 4",
         ".ascii \"gdb.inlined-script.libppl\\n\""]
for line in text.splitlines(True):
    esc = line.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")
    lines.append(".ascii \"%s\"" % esc)
lines += [".byte 0", ".popsection", ".section .note.GNU-stack,\"\",@progbits", ""]
with open(out, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
