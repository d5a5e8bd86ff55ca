/* Test-only fault injection through the linker: test_fault is linked with
** -Wl,--wrap=malloc,... so every call the static libm40 (and the example
** linked beside it) makes to these functions lands in fault_hooks.c, which
** can make the N-th one fail and keeps the set of live blocks, so a leak is
** seen without LeakSanitizer. The library's sources are not touched.
**
** Host: malloc, calloc, realloc, strdup fail (NULL); free is tracked.
** Device (CUDA builds, fault_cuda.c): cudaMalloc and the stream, copy and
** launch entry points libm40 calls fail with an error; cudaFree and
** cudaStreamDestroy are tracked. */
#ifndef M40_TESTS_FAULT_HOOKS_H
#define M40_TESTS_FAULT_HOOKS_H

#include <stdint.h>

enum { M40F_HOST = 0, M40F_DEVICE = 1, M40F_KINDS = 2 };

/* Starts a window on one kind: calls are counted from 1; call number `n`
** fails (n = 0: none fails, just count); the live set starts empty. */
void m40f_arm(int kind, long n);
/* Ends the window: no call fails any more and the live set stops growing
** (frees still remove blocks from it). */
void m40f_disarm(int kind);
/* Calls counted in the current (or last) window. */
long m40f_calls(int kind);
/* 1 once the failing call has happened in this window. */
int m40f_hit(int kind);
/* Which function failed ("malloc", "cudaMalloc", ...) and the phase label
** that was current then; "" before a hit. */
const char *m40f_hit_fn(int kind);
const char *m40f_hit_phase(int kind);
/* Blocks (device: allocations and streams) made in the window and not yet
** released; -1 if the table overflowed (the count is then unknown). */
long m40f_live(int kind);
/* The phase label recorded with a hit (a static string). */
void m40f_set_phase(const char *phase);

/* Shared by fault_hooks.c and fault_cuda.c. */
typedef struct m40f_state {
    int armed, tracking, hit;
    long n, calls;
    const char *hit_fn, *hit_phase;
    long live;      /* entries in the table */
    int overflow;
    uintptr_t *table; /* open addressing: 0 empty, 1 tombstone */
    unsigned long cap;
    volatile int lock;
} m40f_state;
extern m40f_state m40f_st[M40F_KINDS];
/* Counts a call; 1 if this one must fail. */
int m40f_should_fail(int kind, const char *fn);
void m40f_track(int kind, const void *p);
/* 1 if p was tracked (it is removed). */
int m40f_untrack(int kind, const void *p);

#endif
