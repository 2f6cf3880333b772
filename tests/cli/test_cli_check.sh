#!/bin/sh
# test_cli_check.sh - sessions, check and report on stores with known truth:
# a verdict for every loss class and for complete, crashed and running
# sessions; golden outputs; windows; hostile strings kept harmless.
. "${top_srcdir:?}/tests/cli/cli_lib.sh"

S=$WORK/store
"$FILL" "$S" || { echo "fill_store failed" >&2; exit 1; }

# sessions: text and JSON
run 0 sessions "$CUPTOP" sessions --store "$S"
golden sessions.txt "$WORK/sessions.out"
no_raw_escapes "$WORK/sessions.out"
run 0 sessions_json "$CUPTOP" sessions --store "$S" --json
strict_json "$WORK/sessions_json.out"
golden sessions.json "$WORK/sessions_json.out"
# $CUPTOP_STORE is used when --store is absent
CUPTOP_STORE=$S run 0 sessions_env "$CUPTOP" sessions
cmp -s "$WORK/sessions.out" "$WORK/sessions_env.out" || fail "CUPTOP_STORE not honoured"

# check --all: exit 1 (some INCOMPLETE), every reason listed
run 1 check_all "$CUPTOP" check --store "$S" --all
golden check_all.txt "$WORK/check_all.out"
no_raw_escapes "$WORK/check_all.out"
# check prints the model's first recommendation, the same as report's
grep -A3 '^20250101T120101-2001: INCOMPLETE' "$WORK/check_all.out" |
    grep -q '^  advice: Raise the pool 8 -> 36 buffers .*(rerun: CUPTOP_POOL=36)$' ||
    fail "check: the declined session is not told to raise the pool"
grep -A2 '^20250101T120000-1001: COMPLETE' "$WORK/check_all.out" | grep -q 'advice:' &&
    fail "check: advice for a COMPLETE session"
run 1 check_json "$CUPTOP" check --store "$S" --all --json
strict_json "$WORK/check_json.out"
golden check_all.json "$WORK/check_json.out"
# check --json's "advice": the model's whole ranked list, the same as
# report's Advice section (text and rerun setting, in order), its first
# brief the same as check's text "advice:" line; [] for a COMPLETE session
checks=$((checks + 1))
python3 - "$WORK/check_json.out" "$WORK/check_all.out" "$CUPTOP" "$S" <<'PY' ||
import json, re, subprocess, sys
doc, text, cuptop, store = sys.argv[1:]
lines = open(text).read().split("\n")
bad = 0
def no(why):
    global bad
    print("check --json advice: " + why, file=sys.stderr)
    bad = 1
for o in json.load(open(doc)):
    sid, adv = o["id"], o.get("advice")
    if not isinstance(adv, list):
        no("%s has no advice array" % sid)
        continue
    if o["complete"]:
        if adv:
            no("%s is COMPLETE but advised" % sid)
        continue
    rep = subprocess.run([cuptop, "report", "--store", store, sid], capture_output=True,
                         text=True).stdout
    sec = rep.split("\nAdvice\n", 1)[1] if "\nAdvice\n" in rep else ""
    blocks = re.split(r"^  \d+\. ", sec, flags=re.M)[1:]
    if len(blocks) != len(adv):
        no("%s: %d in JSON, %d in report" % (sid, len(adv), len(blocks)))
        continue
    for a, b in zip(adv, blocks):
        said = " ".join(b.split("\n     why:")[0].split())
        if said != a["text"]:
            no("%s: text %r, report %r" % (sid, a["text"], said))
        m = re.search(r"^     rerun: (CUPTOP_\w+)=(\S+)", b, re.M)
        rerun = (a["setting"], a["value"]) if a["setting"] and a["value"] else (None, None)
        if (m.groups() if m else (None, None)) != rerun:
            no("%s: setting %s=%s, report %s" % (sid, a["setting"], a["value"],
                                                 m.group(0) if m else "none"))
    # the text output's "  advice:" line under this verdict (none with "what to do")
    i = next(k for k, l in enumerate(lines) if l.startswith(sid + ": "))
    j = next((k for k in range(i + 1, len(lines)) if not lines[k].startswith("  ")), len(lines))
    line = [l for l in lines[i:j] if l.startswith("  advice: ")]
    if adv and not line:
        no("%s: no advice line in the text output" % sid)
    if line and not line[0].startswith("  advice: " + adv[0]["brief"]):
        no("%s: text %r, JSON brief %r" % (sid, line[0], adv[0]["brief"]))
