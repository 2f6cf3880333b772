#!/bin/sh
# test_hostile.sh - fault row 10: hostile strings.  The simulator's kernel
# and marker names hold quotes, backslashes, newlines, tabs, terminal
# escape sequences (colour, clear screen) and invalid UTF-8; the
# application's command line holds an OSC "set window title" sequence.
# Checked: chrome and jsonl exports are strict JSON (and the chrome trace
# passes tests/cli/check_trace.py), the hostile names survive in them
# (escaped, decodable); report, sessions, check output holds no raw control
# bytes; the live monitor in tmux does not pass them to the terminal: its
# raw output stream (pipe-pane) holds none of the payloads and the pane
# title is not changed.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

esc=$(printf '\033')
bel=$(printf '\007')
# (first on the command line, so that truncated columns still show it)
hfile="h${esc}]0;PWNED${bel}${esc}[2J"
mkdir -p "$WORK/hostile"
st=$WORK/hostile/store
(cd "$WORK/hostile" && env $SIM_DFL CUPTOP_STORE="$st" CUDA_INJECTION64_PATH="$AGENT" \
    CUPTOP_CUPTI_LIBRARY="$SIMLIB" CUPTOPSIM_SCENARIO=clean "$SIMAPP" --handler-file "$hfile" \
    --handler --seconds 0.6 --exit return >out 2>err)
check "hostile: the application ran" "$?" 0
id=$(sessions "$st" | head -1)
[ -n "$id" ] || { fail "no session"; finish; }

for fmt in chrome jsonl; do
    "$CUPTOP" export --store "$st" "$id" --from start --to end --format "$fmt" \
        -o "$WORK/h.$fmt" 2>"$WORK/h.$fmt.err"
    check "export $fmt" "$?" 0
done
if strict_json "$WORK/h.jsonl" jsonl 2>"$WORK/j.err"; then pass "jsonl is strict JSON"; else
    fail "jsonl: $(tail -1 "$WORK/j.err")"; fi
if python3 "$top_srcdir/tests/cli/check_trace.py" "$WORK/h.chrome" >"$WORK/ct.out" 2>&1; then
    pass "chrome trace passes check_trace.py"
else
    fail "chrome trace: $(head -5 "$WORK/ct.out")"
fi
# the hostile names are there, intact after decoding
python3 - "$WORK/h.jsonl" "$WORK/h.chrome" >"$WORK/names.out" 2>&1 <<'PY'
import json, sys
names = set()
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    if r.get("name"):
        names.add(r["name"])
chrome = json.load(open(sys.argv[2], encoding="utf-8"))
ev = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
cnames = {e.get("name") for e in ev}
want = ['kernel_with_"double quotes"_and_\'single\'', "back\\slash\\kernel\\",
        "multi\nline\nkernel", "tab\tseparated\tkernel"]
bad = [w for w in want if w not in names]
bad += ["chrome:" + w for w in want if w not in cnames]
esc = [n for n in names if "red_kernel" in n]
if not esc:
    bad.append("no red_kernel name")
if bad:
    print("missing:", bad)
    sys.exit(1)
print("ok", len(names), "names; escape-sequence name as", repr(esc[0]))
PY
if [ $? = 0 ]; then pass "hostile names intact in jsonl and chrome: $(cat "$WORK/names.out")"; else
    fail "hostile names: $(cat "$WORK/names.out")"; fi

# human outputs: no raw control bytes
"$CUPTOP" report --store "$st" "$id" >"$WORK/report.out" 2>&1
"$CUPTOP" sessions --store "$st" >"$WORK/sessions.out" 2>&1
"$CUPTOP" check --store "$st" --all >"$WORK/check.out" 2>&1
"$CUPTOP" sessions --store "$st" --json >"$WORK/sessions.json" 2>&1
for f in report sessions check; do
    if has_raw_controls "$WORK/$f.out"; then fail "cuptop $f: raw control bytes in its output"; else
        pass "cuptop $f: no raw control bytes"; fi
done
grep -q 'PWNED' "$WORK/sessions.out" || fail "sessions: the hostile command line is not shown at all"
if strict_json "$WORK/sessions.json" 2>/dev/null && ! has_raw_controls "$WORK/sessions.json"; then
    pass "sessions --json: strict JSON, escapes only"
else
    fail "sessions --json: not strict JSON or raw control bytes"
fi

# the live monitor in tmux: raw output stream and pane title
if command -v tmux >/dev/null 2>&1; then
    sock="cuptop-faults-$$"
    FAULT_CLEANUP_HOOK="tmux -L $sock kill-server 2>/dev/null"
    term=screen-256color
    infocmp "$term" >/dev/null 2>&1 || term=screen
    tmux -L "$sock" -f /dev/null new-session -d -s f -x 160 -y 40 \
        "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=$term $CUPTOP top --store $st; sleep 600"
    tmux -L "$sock" pipe-pane -t f "cat > $WORK/raw.out"
    tmux -L "$sock" set-option -t f -g remain-on-exit on >/dev/null 2>&1
    title0=$(tmux -L "$sock" display-message -p -t f '#{pane_title}')
    if wait_until 60 sh -c "tmux -L $sock capture-pane -p -t f | grep -q PWNED"; then
        pass "top: the sessions screen shows the hostile command (escaped)"
    else
        fail "top: the command line never showed up"
        tmux -L "$sock" capture-pane -p -t f | head -10
    fi
    # open the session's dashboard too
    tmux -L "$sock" send-keys -t f Enter
    wait_until 30 sh -c "tmux -L $sock capture-pane -p -t f | grep -q 'callback'" ||
        fail "top: the dashboard never opened"
    tmux -L "$sock" capture-pane -p -t f >"$WORK/pane.txt"
    title=$(tmux -L "$sock" display-message -p -t f '#{pane_title}')
    tmux -L "$sock" send-keys -t f q
    # the monitor has ended (its footer left the screen with it)
    wait_until 30 sh -c "! tmux -L $sock capture-pane -p -t f | grep -q 'F10'" ||
        fail "top: q did not end the monitor"
    [ "$title" = PWNED ] && fail "top: the pane title was set by a name" ||
        pass "top: pane title untouched ('$title0' -> '$title')"
    if LC_ALL=C grep -q "${esc}\]0;PWNED" "$WORK/raw.out"; then
        fail "top: the raw OSC title sequence reached the terminal"
    else
        pass "top: no raw OSC sequence in the terminal stream"
    fi
    if LC_ALL=C grep -q "$(printf '\377\376')" "$WORK/raw.out"; then
        fail "top: invalid UTF-8 bytes reached the terminal"
    else
        pass "top: no invalid UTF-8 bytes in the terminal stream"
    fi
    tmux -L "$sock" kill-server 2>/dev/null
    FAULT_CLEANUP_HOOK=
else
    skip_part "the live monitor: tmux not installed"
fi
finish
