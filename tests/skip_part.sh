# skip_part.sh - how a test says it did not run part of itself (sourced by
# tests/faults/lib.sh, tests/cli/cli_lib.sh, tests/tui/tui_lib.sh and
# tests/agent/sim_lib.sh).
#
# A test whose prerequisite is missing altogether exits 77 (automake's SKIP).
# A test that runs but cannot run one part (no tmux for the monitor part, not
# root for a tmpfs, the agent not built for the demo part) calls
#     skip_part "WHAT: WHY"
# and goes on.  The line "SKIP part: WHAT: WHY" goes to the test's log at
# once; parts_summary, called where the test prints its result, repeats
# every part skipped beside it, so a PASS with a part missing never reads as
# a full one.  (The result stays PASS when everything that ran passed:
# automake has no "partly skipped", and 77 would hide what did run.)
SKIPPED_PARTS=
skip_part() {
    echo "SKIP part: $*"
    SKIPPED_PARTS="$SKIPPED_PARTS
SKIP part: $*"
}

# parts_summary: the parts skipped, one a line (nothing when none was)
parts_summary() {
    [ -n "$SKIPPED_PARTS" ] || return 0
    echo "parts skipped (not run, not passed):$SKIPPED_PARTS"
}