n = sum(1 for o in json.load(open(doc)) if o.get("advice"))
if n < 5:
    no("only %d sessions advised: the store has every loss class" % n)
sys.exit(bad)
PY
    fail "check --json: advice differs from report's and check's text"

# one session at a time: verdict, class, count, seconds affected
verdict() { # ID RC CLASS-OR-WORD
    run "$2" "check_$1" "$CUPTOP" check --store "$S" "$1"
    grep -q -- "$3" "$WORK/check_$1.out" || fail "check $1 does not say '$3': $(cat "$WORK/check_$1.out")"
}
verdict 20250101T120000-1001 0 ': COMPLETE$'
verdict 20250101T120100 1 'cupti_dropped: 175 records lost in 3 s between 2025-01-01T12:00:03Z and 2025-01-01T12:00:07Z'
verdict 20250101T120101 1 'declined: 175 records lost in 3 s'
verdict 20250101T120102 1 'queue_overflow: 175 records lost in 3 s'
verdict 20250101T120103 1 'parse_error: 175 records lost in 3 s'
verdict 20250101T120104 1 'store_refused: 175 records lost in 3 s'
verdict 20250101T120105 1 'zero_ts: 175 records lost in 3 s'
verdict 20250101T120106 1 'tail: 40 records lost'
verdict 20250101T120107 1 'conflict: 175 records lost in 3 s'
verdict 20250101T120200 1 'unconsumed: 3 of 40 completed buffers'
verdict 20250101T120201 1 'stop protocol: flush timed out'
verdict 20250101T120202 1 'flush: the final forced flush did not succeed'
verdict 20250101T120203 1 'disabled: the agent stepped aside: CUPTI could not be loaded'
verdict 20250101T120204 1 'INCOMPLETE (crashed)'
# health and loss rows with the same counts are not counted twice
grep -q 'cupti_dropped: 175 ' "$WORK/check_20250101T120100.out" || fail "double counting"
# several sessions: the worst verdict decides
run 1 check_two "$CUPTOP" check --store "$S" 20250101T120000 20250101T120100
run 0 check_one "$CUPTOP" check --store "$S" 20250101T120000

# windows: before the losses COMPLETE, over them INCOMPLETE with the window's counts
run 0 check_win0 "$CUPTOP" check --store "$S" 20250101T120100 --from +0 --to +2
run 1 check_win1 "$CUPTOP" check --store "$S" 20250101T120100 --from +3 --to +4
grep -q 'cupti_dropped: 150 records lost in 2 s' "$WORK/check_win1.out" ||
    fail "window count: $(cat "$WORK/check_win1.out")"
run 1 check_win2 "$CUPTOP" check --store "$S" 20250101T120100 \
    --from 2025-01-01T12:00:07Z --to 1735732809
grep -q 'cupti_dropped: 25 records lost in 1 s at 2025-01-01T12:00:07Z' "$WORK/check_win2.out" ||
    fail "window (RFC 3339 / unix): $(cat "$WORK/check_win2.out")"

