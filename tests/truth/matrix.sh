#!/bin/sh
# matrix.sh - the truth matrix in make check (issue 29, doc/truth.md): a
# fixed set of cases drawn by tests/truth/truth.py from the feature
# dimensions, each run on the simulated CUPTI and every output checked
# against the simulator's truth and against the others; then the saved
# regression cases (tests/truth/regress/*.case).  Failures that
# tests/truth/known.txt attributes to open defects are XFAIL, with the
# item.  TRUTH_CASES, TRUTH_SEED and TRUTH_JOBS change the set (make
# check-matrix CASES=N SEED=S runs a longer one).  Exits 77 without the
# simulator or python3.
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
case ${CUPTOP_TEST_SANITIZER:-no} in
no | "") ;;
*)
    # the preloaded faultio.so and the many short-lived processes: the
    # plain build runs the matrix; the sanitizer build a tenth of it
    TRUTH_CASES=${TRUTH_CASES:-20}
    TRUTH_WINDOW_CASES=${TRUTH_WINDOW_CASES:-3}
    ;;
esac
t=$top_srcdir/tests/truth/truth.py
python3 "$t" matrix --cases "${TRUTH_CASES:-200}" --seed "${TRUTH_SEED:-29}" \
    --jobs "${TRUTH_JOBS:-2}"
rc=$?
[ "$rc" = 77 ] && exit 77
# periodic windows (start=capture_every) are few in the random draw (a
# simdrive start, no job): a short set of their own
python3 "$t" matrix --cases "${TRUTH_WINDOW_CASES:-12}" --seed 78 --jobs "${TRUTH_JOBS:-2}" \
    --spec 'start=capture_every;driver=simdrive;job=none' || rc=1
set -- "$top_srcdir"/tests/truth/regress/*.case
if [ -e "$1" ]; then
    python3 "$t" regress "$@" || rc=1
fi
exit $rc
