#!/usr/bin/env python3
"""check_layers.py - the layer graph of doc/design.md, checked on the tree.

    store <- model <- {export, agent_config} <- tui, exporter <- cli
    agent -> store, agent_config        sim, cli -> sim_args
    exporter, cli -> cli_opts

1. Includes: every `#include "X"` in a layered directory must name a header
   of its own directory or the public header of a layer below it (never a
   *_int.h of another directory, never a header of a higher layer, also not
   through a relative path that the per-target include paths would not
   catch).  A directory under src/ that is in no layer fails too.
2. Symbols (with --build DIR): no library of a lower layer has an undefined
   symbol that a higher layer defines (nm on the .a files, and on cuptop's
   own objects for the CLI), and the agent defines no symbol of the model,
   export, monitor or CLI.

--self-test plants one wrong-way include and one wrong-way symbol in a
temporary tree and checks that both are reported (so the check is known to
fail when it should).

Exit status: 0 clean, 1 a violation (each printed on one line), 2 misuse.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# directory -> (layer, public headers)
DIRS = {
    "store": ("store", {"cupstore.h"}),
    "src/model": ("model", {"model.h", "model_prov.h", "model_ledger.h"}),
    "src/export": ("export", {"export.h"}),
    "src/agent_config": ("agent_config", {"agent_config.h"}),
    "tui": ("tui", {"tui_main.h"}),
    "src/exporter": ("exporter", {"exporter.h"}),
    "src/cli": ("cli", {"cuptop.h"}),
    "src/agent": ("agent", set()),
    "src/sim": ("sim", {"cuptopsim.h"}),
    "src/sim_args": ("sim_args", {"sim_args.h"}),
    "src/cli_opts": ("cli_opts", {"cli_opts.h"}),
}

# layer -> the layers it may use (itself included)
BELOW = {
    "store": {"store"},
    "model": {"store", "model"},
    "export": {"store", "model", "export"},
    "agent_config": {"store", "agent_config"},
    "tui": {"store", "model", "export", "tui"},
    "exporter": {"store", "model", "export", "cli_opts", "exporter"},
    "cli": {"store", "model", "export", "agent_config", "tui", "exporter", "sim_args", "cli_opts",
            "cli"},
    "agent": {"store", "agent_config", "agent"},
    "sim": {"sim", "sim_args"},
    "sim_args": {"sim_args"},
    "cli_opts": {"cli_opts"},
}

# Libraries (in the build tree) and the layer each belongs to; a program's
# own objects (am_PROG_OBJECTS in the build tree's Makefile) stand for its
# layer.
LIBS = {
    "libcupstore.a": "store",
    "libcuptopmodel.a": "model",
    "libcuptopexport.a": "export",
    "libagentconfig.a": "agent_config",
    "libcuptoptui.a": "tui",
    "libcuptopexporter.a": "exporter",
    "libsimargs.a": "sim_args",
    "libcliopts.a": "cli_opts",
}
PROGRAMS = {"cuptop": "cli"}
AGENT_SO = "libcuptop-agent.so"

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = re.compile(r"\.(c|h)$")


def layered_files(src):
    for d in sorted(DIRS):
        top = os.path.join(src, d)
        if not os.path.isdir(top):
            continue
        for name in sorted(os.listdir(top)):
            if SOURCE.search(name):
                yield d, os.path.join(top, name)


def unknown_dirs(src):
    out = []
    base = os.path.join(src, "src")
    if os.path.isdir(base):
        for name in sorted(os.listdir(base)):
            d = "src/" + name
            if os.path.isdir(os.path.join(src, d)) and d not in DIRS:
                out.append(d)
    return out


def header_home(src, name):
    """Directories of DIRS that hold a header with this base name."""
    return [d for d in DIRS if os.path.isfile(os.path.join(src, d, name))]


def check_includes(src):
    bad = []
    for d in unknown_dirs(src):
        bad.append(f"{d}: a directory in no layer (add it to tests/layers/check_layers.py "
                   f"and doc/design.md)")
    for d, path in layered_files(src):
        layer = DIRS[d][0]
        rel = os.path.relpath(path, src)
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if inc == "config.h":
                    continue
                where = f"{rel}:{lineno}: #include \"{inc}\""
                if "/" in inc:
                    target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                    tdir = os.path.relpath(os.path.dirname(target), src)
                    homes = [tdir] if tdir in DIRS else []
                    if tdir != d and not homes:
                        bad.append(f"{where}: reaches outside the layered tree")
                        continue
                    name = os.path.basename(target)
                else:
                    name = inc
                    if os.path.isfile(os.path.join(src, d, name)):
                        continue  # its own directory
                    homes = header_home(src, name)
                if d in homes:
                    continue
                if not homes:
                    continue  # not a project header (the compiler decides)
                for h in homes:
                    hl, public = DIRS[h]
                    if hl not in BELOW[layer]:
                        bad.append(f"{where}: {layer} may not use {hl} ({h}/{name})")
                    elif name not in public:
                        bad.append(f"{where}: {h}/{name} is internal to {hl}")
    return bad


def nm(path, *flags):
    r = subprocess.run(["nm", *flags, path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nm {' '.join(flags)} {path}: {r.stderr.strip()}")
    syms = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if not parts or line.endswith(":"):
            continue
        syms.add(parts[-1])
    return syms


def program_objects(build, prog):
    """The object files automake links into prog (from the Makefile)."""
    try:
        text = open(os.path.join(build, "Makefile")).read().replace("\\\n", " ")
    except OSError:
        return []
    m = re.search(r"^am_%s_OBJECTS\s*=(.*)$" % re.escape(prog.replace("-", "_")), text, re.M)
    if not m:
        return []
    objs = [os.path.join(build, o.replace("$(OBJEXT)", "o")) for o in m.group(1).split()]
    return [o for o in objs if os.path.isfile(o)]


def check_symbols(build):
    units = {}  # name -> (layer, undefined, defined globals)
    for lib, layer in LIBS.items():
        p = os.path.join(build, lib)
        if os.path.isfile(p):
            dfn = nm(p, "--defined-only", "-g")
            units[lib] = (layer, nm(p, "-u") - dfn, dfn)
    for prog, layer in PROGRAMS.items():
        und, dfn = set(), set()
        for o in program_objects(build, prog):
            und |= nm(o, "-u")
            dfn |= nm(o, "--defined-only", "-g")
        if dfn:
            units[prog] = (layer, und - dfn, dfn)
    if "libcupstore.a" not in units:
        return [f"{build}: no libcupstore.a (build first)"]
    bad = []
    for name, (layer, und, _) in sorted(units.items()):
        for other, (olayer, _, dfn) in sorted(units.items()):
            if olayer in BELOW[layer]:
                continue
            for s in sorted(und & dfn):
                bad.append(f"{name} ({layer}) needs {s}, defined in {other} ({olayer})")
    so = os.path.join(build, AGENT_SO)
    if os.path.isfile(so):
        have = nm(so, "--defined-only")
        for other, (olayer, _, dfn) in sorted(units.items()):
            if olayer in BELOW["agent"]:
                continue
            for s in sorted(have & dfn):
                bad.append(f"{AGENT_SO} (agent) contains {s}, defined in {other} ({olayer})")
    return bad


def self_test():
    """Plant one violation of each kind; both must be reported."""
    cc = os.environ.get("CC", "cc")
    ok = True
    with tempfile.TemporaryDirectory(prefix="cuptop-layers.") as tmp:
        for d in ("store", "tui", "src/cli", "src/model"):
            os.makedirs(os.path.join(tmp, d))
        open(os.path.join(tmp, "src/cli/cuptop.h"), "w").write("int cli_error(void);\n")
        open(os.path.join(tmp, "store/cupstore_int.h"), "w").write("\n")
        open(os.path.join(tmp, "tui/tui_x.c"), "w").write('#include "cuptop.h"\n')
        open(os.path.join(tmp, "src/model/m.c"), "w").write('#include "cupstore_int.h"\n')
        os.makedirs(os.path.join(tmp, "src/newdir"))
        got = check_includes(tmp)
        for want in ("tui may not use cli", "is internal to store", "src/newdir: a directory"):
            if not any(want in b for b in got):
                print(f"self-test: the include check missed: {want}")
                ok = False
        if shutil.which(cc) and shutil.which("ar"):
            b = os.path.join(tmp, "build")
            os.makedirs(b)
            def obj(name, code):
                c = os.path.join(tmp, name + ".c")
                open(c, "w").write(code)
                subprocess.run([cc, "-c", c, "-o", os.path.join(tmp, name + ".o")], check=True)
                return os.path.join(tmp, name + ".o")
            subprocess.run(["ar", "cr", os.path.join(b, "libcupstore.a"),
                            obj("s", "int cupstore_x(void) { return 0; }\n")], check=True)
            subprocess.run(["ar", "cr", os.path.join(b, "libcuptoptui.a"),
                            obj("t", "int cli_error(void); int tui_y(void) "
                                     "{ return cli_error(); }\n")], check=True)
            shutil.copy(obj("c", "int cli_error(void) { return 1; }\n"),
                        os.path.join(b, "cuptop-main.o"))
            open(os.path.join(b, "Makefile"), "w").write(
                "am_cuptop_OBJECTS = cuptop-main.$(OBJEXT) \\\n\tcuptop-none.$(OBJEXT)\n")
            got = check_symbols(b)
            if not any("libcuptoptui.a (tui) needs cli_error, defined in cuptop" in g
                       for g in got):
                print("self-test: the symbol check missed tui -> cli_error")
                ok = False
        else:
            print(f"self-test: no {cc} or ar here: the symbol check's self-test was not run")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="source tree")
    ap.add_argument("--build", help="build tree (for the symbol check)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.src, "store")):
        print(f"check_layers: {a.src} is not the cuptop source tree", file=sys.stderr)
        return 2
    checks = 0
    bad = check_includes(a.src)
    checks += 1
    if a.build:
        bad += check_symbols(a.build)
        checks += 1
    if a.self_test:
        checks += 1
        if not self_test():
            bad.append("self-test: a planted violation went unreported")
    for b in bad:
        print(b)
    print(f"check_layers: {checks} checks, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
