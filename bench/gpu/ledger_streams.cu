// ledger_streams.cu - a workload that counts what it launches, per stream,
// for the launch ledger's exactness on real CUPTI (bench/gpu/ledger_agent.sh).
// On each of S streams: N empty kernels, an asynchronous copy every C-th
// launch and an asynchronous set every M-th; with -y Y a synchronous copy
// (legacy stream) every Y-th launch of the first stream.
//
//   ledger_streams [-n N] [-s S] [-c C] [-m M] [-y Y]
//
// Prints one line per stream, "stream=ID kernel=K memcpy=C memset=M", ID as
// cudaStreamGetId gives it (CUPTI's stream id), then "sync_memcpy=Y total=T".
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty_kernel() {}

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "ledger_streams: %s: %s\n", #x,               \
                         cudaGetErrorString(e_));                              \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

struct per_stream {
    cudaStream_t s;
    unsigned long long id;
    long kernel, memcpy, memset;
};

int main(int argc, char **argv)
{
    long n = 100000, copy_every = 10, set_every = 25, sync_every = 0;
    int nstreams = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = std::strtol(argv[i + 1], nullptr, 10);
        switch (argv[i][1]) {
        case 'n': n = v; break;
        case 's': nstreams = (int)v; break;
        case 'c': copy_every = v; break;
        case 'm': set_every = v; break;
        case 'y': sync_every = v; break;
        default:
            std::fprintf(stderr, "usage: ledger_streams [-n N] [-s S] [-c C] [-m M] [-y Y]\n");
            return 2;
        }
    }
    if (n < 1 || nstreams < 1) {
        std::fprintf(stderr, "ledger_streams: bad arguments\n");
        return 2;
    }
    std::vector<per_stream> st(nstreams);
    for (auto &p : st) {
        CK(cudaStreamCreateWithFlags(&p.s, cudaStreamNonBlocking));
        CK(cudaStreamGetId(p.s, &p.id));
        p.kernel = p.memcpy = p.memset = 0;
    }
    void *dev = nullptr, *host = nullptr;
    CK(cudaMalloc(&dev, 1 << 16));
    CK(cudaMallocHost(&host, 1 << 16));
    long sync_copies = 0;
    for (long i = 0; i < n; i++) {
        for (auto &p : st) {
            empty_kernel<<<1, 1, 0, p.s>>>();
            p.kernel++;
            if (copy_every > 0 && i % copy_every == 0) {
                CK(cudaMemcpyAsync(dev, host, 4096, cudaMemcpyHostToDevice, p.s));
                p.memcpy++;
            }
            if (set_every > 0 && i % set_every == 0) {
                CK(cudaMemsetAsync(dev, 0, 4096, p.s));
                p.memset++;
            }
        }
        if (sync_every > 0 && i % sync_every == 0) {
            CK(cudaMemcpy(host, dev, 4096, cudaMemcpyDeviceToHost));
            sync_copies++;
        }
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    long total = sync_copies;
    for (auto &p : st) {
        std::printf("stream=%llu kernel=%ld memcpy=%ld memset=%ld\n", p.id,
                    p.kernel, p.memcpy, p.memset);
        total += p.kernel + p.memcpy + p.memset;
        CK(cudaStreamDestroy(p.s));
    }
    std::printf("sync_memcpy=%ld total=%ld\n", sync_copies, total);
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
    return 0;
}
