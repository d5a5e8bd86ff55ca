/* Host-side hooks of the fault-injection test (see fault_hooks.h). Uses no
** heap of its own: the live-set tables are static. A spinlock guards them
** because the CUDA runtime, statically linked in GPU builds, calls malloc
** from its own threads. */
#include "fault_hooks.h"

#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

/* 2^17 slots: one reduced-ResNet build makes a few thousand blocks. */
#define TABLE_CAP (1ul << 17)
static uintptr_t host_table[TABLE_CAP], dev_table[TABLE_CAP];
m40f_state m40f_st[M40F_KINDS] = {{.table = host_table, .cap = TABLE_CAP, .hit_fn = "", .hit_phase = ""},
                                  {.table = dev_table, .cap = TABLE_CAP, .hit_fn = "", .hit_phase = ""}};
static const char *volatile phase = "";

static void lock(m40f_state *s) {
    while (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE)) {
    }
}
static void unlock(m40f_state *s) { __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE); }

static unsigned long slot_of(const m40f_state *s, uintptr_t p) {
    return (unsigned long)((p >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (s->cap - 1);
}

void m40f_set_phase(const char *ph) { phase = ph; }

void m40f_arm(int kind, long n) {
    m40f_state *s = &m40f_st[kind];
    lock(s);
    memset(s->table, 0, s->cap * sizeof *s->table);
    s->live = 0;
    s->overflow = 0;
    s->n = n;
    s->calls = 0;
    s->hit = 0;
    s->hit_fn = s->hit_phase = "";
    s->tracking = 1;
    s->armed = 1;
    unlock(s);
}

void m40f_disarm(int kind) {
    m40f_state *s = &m40f_st[kind];
    lock(s);
    s->armed = 0;
    s->tracking = 0;
    unlock(s);
}

long m40f_calls(int kind) { return m40f_st[kind].calls; }
int m40f_hit(int kind) { return m40f_st[kind].hit; }
const char *m40f_hit_fn(int kind) { return m40f_st[kind].hit_fn; }
const char *m40f_hit_phase(int kind) { return m40f_st[kind].hit_phase; }
long m40f_live(int kind) { return m40f_st[kind].overflow ? -1 : m40f_st[kind].live; }

int m40f_should_fail(int kind, const char *fn) {
    m40f_state *s = &m40f_st[kind];
    if (!__atomic_load_n(&s->armed, __ATOMIC_RELAXED)) return 0;
    lock(s);
    int fail = 0;
    if (s->armed) {
        s->calls++;
        if (s->n > 0 && s->calls == s->n) {
            fail = 1;
            s->hit = 1;
            s->hit_fn = fn;
            s->hit_phase = phase;
        }
    }
    unlock(s);
    return fail;
}

void m40f_track(int kind, const void *p) {
    m40f_state *s = &m40f_st[kind];
    if (!p || !__atomic_load_n(&s->tracking, __ATOMIC_RELAXED)) return;
    lock(s);
    if (s->tracking) {
        /* keep the load under 3/4 (tombstones count): past it, give up counting */
        if ((unsigned long)s->live * 4 >= s->cap * 3) {
            s->overflow = 1;
        } else {
            unsigned long i = slot_of(s, (uintptr_t)p);
            while (s->table[i] > 1) i = (i + 1) & (s->cap - 1);
            s->table[i] = (uintptr_t)p;
            s->live++;
        }
    }
    unlock(s);
}

int m40f_untrack(int kind, const void *p) {
    m40f_state *s = &m40f_st[kind];
    if (!p) return 0;
    lock(s);
    int found = 0;
    unsigned long i = slot_of(s, (uintptr_t)p);
    for (unsigned long k = 0; k < s->cap && s->table[i]; k++, i = (i + 1) & (s->cap - 1))
        if (s->table[i] == (uintptr_t)p) {
            s->table[i] = 1;
            s->live--;
            found = 1;
            break;
        }
    unlock(s);
    return found;
}

/* ---- the wrapped functions ---------------------------------------------- */

void *__wrap_malloc(size_t n) {
    if (m40f_should_fail(M40F_HOST, "malloc")) return NULL;
    void *p = __real_malloc(n);
    m40f_track(M40F_HOST, p);
    return p;
}

void *__wrap_calloc(size_t k, size_t n) {
    if (m40f_should_fail(M40F_HOST, "calloc")) return NULL;
    void *p = __real_calloc(k, n);
    m40f_track(M40F_HOST, p);
    return p;
}

void *__wrap_realloc(void *p, size_t n) {
    if (m40f_should_fail(M40F_HOST, "realloc")) return NULL; /* p stays valid */
    void *q = __real_realloc(p, n);
    if (!q) return NULL;
    /* the new block is counted when the old one was (or there was none) */
    int was = p ? m40f_untrack(M40F_HOST, p) : 1;
    if (was) m40f_track(M40F_HOST, q);
    return q;
}

/* Not forwarded to libc's strdup, whose internal malloc the wrap cannot see. */
char *__wrap_strdup(const char *s) {
    if (m40f_should_fail(M40F_HOST, "strdup")) return NULL;
    size_t n = strlen(s) + 1;
    char *p = __real_malloc(n);
    if (p) memcpy(p, s, n);
    m40f_track(M40F_HOST, p);
    return p;
}

void __wrap_free(void *p) {
    m40f_untrack(M40F_HOST, p);
    __real_free(p);
}
