// nvtx_domain.cu - NVTX domains and registered strings made before the
// agent attaches CUPTI (bench/gpu/nvtx_domain.sh).  At the start, before
// any CUDA call, it creates domains "io" and "other" and registers "load"
// in "io"; then it pushes a range "step" three times: in the default
// domain around 100 launches, in "other" around 200, in "io" around 1000
// (with a "load" range, by registered string, around the last 10).
// Prints one JSON line with what it launched in each.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstring>

__global__ void empty_kernel() {}

static void launch(int n)
{
    for (int i = 0; i < n; i++)
        empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
}

static nvtxEventAttributes_t attr(const char *ascii, nvtxStringHandle_t reg)
{
    nvtxEventAttributes_t a;
    std::memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    if (reg) {
        a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a.message.registered = reg;
    } else {
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = ascii;
    }
    return a;
}

int main()
{
    nvtxDomainHandle_t io = nvtxDomainCreateA("io"), other = nvtxDomainCreateA("other");
    nvtxStringHandle_t load = nvtxDomainRegisterStringA(io, "load");
    launch(1);   // CUDA starts here (the agent loads now)
    nvtxRangePushA("step");
    launch(100);
    nvtxRangePop();
    nvtxEventAttributes_t s = attr("step", nullptr), l = attr(nullptr, load);
    nvtxDomainRangePushEx(other, &s);
    launch(200);
    nvtxDomainRangePop(other);
    nvtxDomainRangePushEx(io, &s);
    launch(990);
    nvtxDomainRangePushEx(io, &l);
    launch(10);
    nvtxDomainRangePop(io);
    nvtxDomainRangePop(io);
    launch(50);
    std::printf("{\"default\": 100, \"other\": 200, \"io\": 1000, \"load\": 10, \"outside\": 51}\n");
    return 0;
}
