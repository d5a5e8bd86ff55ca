/* Image decoding and preprocessing: see image.h. */
#define _POSIX_C_SOURCE 200809L /* fmemopen, fileno */
#include "image.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <jerror.h> /* the JWRN_ message codes; needs jpeglib.h first */
#include <png.h>

static int set_err(char *err, size_t n, const char *fmt, const char *a) {
    snprintf(err, n, fmt, a);
    return -1;
}

/* The one place the size limits are checked, from a header's numbers. */
static int check_size(uint64_t w, uint64_t h, const char *kind, char *err, size_t n) {
    if (w >= 1 && h >= 1 && w <= RN_IMAGE_MAX_SIDE && h <= RN_IMAGE_MAX_SIDE &&
        w * h <= RN_IMAGE_MAX_PIXELS)
        return 0;
    snprintf(err, n, "%s image too large or empty: %llux%llu (the limit is %d per side and %llu pixels)",
             kind, (unsigned long long)w, (unsigned long long)h, RN_IMAGE_MAX_SIDE,
             (unsigned long long)RN_IMAGE_MAX_PIXELS);
    return -1;
}

/* ---- PPM / PGM (P3, P6, P2, P5) ---------------------------------------- */

static int ppm_token(FILE *f, long *v) {
    int c;
    do { /* skip whitespace and comments */
        c = fgetc(f);
        if (c == '#') while (c != '\n' && c != EOF) c = fgetc(f);
    } while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
    if (c < '0' || c > '9') return -1;
    long x = 0;
    while (c >= '0' && c <= '9') {
        x = x * 10 + (c - '0');
        if (x > 1 << 20) return -1;
        c = fgetc(f);
    }
    *v = x;
    return 0;
}

/* `size`: the stream's length when known (a file or memory), else -1. */
static int load_ppm(FILE *f, int kind, long long size, rn_image *img, char *err, size_t n) {
    long w, h, maxv;
    if (ppm_token(f, &w) || ppm_token(f, &h) || ppm_token(f, &maxv) || maxv < 1 || maxv > 65535)
        return set_err(err, n, "corrupt PPM/PGM header%s", "");
    if (check_size((uint64_t)w, (uint64_t)h, "PPM/PGM", err, n)) return -1;
    int ch = kind == 3 || kind == 6 ? 3 : 1, binary = kind >= 5, wide = maxv > 255;
    /* A short file is refused before the pixel buffer is allocated: binary
    ** samples take 1 or 2 bytes, text ones at least 2 (digit, separator). */
    long pos = ftell(f);
    uint64_t samples = (uint64_t)w * (uint64_t)h * (uint64_t)ch;
    uint64_t need = binary ? samples * (wide ? 2u : 1u) : samples * 2 - 1;
    if (size >= 0 && pos >= 0 && (uint64_t)(size - pos) < need)
        return set_err(err, n, "truncated PPM/PGM data%s", "");
    img->rgb = malloc((size_t)w * (size_t)h * 3);
    if (!img->rgb) return set_err(err, n, "out of memory%s", "");
    img->width = (int)w;
    img->height = (int)h;
    for (long i = 0; i < w * h; i++)
        for (int c = 0; c < ch; c++) {
            long v;
            if (binary) {
                int b0 = fgetc(f), b1 = wide ? fgetc(f) : 0;
                if (b0 == EOF || b1 == EOF) goto truncated;
                v = wide ? (b0 << 8 | b1) : b0;
            } else if (ppm_token(f, &v)) {
                goto truncated;
            }
            if (v > maxv) v = maxv;
            uint8_t u = (uint8_t)((v * 255 + maxv / 2) / maxv);
            if (ch == 1) img->rgb[i * 3] = img->rgb[i * 3 + 1] = img->rgb[i * 3 + 2] = u;
            else img->rgb[i * 3 + c] = u;
        }
    return 0;
truncated:
    rn_image_free(img);
    return set_err(err, n, "truncated PPM/PGM data%s", "");
}

/* ---- PNG: libpng's simplified API --------------------------------------- */

/* `size`: the stream's length when known, else -1. */
static int load_png(FILE *f, long long size, rn_image *img, char *err, size_t n) {
    png_image p;
    memset(&p, 0, sizeof p);
    p.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_stdio(&p, f))
        return set_err(err, n, "corrupt PNG: %s", p.message);
    p.format = PNG_FORMAT_RGB; /* expands palette/gray, strips alpha (composited on black) */
    if (check_size(p.width, p.height, "PNG", err, n)) {
        png_image_free(&p);
        return -1;
    }
    /* Deflate expands at most ~1032:1 and a row holds at least a filter byte
    ** and one bit per pixel: a file too small for its rows is refused before
    ** the RGB buffer is allocated (a 1 KB PNG cannot claim 100 MB). */
    uint64_t min_raw = (uint64_t)p.height * (1 + ((uint64_t)p.width + 7) / 8);
    if (size >= 0 && min_raw > 1032 * (uint64_t)size + 4096) {
        png_image_free(&p);
        return set_err(err, n, "truncated PNG: too short for the size it declares%s", "");
    }
    img->rgb = malloc(PNG_IMAGE_SIZE(p));
    if (!img->rgb) {
        png_image_free(&p);
        return set_err(err, n, "out of memory%s", "");
    }
    img->width = (int)p.width;
    img->height = (int)p.height;
    if (!png_image_finish_read(&p, NULL, img->rgb, 0, NULL)) {
        rn_image_free(img);
        png_image_free(&p);
        return set_err(err, n, "corrupt PNG: %s", p.message);
    }
    return 0;
}

