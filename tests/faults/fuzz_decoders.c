/*
 * fuzz_decoders.c - the store's fuzz target (tests/fuzz/fuzz_chunk.c)
 * restricted to the decoders that must survive any input: record chunks,
 * health rows and the data-file pre-open check (targets 0-2).  Target 3
 * (a whole session handed to liblmdb) is left out: liblmdb trusts its
 * pages, see doc/reliability.md row 8.  Built only by fuzz_bounded.sh
 * with clang -fsanitize=fuzzer.
 */
#define LLVMFuzzerTestOneInput fuzz_chunk_one
#include "../fuzz/fuzz_chunk.c"
#undef LLVMFuzzerTestOneInput

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t buf[1 << 16];
    if (size < 1 || size > sizeof buf)
        return 0;
    memcpy(buf, data, size);
    buf[0] = (uint8_t)((data[0] & 3) % 3);
    return fuzz_chunk_one(buf, size);
}