# a running session is judged so far and said to be running
R=$WORK/running
"$FILL" --running "$R" || fail "fill_store --running"
run 0 check_running "$CUPTOP" check --store "$R" --all
grep -q 'COMPLETE so far (running' "$WORK/check_running.out" || fail "running: $(cat "$WORK/check_running.out")"
run 0 sessions_running "$CUPTOP" sessions --store "$R"
grep -q ' running ' "$WORK/sessions_running.out" || fail "sessions does not say running"
# records/s: a running session's last whole second, an ended one's mean (issue 13)
run 0 sessions_running_json "$CUPTOP" sessions --store "$R" --json
grep -q '"records_per_s_is":"last_second"' "$WORK/sessions_running_json.out" ||
    fail "running: records_per_s is not the last second"
run 0 sessions_ended_json "$CUPTOP" sessions --store "$S" --json
grep -q '"id":"20250101T120000-1001".*"records":605,"records_per_s":60,"records_per_s_is":"mean"' \
    "$WORK/sessions_ended_json.out" || fail "ended: records_per_s is not the session's mean"

# a window some sessions have no data in: those are listed as NO DATA, not
# judged, and do not hide another's INCOMPLETE behind a usage error
M=$WORK/mixed
"$FILL" "$M" && "$FILL" --running "$M" || fail "fill mixed store"
W0=2025-01-01T12:00:00Z W9=2025-01-01T12:00:09Z
run 1 check_mixed "$CUPTOP" check --store "$M" --all --from "$W0" --to "$W9"
grep -q '^20250101T130000-1: NO DATA in the window' "$WORK/check_mixed.out" ||
    fail "no-data session not reported: $(cat "$WORK/check_mixed.out")"
grep -q '^20250101T120100-2000: INCOMPLETE' "$WORK/check_mixed.out" ||
    fail "INCOMPLETE hidden by a session without data"
[ -s "$WORK/check_mixed.err" ] && fail "check_mixed: stderr: $(cat "$WORK/check_mixed.err")"
run 0 check_mixed_ok "$CUPTOP" check --store "$M" 20250101T120000 20250101T130000 \
    --from "$W0" --to "$W9"
grep -q ': COMPLETE \[window' "$WORK/check_mixed_ok.out" || fail "complete one not judged"
run 1 check_mixed_json "$CUPTOP" check --store "$M" --all --from "$W0" --to "$W9" --json
strict_json "$WORK/check_mixed_json.out"
python3 - "$WORK/check_mixed_json.out" <<'PY' || fail "check --json: no-data session"
import json, sys
by_id = {s["id"]: s for s in json.load(open(sys.argv[1]))}
assert len(by_id) == 15, len(by_id)
r = by_id["20250101T130000-1"]
assert r["verdict"] == "NO_DATA" and r["no_data"] is True and r["complete"] is None, r
assert r["window_from_s"] == 1735732800 and r["window_to_s"] == 1735732809, r
assert by_id["20250101T120100-2000"]["complete"] is False
PY
# no data in any session: one usage error, nothing on stdout
usage_error check_mixed_empty "$CUPTOP" check --store "$M" --all --from 2025-01-01T13:00:00Z \
    --to 2025-01-01T13:00:09Z
grep -q 'holds no data' "$WORK/check_mixed_empty.err" || fail "empty window message (--all)"

# a window shows only the notes written inside it: the conflict note is at
# +2, the window +3..+4 (its losses) leaves it out, +2..+4 keeps it
run 1 check_notes_out "$CUPTOP" check --store "$S" 20250101T120107 --from +3 --to +4
grep -q 'note:' "$WORK/check_notes_out.out" &&
    fail "check: a note from outside the window: $(cat "$WORK/check_notes_out.out")"
run 1 check_notes_in "$CUPTOP" check --store "$S" 20250101T120107 --from +2 --to +4
grep -q '^  note: error   2025-01-01T12:00:02Z  subscriber conflict' "$WORK/check_notes_in.out" ||
    fail "check: the note inside the window is missing: $(cat "$WORK/check_notes_in.out")"

