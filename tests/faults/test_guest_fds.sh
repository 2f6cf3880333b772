#!/bin/sh
# test_guest_fds.sh - fault row 13: the application started with one of
# its standard descriptors closed (stdin, stdout, stderr), under the agent
# (simdrive: CUDA_INJECTION64_PATH's path, the simulated CUPTI).  The agent
# must leave 0-2 to the application (doc/agent.md, "Descriptors"): the
# application's own write to fd 1 and fd 2 and its read of fd 0 give
# exactly what they give without the agent (EBADF on the closed one, its
# data on the others); every descriptor of the agent is >= 3 and
# close-on-exec, and a program the application execs inherits none of the
# store's; the session is COMPLETE with every record accounted for.
# Before the fix: lock.mdb became the closed descriptor (the application's
# printf wrote into it, its read of stdin read lock.mdb), and data.mdb was
# inherited across exec.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3
DRIVE=$B/simdrive
[ -e "$DRIVE" ] || skip "$DRIVE not built"
export CUPTOPSIM_SEED=7 CUPTOPSIM_SCENARIO=clean CUPTOP_STOP_TIMEOUT_MS=20000
printf 'the input of the application\n' >"$WORK/input"
steps=seq:ctx,emit:2000,stdio:io,fds:fds,exec:child,emit:500

# drive NAME AGENT CLOSED: simdrive with fd CLOSED (0, 1, 2 or -) closed
drive() {
    d=$WORK/$1
    mkdir -p "$d"
    case $3 in
    0) CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$2" "$d/truth" "$steps" return \
        <&- >"$d/out" 2>"$d/err" ;;
    1) CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$2" "$d/truth" "$steps" return \
        <"$WORK/input" >&- 2>"$d/err" ;;
    2) CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$2" "$d/truth" "$steps" return \
        <"$WORK/input" >"$d/out" 2>&- ;;
    *) CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$2" "$d/truth" "$steps" return \
        <"$WORK/input" >"$d/out" 2>"$d/err" ;;
    esac
    echo $?
}

for closed in 0 1 2 -; do
    tag=closed$closed
    [ "$closed" = - ] && tag=open
    check "$tag without the agent: exit status" "$(drive "$tag-ref" none "$closed")" 0
    check "$tag under the agent: exit status" "$(drive "$tag" "$AGENT" "$closed")" 0
    d=$WORK/$tag
    # the application's own I/O is what it is without the agent
    check "$tag: the application's writes and read" "$(cat "$d/io")" "$(cat "$WORK/$tag-ref/io")"
    case $closed in
    0) check "$tag: stdin reads EBADF" "$(sed -n 's/.*r0=\(-*[0-9]*\) e0=\([0-9]*\).*/\1 \2/p' "$d/io")" "-1 9" ;;
    1) check "$tag: stdout writes EBADF" "$(sed -n 's/^w1=\(-*[0-9]*\) e1=\([0-9]*\).*/\1 \2/p' "$d/io")" "-1 9" ;;
    2) check "$tag: stderr writes EBADF" "$(sed -n 's/.* w2=\(-*[0-9]*\) e2=\([0-9]*\).*/\1 \2/p' "$d/io")" "-1 9" ;;
    esac
    if [ "$closed" != 1 ]; then
        check "$tag: stdout holds the application's line only" "$(cat "$d/out")" \
            "simdrive: the application's own line"
    fi
    # the agent's descriptors: >= 3, close-on-exec; the store's never exec'd
    store=$d/store
    low=$(awk -v s="$store/" 'index($3, s) == 1 && $1 < 3' "$d/fds" | wc -l)
    inh=$(awk -v s="$store/" 'index($3, s) == 1 && $2 != 1' "$d/fds" | wc -l)
    n=$(awk -v s="$store/" 'index($3, s) == 1' "$d/fds" | wc -l)
    check_ge "$tag: the store's descriptors seen" "$n" 2
    check "$tag: store descriptors below 3" "$low" 0
    check "$tag: store descriptors without close-on-exec" "$inh" 0
    check "$tag: store descriptors an exec'd program inherits" \
        "$(grep -c "$store/" "$d/child")" 0
    if [ "$closed" = 0 ] || [ "$closed" = 1 ] || [ "$closed" = 2 ]; then
        check "$tag: fd $closed still closed after the agent started" \
            "$(awk -v c="$closed" '$1 == c' "$d/fds" | wc -l)" 0
    fi
    # the session is intact and COMPLETE, every record accounted for
    id=$(sessions "$store" | head -1)
    dump "$store" "$id" >"$d/dump" 2>&1
    if python3 "$top_srcdir/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return \
        >"$d/check"; then
        pass "$tag: stored == truth"
    else
        fail "$tag: stored != truth: $(grep FAIL "$d/check" | head -3)"
    fi
    "$CUPTOP" check --store "$store" "$id" >"$d/verdict" 2>&1
    check "$tag: cuptop check" "$?" 0
done
finish
