#!/bin/sh
# demo_headless.sh - cuptop demo --headless over the simulated CUPTI: each
# scenario gives its verdict and exit status, and cuptop check tells the
# scenarios apart by their loss class.  Exits 77 when the simulator is not
# built.
set -u
b=${top_builddir:?}
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || { echo "missing $f: skipped"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-demo-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
# scenario  expected-status  word in the verdict and in cuptop check
for row in "clean 0 COMPLETE" "drops 1 cupti_dropped" "slow-consumer 1 declined" \
           "crash 1 crashed" "conflict 1 conflict"; do
    set -- $row
    sc=$1 want=$2 word=$3
    "$b/cuptop" demo --headless --seconds 2 --scenario "$sc" --store "$tmp/$sc" \
        >"$tmp/$sc.out" 2>"$tmp/$sc.err"
    rc=$?
    "$b/cuptop" check --store "$tmp/$sc" --all >"$tmp/$sc.check" 2>&1
    crc=$?
    # each reason names its class once ("cupti_dropped: cupti_dropped:" was printed)
    if [ "$rc" = "$want" ] && [ "$crc" = "$want" ] && grep -q "$word" "$tmp/$sc.out" &&
        grep -q "$word" "$tmp/$sc.check" && ! grep -Eq '([a-z_]+): \1:' "$tmp/$sc.out"; then
        echo "ok   $sc: exit $rc, $word"
    else
        echo "FAIL $sc: demo exit $rc, check exit $crc (want $want and \"$word\")"
        cat "$tmp/$sc.out" "$tmp/$sc.err" "$tmp/$sc.check"
        fail=1
    fi
done
# misuse: one line, exit 2
"$b/cuptop" demo --headless --scenario nosuch >/dev/null 2>"$tmp/misuse"
rc=$?
if [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/misuse")" = 1 ]; then
    echo "ok   misuse: exit 2, one line"
else
    echo "FAIL misuse: exit $rc"; cat "$tmp/misuse"; fail=1
fi
exit $fail
