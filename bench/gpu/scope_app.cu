// scope_app.cu - CUDA programs with a known number of kernel launches for
// bench/gpu/dormant.sh (issue 16: lazy attach and capture ranges).
//
//   scope_app late N1 N2 DIR
//       N1 launches (round-robin over 4 streams), synchronise, write
//       DIR/ready, wait (at most 120 s) for DIR/go - the script creates it
//       once `cuptop control --attach` is acknowledged - then N2 launches,
//       synchronise.  Every kernel of the second phase runs after the
//       attach: the stored kernel records must equal N2.
//   scope_app capture N0 N1 N2
//       N0 launches, cudaProfilerStart, N1 launches, synchronise,
//       cudaProfilerStop, N2 launches.  With --capture-range cudaProfilerApi
//       exactly N1 kernel records must be stored.
//
// Prints one line "mode=... before=.. inside=.. after=.. seconds=..".
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>

__global__ void empty_kernel() {}

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "scope_app: %s: %s\n", #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

static cudaStream_t streams[4];

static void launch(long n)
{
    for (long i = 0; i < n; i++)
        empty_kernel<<<1, 1, 0, streams[i % 4]>>>();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: scope_app late N1 N2 DIR | capture N0 N1 N2\n");
        return 2;
    }
    std::string mode = argv[1];
    long a = std::atol(argv[2]), b = std::atol(argv[3]);
    CK(cudaFree(nullptr));
    for (auto &s : streams)
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto t0 = std::chrono::steady_clock::now();
    if (mode == "late") {
        std::string dir = argv[4];
        launch(a);
        FILE *f = std::fopen((dir + "/ready").c_str(), "w");
        if (f)
            std::fclose(f);
        for (int i = 0; i < 12000 && access((dir + "/go").c_str(), F_OK) != 0; i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (access((dir + "/go").c_str(), F_OK) != 0) {
            std::fprintf(stderr, "scope_app: no go file\n");
            return 1;
        }
        launch(b);
        std::printf("mode=late before=%ld inside=%ld after=0", a, b);
    } else if (mode == "capture") {
        long c = std::atol(argv[4]);
        launch(a);
        CK(cudaProfilerStart());
        launch(b);
        CK(cudaProfilerStop());
        launch(c);
        std::printf("mode=capture before=%ld inside=%ld after=%ld", a, b, c);
    } else {
        std::fprintf(stderr, "scope_app: unknown mode %s\n", mode.c_str());
        return 2;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(" seconds=%.4f\n", secs);
    for (auto &s : streams)
        CK(cudaStreamDestroy(s));
    return 0;
}
