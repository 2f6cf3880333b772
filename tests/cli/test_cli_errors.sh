#!/bin/sh
# test_cli_errors.sh - misuse and unreadable stores: exit 2 and one clear
# line on stderr, never a crash; --help for every subcommand.
. "${top_srcdir:?}/tests/cli/cli_lib.sh"

S=$WORK/store
"$FILL" "$S" || { echo "fill_store failed" >&2; exit 1; }
C=20250101T120000-1001

for cmd in sessions check report export control; do
    run 0 "help_$cmd" "$CUPTOP" "$cmd" --help
    grep -q "^usage: cuptop $cmd" "$WORK/help_$cmd.out" || fail "$cmd --help"
    usage_error "badopt_$cmd" "$CUPTOP" "$cmd" --no-such-option
done

# sessions
usage_error sess_extra "$CUPTOP" sessions --store "$S" extra
usage_error sess_nostore "$CUPTOP" sessions --store "$WORK/nowhere"
usage_error sess_noarg "$CUPTOP" sessions --store

# check
usage_error chk_none "$CUPTOP" check --store "$S"
usage_error chk_both "$CUPTOP" check --store "$S" --all "$C"
usage_error chk_from "$CUPTOP" check --store "$S" "$C" --from +1
usage_error chk_unknown "$CUPTOP" check --store "$S" 19990101
grep -q 'no such session' "$WORK/chk_unknown.err" || fail "unknown session message"
usage_error chk_ambiguous "$CUPTOP" check --store "$S" 2025
grep -q 'ambiguous' "$WORK/chk_ambiguous.err" || fail "ambiguous prefix message"
usage_error chk_badtime "$CUPTOP" check --store "$S" "$C" --from yesterday --to end
usage_error chk_inverted "$CUPTOP" check --store "$S" "$C" --from +5 --to +2
grep -q 'inverted' "$WORK/chk_inverted.err" || fail "inverted window message"
usage_error chk_empty "$CUPTOP" check --store "$S" "$C" --from +100 --to +200
grep -q 'holds no data' "$WORK/chk_empty.err" || fail "empty window message"
usage_error chk_nostore "$CUPTOP" check --store "$WORK/nowhere" --all

# report
usage_error rep_none "$CUPTOP" report --store "$S"
usage_error rep_two "$CUPTOP" report --store "$S" "$C" "$C"
usage_error rep_unknown "$CUPTOP" report --store "$S" nosuch

# export
E="$CUPTOP export --store $S $C"
usage_error exp_nosess "$CUPTOP" export --store "$S" --from +1 --to +2 --format chrome -o "$WORK/x"
usage_error exp_noformat $E --from +1 --to +2 -o "$WORK/x"
usage_error exp_badformat $E --from +1 --to +2 --format xml -o "$WORK/x"
usage_error exp_noout $E --from +1 --to +2 --format chrome
usage_error exp_nowindow $E --format chrome -o "$WORK/x"
usage_error exp_half $E --from +1 --format chrome -o "$WORK/x"
usage_error exp_both $E --mark hot --from +1 --to +2 --format chrome -o "$WORK/x"
usage_error exp_inverted $E --from +5 --to +1 --format chrome -o "$WORK/x"
usage_error exp_empty $E --from +100 --to +200 --format chrome -o "$WORK/x"
usage_error exp_badtime $E --from 2025-13-01T00:00:00Z --to end --format chrome -o "$WORK/x"
usage_error exp_nomark $E --mark nosuch --format chrome -o "$WORK/x"
usage_error exp_unknown "$CUPTOP" export --store "$S" nosuch --from +1 --to +2 --format csv -o "$WORK/x"
[ ! -e "$WORK/x" ] || fail "a failed export wrote its output"

# control (a running session is needed to apply anything: tests/agent/sim_loss.sh)
usage_error ctl_nothing "$CUPTOP" control --store "$S" "$C"
usage_error ctl_nosess "$CUPTOP" control --store "$S" --pool 8
usage_error ctl_pool0 "$CUPTOP" control --store "$S" "$C" --pool 0
usage_error ctl_poolbig "$CUPTOP" control --store "$S" "$C" --pool 4097
usage_error ctl_poolword "$CUPTOP" control --store "$S" "$C" --pool lots
usage_error ctl_every_order "$CUPTOP" control --store "$S" "$C" --capture-range every:1s/2s
usage_error ctl_every_short "$CUPTOP" control --store "$S" "$C" --capture-range every:10s/10ms
usage_error ctl_every_unit "$CUPTOP" control --store "$S" "$C" --capture-range every:10/1
usage_error ctl_every_nvtx "$CUPTOP" control --store "$S" "$C" --capture-range nvtx:step
usage_error ctl_every_detach "$CUPTOP" control --store "$S" "$C" --capture-range every:10s/1s --detach
usage_error ctl_wait "$CUPTOP" control --store "$S" "$C" --pool 8 --wait -1
usage_error ctl_kinds "$CUPTOP" control --store "$S" "$C" --kinds kernel,bogus
grep -q "'bogus'" "$WORK/ctl_kinds.err" || fail "control: the unknown kind is not named"
usage_error ctl_unknown "$CUPTOP" control --store "$S" nosuch --pool 8
usage_error ctl_ended "$CUPTOP" control --store "$S" "$C" --pool 8
grep -q "is ended: no agent would apply" "$WORK/ctl_ended.err" ||
    fail "control on an ended session: $(cat "$WORK/ctl_ended.err")"

