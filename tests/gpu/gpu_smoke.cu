// gpu_smoke.cu - a small real CUDA program for the GPU tests: N empty kernels
// round-robin over S streams plus one memcpy per 1000 launches, then exit
// through the path named by argv[3] ("return", "exit", "reset").
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

__global__ void empty_kernel(int) {}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000;
    int s = argc > 2 ? atoi(argv[2]) : 4;
    const char *how = argc > 3 ? argv[3] : "return";
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "gpu_smoke: no CUDA device\n");
        return 77;
    }
    std::vector<cudaStream_t> st(s);
    for (int i = 0; i < s; i++)
        cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking);
    void *d = nullptr;
    cudaMalloc(&d, 1 << 20);
    static char h[1 << 20];
    long copies = 0;
    for (long i = 0; i < n; i++) {
        empty_kernel<<<1, 1, 0, st[i % s]>>>((int)i);
        if (i % 1000 == 999) {
            cudaMemcpyAsync(d, h, sizeof h, cudaMemcpyHostToDevice, st[i % s]);
            copies++;
        }
    }
    cudaDeviceSynchronize();
    printf("launches=%ld memcpys=%ld\n", n, copies);
    fflush(stdout);
    if (strcmp(how, "exit") == 0)
        exit(0);
    if (strcmp(how, "reset") == 0)
        cudaDeviceReset();
    return 0;
}
