/* libFuzzer target: arbitrary model bytes and input text.
**
** Input layout: 1 selector byte, then data. Selector bit 0 set: the data is text
** for the model named by env M40_FUZZ_MODEL (run_fuzz.sh sets a fixture), so the
** encoders see deep inputs. Bit 0 clear: the data is a model file, optionally
** followed by 0xFF 0x00 and text. A model that loads must encode, decode and
** stream-decode without crashing, ids must be in range, the streamed text must
** equal decode(), and a failed load must come with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m40/tokenizer.h"

static m40_tokenizer *fixed;

static void exercise(m40_tokenizer *tok, const uint8_t *text, size_t n) {
    size_t count = 0;
    if (m40_tokenizer_encode(tok, (const char *)text, n, NULL, 0, &count) != M40_OK) return;
    int32_t *ids = malloc((count ? count : 1) * sizeof *ids);
    if (!ids) return;
    size_t again = 0;
    if (m40_tokenizer_encode(tok, (const char *)text, n, ids, count, &again) != M40_OK || again != count)
        abort();
    int32_t vocab = m40_tokenizer_get_vocab_size(tok);
    for (size_t i = 0; i < count; i++)
        if (ids[i] < 0 || ids[i] >= vocab) abort();
    /* Also decode the raw bytes reinterpreted as ids, to reach odd sequences. */
    for (int pass = 0; pass < 2; pass++) {
        size_t nid = count;
        if (pass == 1) {
            nid = n / 2;
            for (size_t i = 0; i < nid && i < count; i++) ids[i] = (int32_t)((text[2 * i] | text[2 * i + 1] << 8) % (uint32_t)vocab);
            if (nid > count) nid = count;
        }
        size_t len = 0;
        if (m40_tokenizer_decode(tok, ids, nid, NULL, 0, &len) != M40_OK) abort();
        char *out = malloc(len + 1), *streamed = malloc(len + 1);
        size_t got = 0, slen = 0;
        if (out && streamed && m40_tokenizer_decode(tok, ids, nid, out, len + 1, &got) == M40_OK) {
            m40_tokenizer_stream *s = NULL;
            if (m40_tokenizer_stream_create(tok, &s) == M40_OK) {
                for (size_t i = 0; i <= nid; i++) {
                    const char *t;
                    size_t tl;
                    m40_status st = i < nid ? m40_tokenizer_stream_push(s, ids[i], &t, &tl)
                                            : m40_tokenizer_stream_finish(s, &t, &tl);
                    if (st || slen + tl > len) abort();
                    memcpy(streamed + slen, t, tl);
                    slen += tl;
                }
                if (slen != got || memcmp(out, streamed, got) != 0) abort();
                m40_tokenizer_stream_destroy(s);
            }
        }
        free(out);
        free(streamed);
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!fixed) {
        const char *path = getenv("M40_FUZZ_MODEL");
        if (path) m40_tokenizer_load_file(path, &fixed);
    }
    uint8_t sel = data[0];
    data++;
    size--;
    if ((sel & 1) && fixed && m40_tokenizer_get_vocab_size(fixed) > 0) {
        exercise(fixed, data, size);
        return 0;
    }
    size_t split = size;
    for (size_t i = 0; i + 1 < size; i++)
        if (data[i] == 0xFF && data[i + 1] == 0x00) {
            split = i;
            break;
        }
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_memory(data, split, &tok);
    if (st == M40_OK) {
        const uint8_t *text = split + 2 <= size ? data + split + 2 : data + size;
        exercise(tok, text, (size_t)(data + size - text));
    } else if (tok && !m40_tokenizer_errmsg(tok)[0]) {
        abort(); /* every failure must say why */
    }
    m40_tokenizer_destroy(tok);
    return 0;
}