# report: golden summaries with advice
report() { # ID GOLDEN RC
    run "$3" "report_$1" "$CUPTOP" report --store "$S" "$1"
    golden "$2" "$WORK/report_$1.out"
    no_raw_escapes "$WORK/report_$1.out"
}
report 20250101T120000 report_clean.txt 0
report 20250101T120100 report_dropped.txt 1
report 20250101T120101 report_declined.txt 1
report 20250101T120102 report_queue.txt 1
report 20250101T120204 report_crashed.txt 1
# declined requests with the pool at its limit while the consumer kept up:
# the pool starves, and the first recommendation raises it (issue 12)
grep -A3 '^Advice$' "$WORK/report_20250101T120101.out" | grep -q '^  1\. Raise the pool from 8 to ' ||
    fail "declined advice: the pool is not raised first"
grep -q '^     rerun: CUPTOP_POOL=[0-9]' "$WORK/report_20250101T120101.out" || fail "declined advice: no rerun setting"
# the queue overflowed and buffers went unconsumed: the consumer fell behind,
# so the first recommendation narrows the kinds (not a bigger pool or queue)
grep -A1 '^Advice$' "$WORK/report_20250101T120102.out" | grep -q '^  1\. Narrow the kinds collected to kernel,memcpy,memset,overhead' ||
    fail "queue advice"
grep -q '^     rerun: CUPTOP_KINDS=kernel,memcpy,memset,overhead ' "$WORK/report_20250101T120102.out" ||
    fail "queue advice: no rerun setting"
grep -q 'Do not use this trace for timing attribution' "$WORK/report_20250101T120100.out" ||
    fail "timing attribution warning"
grep -q 'died without the stop protocol' "$WORK/report_20250101T120204.out" || fail "advice for a crash"

