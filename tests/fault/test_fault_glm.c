/* A prefill that fails part-way (examples/chatglm2, CPU): for every N from 1
** until a prefill completes without reaching it, the N-th host allocation
** fails during glm_seq_prefill of a 12-id prompt in three chunks (5, 5, 2)
** that follows a decode step (so the conversation held logits before it).
** Each failure must:
**   - return -1 with a message (glm_errmsg);
**   - leave no block allocated in the prefill behind (the hooks' live set);
**   - leave the conversation's position at the chunks that went in (5, 10
**     or 15: the header's promise) and nothing to sample: glm_seq_logits and
**     glm_seq_sample refuse rather than hand back the step's stale logits
**     (glm_seq_prefill forgets them before its first chunk runs; mutation
**     run 4's last survivor there, bench/NOTES.md session 27);
**   - leave the model usable: a rewind and the same prefill give the
**     fault-free run's logits bit for bit.
** At least one failure must land after a chunk went in (a position of 10 or
** 15), or the sweep did not test a prefill failing part-way.
** tests/fixtures/chatglm2/tiny.safetensors, fp32 weights. The hooks:
** fault_hooks.c through the linker's --wrap (tests/fault/tests.cmake). */
#include "chatglm2.h"
#include "check.h"
#include "fault_hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL "tests/fixtures/chatglm2/tiny.safetensors"
enum { CHUNK = 5, NA = 4, NB = 12, MAX_SITES = 100000 };

static const int32_t A[NA] = {17, 101, 5, 250};
static const int32_t Bp[NB] = {3, 44, 199, 7, 30, 12, 64, 128, 9, 77, 210, 31};

static int greedy(glm_model *m, int32_t *id) {
    m40_sampler_desc s;
    m40_sampler_desc_init(&s);
    s.temperature = 0.0f;
    return glm_seq_sample(m, 0, &s, id, NULL);
}

int main(void) {
    glm_open_opts o;
    glm_open_opts_init(&o);
    o.path = MODEL;
    o.dtype = M40_WFMT_FP32;
    o.ctx = 64;
    o.chunk = CHUNK;
    o.prefill_min = CHUNK; /* no short prefill graphs: every chunk runs in the 5-row graph */
    o.cpu = 1;
    glm_model *m = NULL;
    char err[512];
    if (glm_model_open(&o, &m, err, sizeof err)) {
        fprintf(stderr, "test_fault_glm: open: %s\n", err);
        return 1;
    }
    const int V = glm_config(m)->vocab;
    float *ref = malloc((size_t)V * sizeof *ref), *got = malloc((size_t)V * sizeof *got);
    CHECK(ref && got);
    int32_t id = 0;
    /* the fault-free run: A, a greedy step, then B */
    CHECK(glm_prefill(m, A, NA, NULL, NULL) == 0 && greedy(m, &id) == 0);
    CHECK(glm_step(m, id, NULL) == 0 && glm_pos(m) == NA + 1);
    CHECK(glm_seq_prefill(m, 0, Bp, NB, ref, NULL) == 0);
    int sites = 0, part_way = 0, done = 0;
    for (long n = 1; n <= MAX_SITES && !done && ref && got; n++) {
        CHECK(glm_seq_rewind(m, 0, NA) == 0 && glm_step(m, id, NULL) == 0);
        m40f_arm(M40F_HOST, n);
        const int r = glm_seq_prefill(m, 0, Bp, NB, got, NULL);
        const int hit = m40f_hit(M40F_HOST);
        const long live = m40f_live(M40F_HOST);
        m40f_disarm(M40F_HOST);
        if (!hit) { /* every allocation of the prefill passed: the sweep is over */
            CHECK(r == 0);
            m40t_compare("the prefill after the sweep", got, ref, V, (m40t_tol){0, 0, 0});
            done = 1;
            break;
        }
        sites++;
        char what[96];
        snprintf(what, sizeof what, "allocation %ld (%s) fails", n, m40f_hit_fn(M40F_HOST));
        if (r != -1 || !*glm_errmsg(m)) {
            printf("FAIL %s: prefill returned %d, message '%s'\n", what, r, glm_errmsg(m));
            m40t_failures++;
            continue;
        }
        if (live != 0) {
            printf("FAIL %s: %ld blocks made in the prefill left allocated\n", what, live);
            m40t_failures++;
        }
        const int pos = glm_seq_pos(m, 0);
        if (pos != NA + 1 && pos != NA + 1 + CHUNK && pos != NA + 1 + 2 * CHUNK) {
            printf("FAIL %s: position %d, not at a chunk's end (%d, %d or %d)\n", what, pos, NA + 1,
                   NA + 1 + CHUNK, NA + 1 + 2 * CHUNK);
            m40t_failures++;
        }
        if (pos > NA + 1) part_way++;
        int32_t x;
        if (glm_seq_logits(m, 0, got) != -1 || greedy(m, &x) != -1) {
            printf("FAIL %s: the conversation still has logits to sample (the step's, stale)\n", what);
            m40t_failures++;
        }
        m40t_checks += 4;
        /* usable: the same prefill again from the step's position */
        CHECK(glm_seq_rewind(m, 0, NA + 1) == 0);
        CHECK(glm_seq_prefill(m, 0, Bp, NB, got, NULL) == 0);
        m40t_compare(what, got, ref, V, (m40t_tol){0, 0, 0});
    }
    printf("%d allocation sites failed inside the prefill, %d of them after a chunk went in\n",
           sites, part_way);
    CHECK(done);
    CHECK(part_way > 0);
    glm_model_close(m);
    free(ref);
    free(got);
    return m40t_finish("test_fault_glm");
}