/* ---- JPEG: libjpeg, with errors turned into a longjmp, not exit() ------- */

typedef struct jerr {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
} jerr;

static void jpeg_fail(j_common_ptr c) {
    jerr *e = (jerr *)c->err;
    c->err->format_message(c, e->msg);
    longjmp(e->jump, 1);
}

/* Level -1 is a warning. libjpeg warns, then goes on with made-up data, on
** truncated or corrupt entropy data ("Premature end of JPEG file", "Corrupt
** JPEG data: ..."): those are errors here. Two harmless warnings about
** unknown marker versions are ignored; trace messages (level >= 0) too. */
static void jpeg_warn(j_common_ptr c, int level) {
    if (level >= 0 || c->err->msg_code == JWRN_ADOBE_XFORM || c->err->msg_code == JWRN_JFIF_MAJOR)
        return;
    jpeg_fail(c);
}

/* Caps the scan count of a progressive (or multi-scan) JPEG: each scan costs
** a pass over the coefficients, so a small file with thousands of empty
** scans would otherwise do work far beyond its size. */
static void jpeg_progress(j_common_ptr c) {
    if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number > RN_IMAGE_MAX_JPEG_SCANS) {
        jerr *e = (jerr *)c->err;
        snprintf(e->msg, sizeof e->msg, "more than %d scans", RN_IMAGE_MAX_JPEG_SCANS);
        longjmp(e->jump, 1);
    }
}

static int load_jpeg(FILE *f, rn_image *img, char *err, size_t n) {
    struct jpeg_decompress_struct c;
    struct jpeg_progress_mgr prog = {.progress_monitor = jpeg_progress};
    jerr e;
    char msg[JMSG_LENGTH_MAX + 96];
    c.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = jpeg_fail;
    e.mgr.emit_message = jpeg_warn;
    uint8_t *volatile buf = NULL; /* the pointer survives the longjmp */
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&c);
        free((void *)buf);
        img->rgb = NULL;
        return set_err(err, n, "corrupt JPEG: %s", e.msg);
    }
    jpeg_create_decompress(&c);
    c.progress = &prog;
    jpeg_stdio_src(&c, f);
    jpeg_read_header(&c, TRUE);
    if (c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&c);
        return set_err(err, n, "unsupported JPEG: CMYK colour (convert it to RGB)%s", "");
    }
    if (check_size(c.image_width, c.image_height, "JPEG", msg, sizeof msg)) {
        jpeg_destroy_decompress(&c);
        return set_err(err, n, "%s", msg);
    }
    c.out_color_space = JCS_RGB; /* gray and YCbCr convert */
    jpeg_start_decompress(&c);
    if (c.output_components != 3 ||
        check_size(c.output_width, c.output_height, "JPEG", msg, sizeof msg)) {
        jpeg_destroy_decompress(&c);
        return set_err(err, n, "unsupported JPEG (%s)", c.output_components != 3 ? "colour space" : msg);
    }
    buf = malloc((size_t)c.output_width * c.output_height * 3);
    if (!buf) {
        jpeg_destroy_decompress(&c);
        return set_err(err, n, "out of memory%s", "");
    }
    while (c.output_scanline < c.output_height) {
        JSAMPROW row = (JSAMPROW)(buf + (size_t)c.output_scanline * c.output_width * 3);
        if (jpeg_read_scanlines(&c, &row, 1) != 1) { /* suspension: not with a stdio source */
            snprintf(e.msg, sizeof e.msg, "decoder stalled");
            longjmp(e.jump, 1);
        }
    }
    jpeg_finish_decompress(&c);
    img->width = (int)c.output_width;
    img->height = (int)c.output_height;
    img->rgb = (uint8_t *)buf;
    jpeg_destroy_decompress(&c);
    return 0;
}

/* `size`: the stream's length when known, else -1. */
static int load_stream(FILE *f, long long size, rn_image *img, char *err, size_t errlen) {
    unsigned char m[8] = {0};
    size_t got = fread(m, 1, sizeof m, f);
    rewind(f);
    if (got >= 2 && m[0] == 0xFF && m[1] == 0xD8) return load_jpeg(f, img, err, errlen);
    if (got >= 8 && !memcmp(m, "\x89PNG\r\n\x1a\n", 8)) return load_png(f, size, img, err, errlen);
    if (got >= 2 && m[0] == 'P' && m[1] >= '2' && m[1] <= '6' && m[1] != '4') {
        if (fseek(f, 2, SEEK_SET) != 0) return set_err(err, errlen, "cannot seek in the image%s", "");
        return load_ppm(f, m[1] - '0', size, img, err, errlen);
    }
    return set_err(err, errlen, "unsupported image format (PNG, JPEG, PPM/PGM are)%s", "");
}

