/* Image decoding and preprocessing: see image.h. */
#include "image.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

static int set_err(char *err, size_t n, const char *fmt, const char *a) {
    snprintf(err, n, fmt, a);
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

static int load_ppm(FILE *f, int kind, rn_image *img, char *err, size_t n) {
    long w, h, maxv;
    if (ppm_token(f, &w) || ppm_token(f, &h) || ppm_token(f, &maxv) || w < 1 || h < 1 ||
        maxv < 1 || maxv > 65535 || w * h > (1L << 28))
        return set_err(err, n, "corrupt PPM/PGM header%s", "");
    int ch = kind == 3 || kind == 6 ? 3 : 1, binary = kind >= 5, wide = maxv > 255;
    img->width = (int)w;
    img->height = (int)h;
    img->rgb = malloc((size_t)w * (size_t)h * 3);
    if (!img->rgb) return set_err(err, n, "out of memory%s", "");
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

static int load_png(const char *path, rn_image *img, char *err, size_t n) {
    png_image p;
    memset(&p, 0, sizeof p);
    p.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&p, path))
        return set_err(err, n, "corrupt PNG: %s", p.message);
    p.format = PNG_FORMAT_RGB; /* expands palette/gray, strips alpha (composited on black) */
    if ((uint64_t)p.width * p.height > (1u << 28)) {
        png_image_free(&p);
        return set_err(err, n, "PNG too large%s", "");
    }
    img->width = (int)p.width;
    img->height = (int)p.height;
    img->rgb = malloc(PNG_IMAGE_SIZE(p));
    if (!img->rgb) {
        png_image_free(&p);
        return set_err(err, n, "out of memory%s", "");
    }
    if (!png_image_finish_read(&p, NULL, img->rgb, 0, NULL)) {
        rn_image_free(img);
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

static void jpeg_quiet(j_common_ptr c, int level) { (void)c; (void)level; }

static int load_jpeg(FILE *f, rn_image *img, char *err, size_t n) {
    struct jpeg_decompress_struct c;
    jerr e;
    c.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = jpeg_fail;
    e.mgr.emit_message = jpeg_quiet; /* warnings would go to stderr */
    volatile uint8_t *buf = NULL;
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&c);
        free((void *)buf);
        img->rgb = NULL;
        return set_err(err, n, "corrupt JPEG: %s", e.msg);
    }
    jpeg_create_decompress(&c);
    jpeg_stdio_src(&c, f);
    jpeg_read_header(&c, TRUE);
    c.out_color_space = JCS_RGB; /* gray and YCbCr convert; CMYK fails below */
    jpeg_start_decompress(&c);
    if (c.output_components != 3 || (uint64_t)c.output_width * c.output_height > (1u << 28)) {
        jpeg_destroy_decompress(&c);
        return set_err(err, n, "unsupported JPEG (CMYK or too large)%s", "");
    }
    buf = malloc((size_t)c.output_width * c.output_height * 3);
    if (!buf) {
        jpeg_destroy_decompress(&c);
        return set_err(err, n, "out of memory%s", "");
    }
    while (c.output_scanline < c.output_height) {
        JSAMPROW row = (JSAMPROW)(buf + (size_t)c.output_scanline * c.output_width * 3);
        jpeg_read_scanlines(&c, &row, 1);
    }
    jpeg_finish_decompress(&c);
    img->width = (int)c.output_width;
    img->height = (int)c.output_height;
    img->rgb = (uint8_t *)buf;
    jpeg_destroy_decompress(&c);
    return 0;
}

int rn_image_load(const char *path, rn_image *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    FILE *f = fopen(path, "rb");
    if (!f) return set_err(err, errlen, "cannot open '%s'", path);
    unsigned char m[8] = {0};
    size_t got = fread(m, 1, sizeof m, f);
    rewind(f);
    int r;
    if (got >= 2 && m[0] == 0xFF && m[1] == 0xD8) r = load_jpeg(f, img, err, errlen);
    else if (got >= 8 && !memcmp(m, "\x89PNG\r\n\x1a\n", 8)) r = load_png(path, img, err, errlen);
    else if (got >= 2 && m[0] == 'P' && m[1] >= '2' && m[1] <= '6' && m[1] != '4') {
        fseek(f, 2, SEEK_SET);
        r = load_ppm(f, m[1] - '0', img, err, errlen);
    } else r = set_err(err, errlen, "unsupported image format (PNG, JPEG, PPM/PGM are)%s", "");
    fclose(f);
    return r;
}

void rn_image_free(rn_image *img) {
    free(img->rgb);
    img->rgb = NULL;
}

/* Resamples one axis with a triangle (bilinear) filter whose support grows
** with the shrink factor, as PIL's resize does (antialiasing). src has
** `in` samples at stride `ss`; writes `out` samples at stride `ds`. */
static void resample_axis(const float *src, int in, int ss, float *dst, int out, int ds) {
    double scale = (double)in / out, support = scale > 1 ? scale : 1.0;
    for (int i = 0; i < out; i++) {
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
        dst[(size_t)i * ds] = (float)(wsum > 0 ? acc / wsum : 0);
    }
}

void rn_preprocess(const rn_image *img, int resize, int crop, float *out) {
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    int w = img->width, h = img->height, nw, nh;
    if (w <= h) { nw = resize; nh = (int)((int64_t)resize * h / w); }
    else { nh = resize; nw = (int)((int64_t)resize * w / h); }
    float *plane = malloc((size_t)w * h * sizeof(float));
    float *tmp = malloc((size_t)nw * h * sizeof(float));
    float *res = malloc((size_t)nw * nh * sizeof(float));
    int top = (int)lround((nh - crop) / 2.0), left = (int)lround((nw - crop) / 2.0);
    for (int c = 0; c < 3; c++) {
        for (size_t i = 0; i < (size_t)w * h; i++) plane[i] = img->rgb[i * 3 + c];
        for (int y = 0; y < h; y++) resample_axis(plane + (size_t)y * w, w, 1, tmp + (size_t)y * nw, nw, 1);
        for (int x = 0; x < nw; x++) resample_axis(tmp + x, h, nw, res + x, nh, nw);
        for (int y = 0; y < crop; y++)
            for (int x = 0; x < crop; x++) {
                int sy = y + top, sx = x + left;
                float v = sy >= 0 && sy < nh && sx >= 0 && sx < nw ? res[(size_t)sy * nw + sx] : 0;
                /* PIL works on 8-bit pixels: round and clamp like it does */
                v = v < 0 ? 0 : v > 255 ? 255 : floorf(v + 0.5f);
                out[((size_t)c * crop + y) * crop + x] = (v / 255.0f - mean[c]) / sd[c];
            }
    }
    free(plane);
    free(tmp);
    free(res);
}
