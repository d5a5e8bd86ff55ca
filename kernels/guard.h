/* The index guard: kernels that read indices from device memory (token
** ids, positions, cache slots) check each against its bound, never touch
** memory through a bad one, and record the first bad index here; the
** library reports it at the context's next synchronization
** (lib/cuda/backend.c: m40__cuda_guard_check; m40/transformer.h says what
** the user sees). The guard is 4 unsigned ints of device memory per
** context: [0] the code of the first bad index (0: none), [1] its value,
** [2] its bound, [3] how many bad indices were met. */
#ifndef M40_KERNELS_GUARD_H
#define M40_KERNELS_GUARD_H

enum m40k_guard_code {
    M40K_GUARD_NONE = 0,
    M40K_GUARD_EMBEDDING_ID = 1,  /* embedding: id not in [0, V) */
    M40K_GUARD_ROPE_POS = 2,      /* rope: position < 0 */
    M40K_GUARD_KV_POS = 3,        /* kv_append: position not in [-1, L) */
    M40K_GUARD_KV_SLOT = 4,       /* kv_append: slot not in [0, S) */
    M40K_GUARD_ATTN_POS = 5,      /* attention: position not in [-1, L) */
    M40K_GUARD_ATTN_SLOT = 6,     /* attention: slot not in [0, S) */
    M40K_GUARD_SAMPLE_HISTORY = 7 /* sample: history id not in [-1, V) */
};
#define M40K_GUARD_WORDS 4
/* The sync words: M40K_SYNC_WORDS unsigned ints of device memory per context,
** right after the guard's (one allocation), zeroed when the context is made.
** Kernels that count their blocks in (the decode attention's fused combine:
** the last block of a group folds the group) use them as counters and leave
** each at zero when they finish, so the next launch on the context's one
** stream finds zeros (launches on one stream do not overlap). */
#define M40K_SYNC_WORDS 16384

#ifdef __CUDACC__
/* Records a bad index (any thread, any time; the first one wins). */
__device__ __forceinline__ void m40k_guard_report(unsigned *g, unsigned code, long long value,
                                                  long long bound) {
    if (!g) return;
    if (atomicCAS(&g[0], 0u, code) == 0u) {
        g[1] = (unsigned)value;
        g[2] = (unsigned)bound;
    }
    atomicAdd(&g[3], 1u);
}
#endif
#endif
