// launch_storm.cu - N empty kernels round-robin over S streams, optionally
// from T threads and with a memcpy every M launches.  The workload for
// bench/gpu/run_all.sh: it measures the cost of CUPTI tracing per launch.
//
//   launch_storm [-n LAUNCHES] [-s STREAMS] [-t THREADS] [-m MEMCPY_EVERY]
//
// Prints one line: "launches=N streams=S threads=T memcpys=C seconds=X
// launches_per_s=Y device=D".  Exit 0, or 1 on a CUDA error.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void empty_kernel() {}

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "launch_storm: %s: %s\n", #x,                 \
                         cudaGetErrorString(e_));                              \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

static void worker(long n, int nstreams, long memcpy_every, long *copies)
{
    std::vector<cudaStream_t> s(nstreams);
    for (auto &x : s)
        CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    void *dev = nullptr, *host = nullptr;
    if (memcpy_every > 0) {
        CK(cudaMalloc(&dev, 4096));
        CK(cudaMallocHost(&host, 4096));
    }
    for (long i = 0; i < n; i++) {
        cudaStream_t st = s[i % nstreams];
        empty_kernel<<<1, 1, 0, st>>>();
        if (memcpy_every > 0 && i % memcpy_every == 0) {
            CK(cudaMemcpyAsync(dev, host, 4096, cudaMemcpyHostToDevice, st));
            (*copies)++;
        }
    }
    CK(cudaGetLastError());
    for (auto &x : s) {
        CK(cudaStreamSynchronize(x));
        CK(cudaStreamDestroy(x));
    }
    if (dev)
        CK(cudaFree(dev));
    if (host)
        CK(cudaFreeHost(host));
}

int main(int argc, char **argv)
{
    long n = 300000, memcpy_every = 0;
    int nstreams = 4, nthreads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = std::strtol(argv[i + 1], nullptr, 10);
        switch (argv[i][1]) {
        case 'n': n = v; break;
        case 's': nstreams = (int)v; break;
        case 't': nthreads = (int)v; break;
        case 'm': memcpy_every = v; break;
        default:
            std::fprintf(stderr, "usage: launch_storm [-n N] [-s S] [-t T] [-m M]\n");
            return 2;
        }
    }
    if (n < 1 || nstreams < 1 || nthreads < 1) {
        std::fprintf(stderr, "launch_storm: bad arguments\n");
        return 2;
    }
    CK(cudaFree(nullptr));   // create the context before timing
    int device = 0;
    CK(cudaGetDevice(&device));
    empty_kernel<<<1, 1>>>();   // load the module before timing
    CK(cudaDeviceSynchronize());

    std::vector<long> copies(nthreads, 0);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> th;
    for (int t = 0; t < nthreads; t++) {
        long share = n / nthreads + (t < n % nthreads ? 1 : 0);
        th.emplace_back(worker, share, nstreams, memcpy_every, &copies[t]);
    }
    for (auto &x : th)
        x.join();
    CK(cudaDeviceSynchronize());
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long total_copies = 0;
    for (long c : copies)
        total_copies += c;
    // +1: the warm-up launch is a kernel record too
    std::printf("launches=%ld streams=%d threads=%d memcpys=%ld seconds=%.4f "
                "launches_per_s=%.0f device=%d kernels_total=%ld\n",
                n, nstreams, nthreads, total_copies, secs, (double)n / secs, device, n + 1);
    return 0;
}
