#!/bin/sh
# advice_proof.sh - DESIGN invariant 9, advice is proven by doing it: every
# lossy simulator scenario (drops, demo, slow-consumer), at 5 s and at 15 s,
# is run, `cuptop report` is asked what to do, the exact setting of its
# first recommendation ("rerun: CUPTOP_X=V") is applied to a rerun, and the
# rerun must be COMPLETE or lose at least 90% fewer records.  The runs of
# one round go in parallel (each has its own store and simulator process).
# Exits 77 when the simulator is not built.
set -u
b=${top_builddir:?}
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || { echo "missing $f: skipped"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-advice.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# the user's own settings would change what is measured
for v in $(env | sed -n 's/^\(CUPTOP_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
fail=0
cases="drops-5 drops-15 demo-5 demo-15 slow-consumer-5 slow-consumer-15"

demo() { # NAME SCENARIO SECONDS [VAR=VALUE]
    name=$1 sc=$2 secs=$3
    shift 3
    env "$@" "$b/cuptop" demo --headless --seconds "$secs" --scenario "$sc" \
        --store "$tmp/$name" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
lost() { sed -n 's/^session .*, \([0-9][0-9]*\) lost$/\1/p' "$tmp/$1.out"; }
verdict() { sed -n 's/^session [^:]*: \([A-Z]*\) .*/\1/p' "$tmp/$1.out"; }

# round 1: the scenarios as they are
for c in $cases; do
    demo "$c" "${c%-*}" "${c##*-}" &
done
wait

# the first recommendation of each, as the exact setting it names
for c in $cases; do
    id=$(ls "$tmp/$c" 2>/dev/null | head -n 1)
    "$b/cuptop" report --store "$tmp/$c" "$id" >"$tmp/$c.report" 2>&1
    set=$(awk '/^Advice$/ { a = 1; next }
               a && /^  1\. / { one = 1; next }
               a && one && /^  [0-9]+\. / { exit }
               a && one && /^     rerun: / { print $2; exit }' "$tmp/$c.report")
    first=$(awk '/^Advice$/ { a = 1; next } a && /^  1\. / { print; exit }' "$tmp/$c.report")
    if [ "$(verdict "$c")" != INCOMPLETE ] || [ -z "$(lost "$c")" ] || [ "$(lost "$c")" = 0 ]; then
        echo "FAIL $c: the scenario lost nothing to fix"; cat "$tmp/$c.out" "$tmp/$c.err"; fail=1
        continue
    fi
    case $set in
    CUPTOP_*=*) echo "$set" >"$tmp/$c.set" ;;
    *) echo "FAIL $c: the first recommendation names no setting: $first"
       sed -n '/^Advice$/,$p' "$tmp/$c.report"; fail=1 ;;
    esac
done
# the pool-starvation scenario must be told to raise the pool (issue 12)
for c in drops-5 drops-15; do
    [ -e "$tmp/$c.set" ] || continue
    grep -q '^CUPTOP_POOL=' "$tmp/$c.set" ||
        { echo "FAIL $c: sustained pool starvation not told to raise the pool: $(cat "$tmp/$c.set")"; fail=1; }
done

# round 2: the same scenarios with that setting applied
for c in $cases; do
    [ -e "$tmp/$c.set" ] || continue
    demo "$c.rerun" "${c%-*}" "${c##*-}" "$(cat "$tmp/$c.set")" &
done
wait

for c in $cases; do
    [ -e "$tmp/$c.set" ] || continue
    before=$(lost "$c") after=$(lost "$c.rerun") v=$(verdict "$c.rerun")
    if [ -z "$after" ]; then
        echo "FAIL $c: the rerun with $(cat "$tmp/$c.set") gave no verdict"
        cat "$tmp/$c.rerun.out" "$tmp/$c.rerun.err"; fail=1
    elif [ "$v" = COMPLETE ] || [ $((after * 10)) -le "$before" ]; then
        echo "ok   $c: $before lost; with $(cat "$tmp/$c.set"): $v, $after lost"
    else
        echo "FAIL $c: $before lost; with $(cat "$tmp/$c.set"): $v, $after lost (not 90% fewer)"
        cat "$tmp/$c.rerun.out"; sed -n '/^Advice$/,$p' "$tmp/$c.report"; fail=1
    fi
done
exit $fail
