#!/bin/bash
# bench/gpu/advice.sh BUILD_DIR - DESIGN invariant 9 on the GPU: advice is
# proven by doing it.  Two lossy shapes of launch_storm under the agent:
#   starve: 4 launching threads with a pool of 2 (CUPTOP_POOL=2), 4 MiB buffers
#   small:  1 launching thread, 64 KiB buffers (CUPTOP_BUFFER_SIZE=64K), pool 64
# each then rerun with the first recommendation `cuptop report` gives (its
# "rerun: CUPTOP_X=V" line, applied as is).  The rerun must be COMPLETE or
# lose at least 90% fewer records.  Table to $OUT/advice.md (and stdout);
# exit 1 when a recommendation fails its proof.
set -u
B=$(cd "${1:?usage: advice.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
W=$OUT/advice
mkdir -p "$W"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
STORM=$W/launch_storm
[ -x "$STORM" ] || nvcc -O2 -std=c++17 -o "$STORM" "$here/launch_storm.cu" || exit 2
R=$OUT/advice.md
fail=0

# run NAME THREADS VAR=VALUE...: one traced storm; prints its session id
run() {
    local name=$1 t=$2
    shift 2
    local st=$W/$name
    rm -rf "$st"
    env "$@" CUDA_INJECTION64_PATH="$B/libcuptop-agent.so" CUPTOP_STORE="$st" \
        CUPTOP_KINDS=kernel,runtime,driver \
        timeout 120 "$STORM" -n $((1500000 * t)) -s 4 -t "$t" >"$st.storm" 2>&1
    "$B/cuptop" sessions --store "$st" --json 2>/dev/null |
        sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n 1
}
# lost STORE ID: records lost in all classes (report's "all" row)
lost() { "$B/cuptop" report --store "$1" "$2" | awk '$1 == "all" { print $5; exit }'; }
verdict() { "$B/cuptop" check --store "$1" "$2" >/dev/null 2>&1 && echo COMPLETE || echo INCOMPLETE; }

{
    echo "| case | setting | lost | first recommendation | rerun | lost | proof |"
    echo "|---|---|---:|---|---|---:|---|"
} >"$R"
for c in "starve 4 CUPTOP_POOL=2" "small 1 CUPTOP_BUFFER_SIZE=64K CUPTOP_POOL=64"; do
    set -- $c
    name=$1 t=$2
    shift 2
    id=$(run "$name" "$t" "$@")
    [ -n "$id" ] || { echo "$name: no session (see $W/$name.storm)"; fail=1; continue; }
    "$B/cuptop" report --store "$W/$name" "$id" >"$W/$name.report"
    before=$(lost "$W/$name" "$id")
    set1=$(awk '/^Advice$/ { a = 1; next }
                a && /^  1\. / { one = 1; next }
                a && one && /^  [0-9]+\. / { exit }
                a && one && /^     rerun: / { print $2; exit }' "$W/$name.report")
    first=$(awk '/^Advice$/ { a = 1; next } a && /^  1\. / { sub(/^  1\. /, ""); print; exit }' \
        "$W/$name.report")
    if [ -z "$set1" ]; then
        echo "| $name | $* | $before | $first | (no setting) | | FAIL |" >>"$R"
        fail=1
        continue
    fi
    # the recommendation replaces the setting it names, the rest stay
    args=()
    for a in "$@"; do [ "${a%%=*}" = "${set1%%=*}" ] || args+=("$a"); done
    args+=("$set1")
    id2=$(run "$name-rerun" "$t" "${args[@]}")
    after=$(lost "$W/$name-rerun" "$id2")
    v=$(verdict "$W/$name-rerun" "$id2")
    proof=FAIL
    if [ -n "$after" ] && { [ "$v" = COMPLETE ] || [ $((after * 10)) -le "${before:-0}" ]; }; then
        proof=ok
    else
        fail=1
    fi
    echo "| $name | $* | $before | $first | ${args[*]} | ${after:-?} ($v) | $proof |" >>"$R"
done
cat "$R"
exit $fail