# corrupt, foreign and empty sessions in a store: a clear line, exit 2
B=$WORK/bad
mkdir -m 700 "$B"
cp -R "$S/$C" "$B/"
mkdir -m 700 "$B/20250101T000000-1"
head -c 65536 /dev/urandom >"$B/20250101T000000-1/data.mdb"
mkdir -m 700 "$B/20250101T000001-2"
printf 'not a store at all\n' >"$B/20250101T000001-2/data.mdb"
usage_error bad_check "$CUPTOP" check --store "$B" 20250101T000000-1
grep -q 'not a cuptop session\|damaged' "$WORK/bad_check.err" || fail "corrupt message: $(cat "$WORK/bad_check.err")"
usage_error bad_report "$CUPTOP" report --store "$B" 20250101T000001-2
usage_error bad_export "$CUPTOP" export --store "$B" 20250101T000000-1 --from start --to end \
    --format chrome -o "$WORK/y"
# sessions lists what it can read and names what it cannot
run 2 bad_sessions "$CUPTOP" sessions --store "$B"
grep -q "^$C" "$WORK/bad_sessions.out" || fail "the readable session is not listed"
[ "$(wc -l <"$WORK/bad_sessions.err")" = 2 ] || fail "expected one line per unreadable session"
run 2 bad_all "$CUPTOP" check --store "$B" --all
grep -q "^$C: COMPLETE" "$WORK/bad_all.out" || fail "check --all skipped the readable session"

# a store directory that is not a directory
printf x >"$WORK/file"
usage_error notdir "$CUPTOP" sessions --store "$WORK/file"

# cuptop run: every value checked against the ranges the agent accepts
# (its own parser), one line and exit 2 (finding D); the bounds themselves
# are accepted and reach the program's environment
for bad in "--buffer-size 1" "--buffer-size 512M" "--buffer-size 65537" "--buffer-size 63K" \
    "--buffer-size 257M" "--buffer-size 4X" "--pool 0" "--pool 4097" "--pool -3" \
    "--queue 0" "--queue 1048577" "--device-buffer-size 5G" "--device-buffer-size x" \
    "--device-buffer-pool-limit 1048577" "--flush-period 60001" "--flush-period -1" \
    "--stop-timeout 9" "--stop-timeout 600001" "--kinds kernel,bogus" "--kinds ="; do
    n=$(echo "$bad" | tr -c 'a-z0-9\n' _)
    # shellcheck disable=SC2086 # word splitting intended: option and value
    usage_error "run_$n" "$CUPTOP" run $bad -- true
    grep -q "^cuptop run: ${bad%% *}: .* is not " "$WORK/run_$n.err" ||
        fail "run $bad: message does not name the option and range: $(cat "$WORK/run_$n.err")"
done
usage_error run_empty "$CUPTOP" run --buffer-size "" -- true
usage_error run_hostile "$CUPTOP" run --pool "$(printf '\033]0;x\007')" -- true
no_raw_escapes "$WORK/run_hostile.err"
if [ -x "$top_builddir/libcuptop-agent.so" ] || [ -n "${CUPTOP_AGENT:-}" ]; then
    run 0 run_bounds "$CUPTOP" run --buffer-size 64K --pool 1 --queue 1048576 \
        --device-buffer-size 0 --device-buffer-pool-limit 1048576 --flush-period 0 \
        --stop-timeout 600000 --kinds kernel,runtime -- env
    for kv in CUPTOP_BUFFER_SIZE=64K CUPTOP_POOL=1 CUPTOP_QUEUE=1048576 \
        CUPTOP_DEVICE_BUFFER_SIZE=0 CUPTOP_DEVICE_BUFFER_POOL_LIMIT=1048576 \
        CUPTOP_FLUSH_PERIOD_MS=0 CUPTOP_STOP_TIMEOUT_MS=600000 CUPTOP_KINDS=kernel,runtime; do
        grep -qx "$kv" "$WORK/run_bounds.out" || fail "run: $kv not passed to the program"
    done
    run 0 run_bounds2 "$CUPTOP" run --buffer-size 256M --pool 4096 --flush-period 60000 \
        --stop-timeout 10 --device-buffer-size 4G -- true
    # the --config file is read as the agent reads it
    printf '# ok\nbuffer_size = 8M\nkinds=kernel\n' >"$WORK/good.cfg"
    run 0 run_cfg_good "$CUPTOP" run --config "$WORK/good.cfg" -- true
fi
printf 'buffer_size=4M\npool=9999\n' >"$WORK/bad.cfg"
usage_error run_cfg_range "$CUPTOP" run --config "$WORK/bad.cfg" -- true
grep -q 'POOL="9999": not a buffer count from 1 to 4096' "$WORK/run_cfg_range.err" ||
    fail "run --config range: $(cat "$WORK/run_cfg_range.err")"
printf 'no_such_setting=1\n' >"$WORK/unknown.cfg"
usage_error run_cfg_unknown "$CUPTOP" run --config "$WORK/unknown.cfg" -- true
printf 'just words\n' >"$WORK/words.cfg"
usage_error run_cfg_words "$CUPTOP" run --config "$WORK/words.cfg" -- true

# the top level: an unknown subcommand or option is one line, not the
# whole subcommand list (finding F)
usage_error unknown_sub "$CUPTOP" frobnicate
grep -qx "cuptop: unknown subcommand 'frobnicate' (try 'cuptop --help')" "$WORK/unknown_sub.err" ||
    fail "unknown subcommand message: $(cat "$WORK/unknown_sub.err")"
usage_error unknown_sub_args "$CUPTOP" frobnicate --store "$S"
TERM=dumb usage_error top_bogus_opt "$CUPTOP" --bogus-option </dev/null
TERM=dumb usage_error top_bogus "$CUPTOP" top --bogus </dev/null

finish
