// nvtx_storm.cu - the launch storm with NVTX: N empty kernels over S
// streams, each launch inside nvtxRangePushA("launch")/nvtxRangePop, and a
// "step" range around every 1000 launches (through the toolkit's nvtx3
// headers, so NVTX_INJECTION64_PATH decides where the calls go).  For the
// NVTX routing cost table of bench/gpu/nvtx.sh.
//
//   nvtx_storm [-n LAUNCHES] [-s STREAMS]
//
// Prints "launches=N ranges=R seconds=X launches_per_s=Y".
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty_kernel() {}

int main(int argc, char **argv)
{
    long n = 300000, ns = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = std::strtol(argv[i + 1], nullptr, 10);
        if (argv[i][1] == 'n') n = v;
        else if (argv[i][1] == 's') ns = v;
    }
    std::vector<cudaStream_t> s(ns);
    for (auto &x : s)
        if (cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking) != cudaSuccess)
            return 1;
    empty_kernel<<<1, 1, 0, s[0]>>>();
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    long ranges = 0;
    for (long i = 0; i < n; i++) {
        if (i % 1000 == 0) {
            if (i)
                nvtxRangePop();
            nvtxRangePushA("step");
            ranges++;
        }
        nvtxRangePushA("launch");
        empty_kernel<<<1, 1, 0, s[i % ns]>>>();
        nvtxRangePop();
        ranges++;
    }
    nvtxRangePop();
    cudaDeviceSynchronize();
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (cudaGetLastError() != cudaSuccess)
        return 1;
    std::printf("launches=%ld ranges=%ld seconds=%.4f launches_per_s=%.0f\n", n, ranges, sec,
                n / sec);
    return 0;
}
