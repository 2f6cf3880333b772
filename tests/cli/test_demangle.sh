#!/bin/sh
# test_demangle.sh - kernel names as people read them: export_demangle
# against binutils' c++filt as the oracle, on real PyTorch, vLLM and
# CUTLASS kernel names (tests/cli/demangle_names.txt); the standard
# abbreviations (std::string ...) as c++filt -i prints them, which is what
# __cxa_demangle and torch.profiler show; names that do not demangle stay
# raw; long results are cut at EXPORT_DEMANGLE_MAX with "...".  Skips (77)
# without c++filt.
set -u
b=${top_builddir:?}
s=${top_srcdir:?}
dm=$b/tests/cli/demangle_names
[ -x "$dm" ] || { echo "missing $dm: skipped"; exit 77; }
command -v c++filt >/dev/null 2>&1 || { echo "no c++filt (binutils): skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-demangle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }

names=$s/tests/cli/demangle_names.txt
"$dm" <"$names" >"$tmp/ours"
c++filt <"$names" >"$tmp/filt"
if cmp -s "$tmp/ours" "$tmp/filt"; then
    echo "ok   $(wc -l <"$names" | tr -d ' ') real kernel names demangle as c++filt prints them"
else
    echo "FAIL demangled names differ from c++filt:"; diff "$tmp/filt" "$tmp/ours" | head -20; fail=1
fi
# they were demangled at all (the oracle could echo raw names too)
check "every _Z name was demangled" "$(paste -d '\n' "$names" "$tmp/ours" | paste - - |
    awk -F '\t' '$1 ~ /^_Z/ && $1 == $2' | wc -l | tr -d ' ')" 0
check "a PyTorch kernel reads as torch.profiler shows it" "$(sed -n 3p "$tmp/ours")" \
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
check "a plain C name is left alone" "$(tail -1 "$tmp/ours")" "ampere_sgemm_128x64_nn"

# standard substitutions: the short forms (c++filt -i, __cxa_demangle, Kineto)
printf '%s\n' _ZNSs4sizeEv _ZNKSt6vectorIiSaIiEE4sizeEv _Z5printRSo >"$tmp/std"
check "std abbreviations as c++filt -i" "$("$dm" <"$tmp/std" | tr '\n' '|')" \
    "$(c++filt -i <"$tmp/std" | tr '\n' '|')"

# no demangling: not a C++ name, truncated or invalid ones, hostile bytes
printf '%s\n' f i v _Z _Zx _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_add \
    "$(printf '_Z3fooi\033[2J')" "$(printf 'bad_\377_kernel')" \
    _ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaPipelinedINS1_9GemmShapeILi128ELi128ELi8EEEEEEvNT_6ParamsE \
    >"$tmp/raw"
check "names that do not demangle stay raw" "$("$dm" <"$tmp/raw" | od -c | md5sum)" \
    "$(od -c <"$tmp/raw" | md5sum)"

# a long result is cut with "..." at EXPORT_DEMANGLE_MAX (4096 bytes):
# f(aaa...a, ...) with 31 parameters of a 200-character class, ~6 KB
long=$(python3 -c 'print("_Z1f200" + "a" * 200 + "S_" * 30)' 2>/dev/null) ||
    long=""
if [ -n "$long" ]; then
    out=$(printf '%s\n' "$long" | "$dm")
    full=$(printf '%s\n' "$long" | c++filt)
    check "long result: cut to 4095 bytes" "${#out}" 4095
    check "long result: ends in ..." "${out#"${out%???}"}" "..."
    check "long result: the kept part is c++filt's" "${out%...}" "$(printf '%s' "$full" | head -c 4092)"
fi
exit $fail
