// bench/gpu/graph_nodes.cu - a CUDA graph of every node type the launch
// ledger counts (issue 31): per launch, K kernel nodes, one memcpy node
// (device to device) and one memset node, built by stream capture,
// instantiated once and launched N times on one stream; plus the same
// work launched eagerly (not as a graph) N times on another stream.
//
// Usage: graph_nodes N [K]
// Prints the program's own counts, one per line:
//   graph_launches=N kernel_nodes=K memcpy_nodes=1 memset_nodes=1
//   eager_kernels=N*K eager_memcpy=N eager_memset=N
// so that a run under the agent with --ledger can be checked: kernel
// records expected == N*K*2, memcpy == 2N, memset == 2N, each matched.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(x)                                                                   \
    do {                                                                        \
        cudaError_t e_ = (x);                                                   \
        if (e_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,          \
                    cudaGetErrorString(e_));                                    \
            return 1;                                                           \
        }                                                                       \
    } while (0)

__global__ void touch(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += 1.0f;
}

static cudaError_t work(cudaStream_t s, float *a, float *b, int n, int k)
{
    for (int i = 0; i < k; i++)
        touch<<<(n + 255) / 256, 256, 0, s>>>(a, n);
    cudaError_t e = cudaMemcpyAsync(b, a, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(a, 0, n * sizeof(float), s);
    return e == cudaSuccess ? cudaGetLastError() : e;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    int k = argc > 2 ? atoi(argv[2]) : 3;
    const int len = 1 << 12;
    float *a, *b;
    cudaStream_t gs, es;
    CK(cudaMalloc(&a, len * sizeof(float)));
    CK(cudaMalloc(&b, len * sizeof(float)));
    CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&es, cudaStreamNonBlocking));

    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(gs, cudaStreamCaptureModeGlobal));
    CK(work(gs, a, b, len, k));
    CK(cudaStreamEndCapture(gs, &g));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(g, nullptr, &nodes));
    CK(cudaGraphInstantiate(&ge, g, 0));

    for (long i = 0; i < n; i++) {
        CK(cudaGraphLaunch(ge, gs));
        CK(work(es, b + len / 2, a + len / 2, len / 2, k));
    }
    CK(cudaDeviceSynchronize());
    printf("graph_launches=%ld graph_nodes=%zu kernel_nodes=%d memcpy_nodes=1 memset_nodes=1\n", n,
           nodes, k);
    printf("eager_kernels=%ld eager_memcpy=%ld eager_memset=%ld\n", n * k, n, n);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return 0;
}
