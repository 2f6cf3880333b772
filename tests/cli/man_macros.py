#!/usr/bin/env python3
"""man_macros.py MANPAGE - font-alternating macros (.BR .RB .BI .IB .IR .RI)
join their arguments without spaces, so prose in one ("records_note ) and
no record") renders run together ("records_note)andnorecord").  A run of
three lower-case words side by side is prose (joins made on purpose, like
"N th" or "YYYYmmdd T HHMMSS", are not).  Prints each such line; exit 1
if any."""
import re
import shlex
import sys

bad = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    m = re.match(r'^\.(BR|RB|BI|IB|IR|RI) (.*)$', line.rstrip("\n"))
    if not m:
        continue
    try:
        args = shlex.split(m.group(2), posix=True)
    except ValueError:
        continue
    words = [bool(re.fullmatch(r"[a-z]{2,}", a)) for a in args]
    if any(a and b and c for a, b, c in zip(words, words[1:], words[2:])):
        print("%s:%d: words run together: %s" % (sys.argv[1], i, line.rstrip()))
        bad = 1
sys.exit(bad)
