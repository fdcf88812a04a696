// What the hand-built experiments beside this file share: a CUDA error
// check that exits, a 32-bit integer mixer for pseudorandom indices and
// values, and an event timer on the default stream.
#pragma once

#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#define CK(x)                                                                \
    do {                                                                     \
        cudaError_t e_ = (x);                                                \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));         \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

__device__ __forceinline__ uint32_t mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

struct timer {
    cudaEvent_t a, b;
    timer() { CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
    void start() { CK(cudaEventRecord(a)); }
    float stop()
    {
        float ms;
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        return ms;
    }
};
