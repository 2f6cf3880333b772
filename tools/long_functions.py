#!/usr/bin/env python3
"""long_functions.py [-n LINES] DIR... - the functions longer than LINES
(default 80) in the C files under each DIR, longest first: lines, file:line,
name, and "(reason given)" when the comment above the function says why it
is long (a comment holding "long:").  House style makes this simple: a
definition starts at column 0 and its body ends with "}" at column 0."""
import argparse
import os
import re

ap = argparse.ArgumentParser()
ap.add_argument("-n", type=int, default=80)
ap.add_argument("dirs", nargs="+")
a = ap.parse_args()
rows = []
for d in a.dirs:
    for root, _, files in os.walk(d):
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            path = os.path.join(root, f)
            lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
            i = 0
            while i < len(lines):
                head = lines[i].split("(", 1)[0]
                m = None
                if "(" in lines[i] and re.match(r"[A-Za-z_]", lines[i]):
                    m = re.search(r"(\w+)$", head)
                if m and not lines[i].rstrip().endswith(";"):
                    j = i
                    while j < len(lines) and lines[j] != "{" and not lines[j].rstrip().endswith(";"):
                        j += 1
                    if j < len(lines) and lines[j] == "{":
                        k = j + 1
                        while k < len(lines) and lines[k] != "}":
                            k += 1
                        n = k - i + 1
                        c = i - 1
                        above = []
                        while c >= 0 and (lines[c].startswith(("/*", " *")) or lines[c].endswith("*/")):
                            above.append(lines[c])
                            c -= 1
                        if n > a.n:
                            why = any("long:" in x for x in above)
                            rows.append((n, "%s:%d" % (path, i + 1), m.group(1), why))
                        i = k
                i += 1
for n, where, name, why in sorted(rows, reverse=True):
    print("%5d  %-40s %s%s" % (n, where, name, "  (reason given)" if why else ""))