int rn_image_load(const char *path, rn_image *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    FILE *f = fopen(path, "rb");
    if (!f) return set_err(err, errlen, "cannot open '%s'", path);
    struct stat sb;
    long long size = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) ? (long long)sb.st_size : -1;
    int r = load_stream(f, size, img, err, errlen);
    fclose(f);
    return r;
}

int rn_image_load_memory(const void *data, size_t size, rn_image *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (!data || size == 0) return set_err(err, errlen, "empty image%s", "");
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return set_err(err, errlen, "out of memory%s", "");
    int r = load_stream(f, (long long)size, img, err, errlen);
    fclose(f);
    return r;
}

void rn_image_free(rn_image *img) {
    free(img->rgb);
    img->rgb = NULL;
}

/* Resamples one axis with a triangle (bilinear) filter whose support grows
** with the shrink factor, as PIL's resize does (antialiasing). src has `in`
** samples at stride `ss`; of the `out` resampled ones, computes those from
** `first` to first+count-1 and writes them at stride `ds`. */
static void resample_axis(const float *src, int in, int ss, float *dst, int out, int ds,
                          int first, int count) {
    double scale = (double)in / out, support = scale > 1 ? scale : 1.0;
    for (int i = first; i < first + count; i++) {
        double center = (i + 0.5) * scale;
        int lo = (int)floor(center - support + 0.5), hi = (int)floor(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        double acc = 0, wsum = 0;
        for (int j = lo; j < hi; j++) {
            double t = fabs((j + 0.5 - center) / support), w = t < 1 ? 1 - t : 0;
            acc += w * src[(size_t)j * ss];
            wsum += w;
        }
        dst[(size_t)(i - first) * ds] = (float)(wsum > 0 ? acc / wsum : 0);
    }
}

int rn_preprocess(const rn_image *img, int resize, int crop, float *out) {
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    if (!img || !img->rgb || !out || resize < 1 || resize > 4096 || crop < 1 || crop > 4096 ||
        img->width < 1 || img->height < 1 || img->width > RN_IMAGE_MAX_SIDE ||
        img->height > RN_IMAGE_MAX_SIDE)
        return -1;
    int w = img->width, h = img->height, nw, nh; /* resized size: at most 4096 * 32768 */
    if (w <= h) { nw = resize; nh = (int)((int64_t)resize * h / w); }
    else { nh = resize; nw = (int)((int64_t)resize * w / h); }
    int top = (int)lround((nh - crop) / 2.0), left = (int)lround((nw - crop) / 2.0);
    /* The crop window clipped to the resized image: columns [x0, x1), rows [y0, y1). */
    int x0 = left > 0 ? left : 0, x1 = left + crop < nw ? left + crop : nw;
    int y0 = top > 0 ? top : 0, y1 = top + crop < nh ? top + crop : nh;
    int ncol = x1 - x0, nrow = y1 - y0;
    float *row = malloc((size_t)w * sizeof(float));          /* [w] one channel of one row */
    float *tmp = malloc((size_t)h * ncol * sizeof(float) + 1); /* [h][ncol] after the x pass */
    float *res = malloc((size_t)nrow * ncol * sizeof(float) + 1); /* [nrow][ncol] */
    if (!row || !tmp || !res) {
        free(row);
        free(tmp);
        free(res);
        return -1;
    }
    for (int c = 0; c < 3; c++) {
        for (int y = 0; y < h; y++) {
            const uint8_t *src = img->rgb + (size_t)y * w * 3 + c;
            for (int x = 0; x < w; x++) row[x] = src[(size_t)x * 3];
            resample_axis(row, w, 1, tmp + (size_t)y * ncol, nw, 1, x0, ncol);
        }
        for (int x = 0; x < ncol; x++) resample_axis(tmp + x, h, ncol, res + x, nh, ncol, y0, nrow);
        for (int y = 0; y < crop; y++)
            for (int x = 0; x < crop; x++) {
                int sy = y + top, sx = x + left;
                float v = sy >= y0 && sy < y1 && sx >= x0 && sx < x1
                              ? res[(size_t)(sy - y0) * ncol + (sx - x0)] : 0;
                /* PIL works on 8-bit pixels: round and clamp like it does */
                v = v < 0 ? 0 : v > 255 ? 255 : floorf(v + 0.5f);
                out[((size_t)c * crop + y) * crop + x] = (v / 255.0f - mean[c]) / sd[c];
            }
    }
    free(row);
    free(tmp);
    free(res);
    return 0;
}
