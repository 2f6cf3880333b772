#!/usr/bin/env python3
"""cli_opts_check.py SRCDIR CUPTOP - every option of every command's table
(src/cli/cmd_*.c and src/exporter/cmd_exporter.c, `const cli_cmd
cli_cmd_NAME = {...}`, src/cli_opts/cli_opts.h) is in
that command's --help and in its section of the man page (doc/cuptop.1),
and every table is listed in cli_opts_commands.  Prints each miss; exit 1
if any, 0 otherwise."""
import glob
import os
import re
import subprocess
import sys

src, cuptop = sys.argv[1], sys.argv[2]
TABLE = re.compile(r'^const cli_cmd cli_cmd_(\w+) = \{\n(.*?)^\};', re.S | re.M)
OPT = re.compile(r'^\s*\{"([a-z][a-z0-9-]*)", ', re.M)

tables = {}
for path in sorted(glob.glob(os.path.join(src, "src/cli/*.c")) +
                   glob.glob(os.path.join(src, "src/exporter/*.c"))):
    for m in TABLE.finditer(open(path, encoding="utf-8").read()):
        name = re.search(r'\.name = "([^"]+)"', m.group(2)).group(1)
        tables[m.group(1)] = (name, OPT.findall(m.group(2)), path)

listed = re.findall(r'&cli_cmd_(\w+)',
                    open(os.path.join(src, "src/cli/main.c"), encoding="utf-8").read())
man = open(os.path.join(src, "doc/cuptop.1"), encoding="utf-8").read()
bad = 0
checked = 0


def miss(text):
    global bad
    print(text)
    bad = 1


if not tables:
    miss("no option table found in src/cli")
for var in sorted(set(tables) ^ set(listed)):
    miss("cli_cmd_%s: %s" % (var, "not in cli_opts_commands" if var in tables
                             else "listed, but no table found"))
# cuptop attach also takes cuptop run's agent options (cli_agent_option),
# all of run's table but these, which attach refuses or run keeps to itself
if "attach" in tables and "run" in tables:
    run_only = {"job", "only-if", "capture-range", "capture-range-end", "help"}
    name, opts, path = tables["attach"]
    tables["attach"] = (name, opts + [o for o in tables["run"][1] if o not in run_only], path)
for var, (name, opts, path) in sorted(tables.items()):
    if not opts:
        miss("%s: an empty table" % path)
    r = subprocess.run([cuptop, name, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        miss("cuptop %s --help: exit %d" % (name, r.returncode))
    # the man page's section: from .SS "cuptop NAME" (or "cuptop [NAME]") on
    m = re.search(r'^\.SS "cuptop \[?%s\]?"\n(.*?)(?=^\.S[SH] )' % re.escape(name), man,
                  re.S | re.M)
    if not m:
        miss("doc/cuptop.1: no section .SS \"cuptop %s\"" % name)
    # ... and its lines in the SYNOPSIS (.B cuptop NAME ... .br)
    syn = re.findall(r'^\.B cuptop%s\n(.*?)^\.br$' % ("" if name == "top" else " " + name),
                     man, re.S | re.M)
    text = (m.group(1) if m else "") + "".join(syn)
    for o in opts:
        if o == "help":
            continue
        checked += 1
        if not re.search(r'(?<![\w-])--%s(?![\w-])' % re.escape(o), r.stdout):
            miss("cuptop %s --help does not mention --%s" % (name, o))
        if not re.search(r'\\-\\-%s(?![\w-]|\\-)' % re.escape(o).replace(r'\-', r'\\-'),
                         text):
            miss("doc/cuptop.1, cuptop %s: no \\-\\-%s" % (name, o))
print("%d options of %d commands checked" % (checked, len(tables)))
sys.exit(bad)