# report's buffer size: the structured config.buffer_size key, and for
# stores written before it the free-text "config" row
for c in "text:buffer_size=65536|:small" "key:pool=8|65536:small" \
    "both:buffer_size=65536|4194304:fine"; do
    # (not name/want: run() sets those)
    cfg=${c%%:*} rest=${c#*:} expect=${c##*:}
    rest=${rest%:*} text=${rest%|*} key=${rest#*|}
    if [ -n "$key" ]; then
        "$FILL" --config "$WORK/cfg_$cfg" "$text" "$key" || fail "fill_store --config $cfg"
    else
        "$FILL" --config "$WORK/cfg_$cfg" "$text" || fail "fill_store --config $cfg"
    fi
    out=$WORK/report_cfg_$cfg.out
    run 1 "report_cfg_$cfg" "$CUPTOP" report --store "$WORK/cfg_$cfg" 20250101T120100
    [ -s "$out" ] || fail "config $cfg: no report"
    if [ "$expect" = small ]; then
        grep -qi 'buffers are small (64K' "$out" ||
            fail "config $cfg: report does not read the 64 KiB buffer size"
    elif grep -qi 'buffers are small' "$out"; then
        fail "config $cfg: the config.buffer_size key (4 MiB) does not win over the text"
    fi
done

# notes: the agent's warnings, in report (all levels), in check (warnings and
# errors that explain an INCOMPLETE verdict) and in sessions --json; hostile
# bytes in a note escaped on the terminal, intact in JSON
report 20250101T120107 report_conflict.txt 1
grep -q '^Notes (from the agent)$' "$WORK/report_20250101T120107.out" || fail "report: no Notes section"
grep -q '^  error   2025-01-01T12:00:02Z  subscriber conflict: .*torch.profiler \\x1b\]0;x\\x07' \
    "$WORK/report_20250101T120107.out" || fail "report: conflict note not named/escaped"
grep -q '^  info    2025-01-01T12:00:01Z  agent started$' "$WORK/report_20250101T120000.out" ||
    fail "report: info note missing"
grep -q '^  warning 2025-01-01T12:00:00Z  CUPTOP_BUFFER_SIZE="1"' \
    "$WORK/report_20250101T120101.out" || fail "report: warning note missing"
grep -q '^  note: error .*torch.profiler' "$WORK/check_20250101T120107.out" ||
    fail "check: the conflicting subscriber is not named: $(cat "$WORK/check_20250101T120107.out")"
no_raw_escapes "$WORK/check_20250101T120107.out"
grep -q 'note:' "$WORK/check_20250101T120000-1001.out" && fail "check: notes under a COMPLETE verdict"
# the detach reason already quotes its note: not repeated
[ "$(grep -c 'CUPTI could not be loaded' "$WORK/check_20250101T120203.out")" = 1 ] ||
    fail "check: detach note repeated: $(cat "$WORK/check_20250101T120203.out")"
python3 - "$WORK/sessions_json.out" <<'PY' || fail "sessions --json notes"
import json, sys
by_id = {s["id"]: s for s in json.load(open(sys.argv[1]))}
c = by_id["20250101T120107-2007"]
assert c["notes_total"] == 1 and c["notes"][0]["level"] == "error", c["notes"]
assert "torch.profiler \x1b]0;x\x07\"sim\"" in c["notes"][0]["text"], c["notes"]
assert c["notes"][0]["time_ns"] == 1735732802000000000
assert by_id["20250101T120101-2001"]["notes"][0]["level"] == "warning"
assert by_id["20250101T120100-2000"]["notes"] == []
assert all(isinstance(s["notes"], list) for s in by_id.values())
PY

# --verify: every stored record read back and counted against the final
# status; a session whose final status claims more than the store holds
# (records lost at rest) is INCOMPLETE (store_damaged); usage errors.
V=$WORK/verify
"$FILL" --shuffled "$V/ok" 5000 || fail "fill --shuffled"
"$FILL" --shuffled "$V/missing" 5000 5007 || fail "fill --shuffled (claimed)"
run 0 verify_ok "$CUPTOP" check --store "$V/ok" --all --verify
grep -q "verified: 5000 records read back" "$WORK/verify_ok.out" || fail "verify: count not shown"
run 1 verify_missing "$CUPTOP" check --store "$V/missing" --all --verify
grep -q "store damaged: 7 records stored by the agent are missing (5000 read back of 5007)" \
    "$WORK/verify_missing.out" || fail "verify: missing records not named: $(cat "$WORK/verify_missing.out")"
run 0 noverify_missing "$CUPTOP" check --store "$V/missing" --all
run 1 verify_json "$CUPTOP" check --store "$V/missing" --all --verify --json
grep -q '"store_damaged"' "$WORK/verify_json.out" || fail "verify --json: no store_damaged class"
# one bit flipped on disk inside a chunk (an overflow page of the chunks
# table): the chunk's CRC-32C no longer matches -> INCOMPLETE, store_damaged
"$FILL" --shuffled "$V/bad" 20000 || fail "fill --shuffled (bad)"
python3 - "$V/bad/20250101T120000-5151/data.mdb" <<'PY' || fail "no overflow page to damage"
import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
for pg in range(2, len(d) // 4096):
    flags = int.from_bytes(d[pg * 4096 + 10:pg * 4096 + 12], "little")
    if flags & 0x04:  # P_OVERFLOW: the first page of a large value
        base = (pg + 1) * 4096  # its second page: payload only
        d[base + 1500] ^= 0x10
        open(p, "wb").write(d)
        sys.exit(0)
sys.exit(1)
PY
run 1 verify_bad "$CUPTOP" check --store "$V/bad" --all --verify
grep -q "store damaged: reading the records back failed after" "$WORK/verify_bad.out" ||
    fail "verify: damaged chunk not reported: $(cat "$WORK/verify_bad.out" "$WORK/verify_bad.err")"
usage_error verify_window "$CUPTOP" check --store "$V/ok" --all --verify --from start --to end

finish
