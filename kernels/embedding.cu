/* Embedding gather: y[i, :] = float(table[ids[i], :]), table [V, C] F32 or
** F16 (converted with __half2float: sm_52 has no half arithmetic).
**
** Layout: one block of 128 threads per id (n < 2^31), threads stride over
** the row: float4 (F32) or 4 halves as one 8-byte load (F16) when C is a
** multiple of 4 and the pointers aligned, else scalar. The id is checked
** against [0, V): a bad one is reported to the index guard (thread 0) and
** its row of y is zeros, so nothing is read through it.
**
** Bytes per id: C·(2 or 4) read + C·4 written; ChatGLM2 (C = 4096, f16
** table of 65024 rows): 24 KiB per token; M40 roofline at 288 GB/s: 512
** ids ≈ 44 µs, one id launch-bound. Target >= 0.80x copy bandwidth
** (tools/bench/norm.c).
**
** ptxas (sm_52, CUDA 11.8, -v), 4 instances (V 1/4 x f32/f16): 21-32
** registers, 0 bytes stack frame, 0 spills, no shared memory. */
#include "embedding.h"
#include "guard.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 128;

template <int V> __device__ __forceinline__ void load_row(float *a, const float *p) {
    if (V == 4) {
        float4 t = __ldg(reinterpret_cast<const float4 *>(p));
        a[0] = t.x, a[1] = t.y, a[2] = t.z, a[3] = t.w;
    } else {
        a[0] = __ldg(p);
    }
}
template <int V> __device__ __forceinline__ void load_row(float *a, const __half *p) {
    if (V == 4) {
        uint2 u = __ldg(reinterpret_cast<const uint2 *>(p));
        a[0] = __half2float(__ushort_as_half((unsigned short)(u.x & 0xFFFFu)));
        a[1] = __half2float(__ushort_as_half((unsigned short)(u.x >> 16)));
        a[2] = __half2float(__ushort_as_half((unsigned short)(u.y & 0xFFFFu)));
        a[3] = __half2float(__ushort_as_half((unsigned short)(u.y >> 16)));
    } else {
        a[0] = __half2float(p[0]);
    }
}

template <int V, typename T>
__global__ void __launch_bounds__(kThreads) embedding_kernel(const int *__restrict__ ids,
                                                             int64_t nrows, int64_t C,
                                                             const T *__restrict__ table,
                                                             float *__restrict__ y,
                                                             unsigned *guard) {
    const int64_t i = blockIdx.x;
    const int id = __ldg(ids + i);
    const bool bad = id < 0 || (int64_t)id >= nrows;
    if (bad && threadIdx.x == 0) m40k_guard_report(guard, M40K_GUARD_EMBEDDING_ID, id, nrows);
    const T *src = table + (bad ? 0 : (int64_t)id * C);
    float *dst = y + i * C;
    for (int64_t c = (int64_t)threadIdx.x * V; c < C; c += kThreads * V) {
        float a[V];
        if (bad) {
#pragma unroll
            for (int k = 0; k < V; k++) a[k] = 0.0f;
        } else {
            load_row<V>(a, src + c);
        }
        if (V == 4) *reinterpret_cast<float4 *>(dst + c) = make_float4(a[0], a[1], a[2], a[3]);
        else dst[c] = a[0];
    }
}

bool aligned(const void *p, unsigned n) { return ((uintptr_t)p & (n - 1)) == 0; }

template <typename T>
int launch(cudaStream_t s, int64_t n, const int32_t *ids, int64_t V, int64_t C, const T *t,
           float *y, unsigned *guard) {
    const bool v4 = C % 4 == 0 && aligned(t, 4 * sizeof(T)) && aligned(y, 16);
    if (v4)
        embedding_kernel<4, T><<<(unsigned)n, kThreads, 0, s>>>(ids, V, C, t, y, guard);
    else
        embedding_kernel<1, T><<<(unsigned)n, kThreads, 0, s>>>(ids, V, C, t, y, guard);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int m40k_embedding(void *stream, int64_t n, const int32_t *ids, int64_t V, int64_t C,
                              const void *table, int table_f16, float *y, unsigned *guard) {
    if (n == 0 || C == 0) return 0;
    if (n > 2147483647) return (int)cudaErrorInvalidConfiguration;
    cudaStream_t s = (cudaStream_t)stream;
    if (table_f16) return launch(s, n, ids, V, C, (const __half *)table, y, guard);
    return launch(s, n, ids, V, C, (const float *)table, y, guard);
}
