/* The ResNet example's image reading: PPM, PNG (written here with libpng)
** and JPEG (written with libjpeg) decode to the right pixels; corrupt,
** truncated, empty and unsupported files give a message, not a crash; the
** preprocessing of a flat image gives the normalized constant. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>
#include <time.h>
#include <zlib.h>

static char dir[64];

static const char *path(const char *name) {
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *name, const void *b, size_t n) {
    FILE *f = fopen(path(name), "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static void expect_fail(const char *name, const char *needle);

/* Appends one PNG chunk (length, type, data, CRC) at p; returns the bytes written. */
static size_t png_chunk(unsigned char *p, const char *type, const unsigned char *d, uint32_t n) {
    p[0] = (unsigned char)(n >> 24), p[1] = (unsigned char)(n >> 16), p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
    memcpy(p + 4, type, 4);
    if (n) memcpy(p + 8, d, n);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), p + 4, n + 4);
    p[8 + n] = (unsigned char)(crc >> 24), p[9 + n] = (unsigned char)(crc >> 16);
    p[10 + n] = (unsigned char)(crc >> 8), p[11 + n] = (unsigned char)crc;
    return 12 + n;
}

/* Writes a w x h JPEG of noise (so the entropy data is long) with libjpeg. */
static void write_jpeg(const char *name, int w, int h, int cmyk) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    int comps = cmyk ? 4 : 3;
    unsigned char *px = malloc((size_t)w * h * comps);
    for (int i = 0; i < w * h * comps; i++) px[i] = (unsigned char)(i * 7919u >> 3 ^ i * 31u);
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    FILE *jf = fopen(path(name), "wb");
    jpeg_stdio_dest(&c, jf);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = comps;
    c.in_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < (JDIMENSION)h) {
        JSAMPROW row = px + (size_t)c.next_scanline * w * comps;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(jf);
    free(px);
}

static size_t read_file(const char *name, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path(name), "rb");
    size_t n = f ? fread(buf, 1, cap, f) : 0;
    if (f) fclose(f);
    return n;
}

/* Hostile headers (issue 15): huge declared sizes are refused from the
** header, before any allocation; truncated entropy data is an error. */
static void hostile(void) {
    rn_image img;
    char err[256];
    /* a 1,000,000 x 1 PNG: signature, IHDR, an empty IDAT, IEND (under 1 KB) */
    unsigned char png[256];
    size_t n = 8;
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    const unsigned char ihdr[13] = {0, 0x0F, 0x42, 0x40, 0, 0, 0, 1, 8, 2, 0, 0, 0};
    n += png_chunk(png + n, "IHDR", ihdr, 13);
    n += png_chunk(png + n, "IDAT", (const unsigned char *)"\x78\x9c\x03\x00\x00\x00\x00\x01", 8);
    n += png_chunk(png + n, "IEND", NULL, 0);
    write_bytes("wide.png", png, n);
    expect_fail("wide.png", "too large");
    CHECK(rn_image_load_memory(png, n, &img, err, sizeof err) == -1 && strstr(err, "too large"));
    /* 30000 x 30000 passes the side limit but not the pixel limit; 16384 x
    ** 16384 passes both, but 100 bytes cannot hold its rows */
    const unsigned char ihdr2[13] = {0, 0, 0x75, 0x30, 0, 0, 0x75, 0x30, 8, 2, 0, 0, 0};
    n = 8 + png_chunk(png + 8, "IHDR", ihdr2, 13);
    n += png_chunk(png + n, "IDAT", (const unsigned char *)"\x78\x9c\x03\x00\x00\x00\x00\x01", 8);
    n += png_chunk(png + n, "IEND", NULL, 0);
    write_bytes("huge.png", png, n);
    expect_fail("huge.png", "too large");
    const unsigned char ihdr3[13] = {0, 0, 0x40, 0, 0, 0, 0x40, 0, 8, 2, 0, 0, 0};
    n = 8 + png_chunk(png + 8, "IHDR", ihdr3, 13);
    n += png_chunk(png + n, "IDAT", (const unsigned char *)"\x78\x9c\x03\x00\x00\x00\x00\x01", 8);
    n += png_chunk(png + n, "IEND", NULL, 0);
    write_bytes("short.png", png, n);
    expect_fail("short.png", "too short");
    /* a 1,000,000 x 1 PGM with 1 KB of data */
    static char pgm[1100];
    int hl = snprintf(pgm, sizeof pgm, "P5\n1000000 1\n255\n");
    write_bytes("wide.pgm", pgm, (size_t)hl + 1024);
    expect_fail("wide.pgm", "too large");
    /* 1000 x 1000 is allowed, but 1 KB cannot hold it: refused before allocating */
    hl = snprintf(pgm, sizeof pgm, "P5\n1000 1000\n255\n");
    write_bytes("short.pgm", pgm, (size_t)hl + 1024);
    expect_fail("short.pgm", "truncated");
    hl = snprintf(pgm, sizeof pgm, "P2\n1000 1000\n255\n1 2 3\n");
    write_bytes("short.p2", pgm, (size_t)hl);
    expect_fail("short.p2", "truncated");
    hl = snprintf(pgm, sizeof pgm, "P6\n0 5\n255\n");
    write_bytes("zero.ppm", pgm, (size_t)hl);
    expect_fail("zero.ppm", "empty");

    /* a JPEG cut in its entropy data: libjpeg warns and pads; here it is an error */
    static unsigned char jb[1 << 16];
    write_jpeg("noise.jpg", 64, 64, 0);
    size_t jn = read_file("noise.jpg", jb, sizeof jb);
    CHECK(jn > 2000 && jn < sizeof jb);
    CHECK(rn_image_load(path("noise.jpg"), &img, err, sizeof err) == 0 && img.width == 64);
    rn_image_free(&img);
    write_bytes("noise_cut.jpg", jb, jn * 9 / 10);
    expect_fail("noise_cut.jpg", "Premature end");
    CHECK(rn_image_load_memory(jb, jn * 9 / 10, &img, err, sizeof err) == -1 && !img.rgb);
    /* the same JPEG declaring 65000 x 8 (its data is far too short) */
    size_t sof = 0;
    for (size_t i = 2; i + 9 < jn && !sof; i++)
        if (jb[i] == 0xFF && jb[i + 1] == 0xC0) sof = i;
    CHECK(sof > 0);
    jb[sof + 5] = 0, jb[sof + 6] = 8;       /* height */
    jb[sof + 7] = 0xFD, jb[sof + 8] = 0xE8; /* width 65000 */
    write_bytes("wide.jpg", jb, jn);
    expect_fail("wide.jpg", "too large");
    /* 32000 x 8 passes the size limit but its data ends early: still refused */
    jb[sof + 7] = 0x7D, jb[sof + 8] = 0x00;
    write_bytes("wide2.jpg", jb, jn);
    expect_fail("wide2.jpg", "JPEG");
    /* CMYK: named as such, not as corrupt */
    write_jpeg("cmyk.jpg", 16, 16, 1);
    expect_fail("cmyk.jpg", "CMYK");

    /* loading from memory gives the same pixels as from the file */
    write_jpeg("mem.jpg", 24, 16, 0);
    jn = read_file("mem.jpg", jb, sizeof jb);
    rn_image a, b;
    CHECK(rn_image_load(path("mem.jpg"), &a, err, sizeof err) == 0);
    CHECK(rn_image_load_memory(jb, jn, &b, err, sizeof err) == 0);
    CHECK(a.rgb && b.rgb && a.width == b.width && a.height == b.height &&
          memcmp(a.rgb, b.rgb, (size_t)a.width * a.height * 3) == 0);
    rn_image_free(&a);
    rn_image_free(&b);
    rn_image_free(&b); /* twice is fine */
    CHECK(rn_image_load_memory(NULL, 0, &img, err, sizeof err) == -1 && strstr(err, "empty"));

    /* preprocessing: a 1,000,000 x 1 image is refused; a 32768 x 1 one (resized
    ** to 8388608 x 256 before the crop) takes little memory and time */
    float *out = malloc(3 * 224 * 224 * sizeof(float));
    rn_image big = {1000000, 1, malloc(3000000)};
    memset(big.rgb, 7, 3000000);
    CHECK(rn_preprocess(&big, 256, 224, out) == -1);
    big.width = 32768;
    clock_t t0 = clock();
    CHECK(rn_preprocess(&big, 256, 224, out) == 0);
    double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("preprocess 32768x1: %.3f s\n", sec);
    CHECK(sec < 2.0);
    CHECK(rn_preprocess(&big, 0, 224, out) == -1 && rn_preprocess(&big, 256, 5000, out) == -1);
    free(big.rgb);
    free(out);
}

static void expect_fail(const char *name, const char *needle) {
    rn_image img;
    char err[256] = "";
    int r = rn_image_load(path(name), &img, err, sizeof err);
    printf("%-16s -> %s\n", name, r ? err : "decoded (unexpected)");
    CHECK(r == -1 && img.rgb == NULL);
    CHECK(strstr(err, needle) != NULL);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/m40_img_%d", (int)getpid());
    char cmd[96];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0) return 1;
    enum { W = 5, H = 4 };
    unsigned char px[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) px[i] = (unsigned char)(i * 37 % 256);

    /* PPM P6 */
    char hdr[32];
    int hl = snprintf(hdr, sizeof hdr, "P6\n# c\n%d %d\n255\n", W, H);
    unsigned char ppm[64 + W * H * 3];
    memcpy(ppm, hdr, (size_t)hl);
    memcpy(ppm + hl, px, sizeof px);
    write_bytes("a.ppm", ppm, (size_t)hl + sizeof px);
    rn_image img;
    char err[256];
    CHECK(rn_image_load(path("a.ppm"), &img, err, sizeof err) == 0);
    CHECK(img.width == W && img.height == H && img.rgb && memcmp(img.rgb, px, sizeof px) == 0);
    rn_image_free(&img);
    write_bytes("short.ppm", ppm, (size_t)hl + 7);
    expect_fail("short.ppm", "truncated");

    /* PNG through libpng's writer */
    png_image pw;
    memset(&pw, 0, sizeof pw);
    pw.version = PNG_IMAGE_VERSION;
    pw.width = W;
    pw.height = H;
    pw.format = PNG_FORMAT_RGB;
    CHECK(png_image_write_to_file(&pw, path("a.png"), 0, px, 0, NULL));
    CHECK(rn_image_load(path("a.png"), &img, err, sizeof err) == 0);
    CHECK(img.width == W && img.height == H && img.rgb && memcmp(img.rgb, px, sizeof px) == 0);
    rn_image_free(&img);
    FILE *f = fopen(path("a.png"), "rb");
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes("cut.png", buf, n / 2);
    expect_fail("cut.png", "PNG");

    /* JPEG through libjpeg's compressor: a flat 16x16 colour survives to +-2 */
    unsigned char flat[16 * 16 * 3];
    for (int i = 0; i < 16 * 16; i++) flat[3 * i] = 200, flat[3 * i + 1] = 60, flat[3 * i + 2] = 30;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    FILE *jf = fopen(path("a.jpg"), "wb");
    jpeg_stdio_dest(&c, jf);
    c.image_width = 16;
    c.image_height = 16;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 100, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < 16) {
        JSAMPROW row = flat + c.next_scanline * 16 * 3;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(jf);
    CHECK(rn_image_load(path("a.jpg"), &img, err, sizeof err) == 0);
    int worst = 0;
    for (int i = 0; img.rgb && i < 16 * 16 * 3; i++) {
        int d = abs((int)img.rgb[i] - (int)flat[i]);
        worst = d > worst ? d : worst;
    }
    CHECK(img.width == 16 && img.height == 16 && worst <= 2);
    printf("jpeg: max pixel error %d\n", worst);
    rn_image_free(&img);
    f = fopen(path("a.jpg"), "rb");
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes("cut.jpg", buf, n / 3);
    expect_fail("cut.jpg", "JPEG");
    write_bytes("junk.jpg", "\xff\xd8\xff\xe0 not really a jpeg", 24);
    expect_fail("junk.jpg", "JPEG");
    write_bytes("a.gif", "GIF89a\x01\x00\x01\x00", 10);
    expect_fail("a.gif", "unsupported");
    write_bytes("empty.png", "", 0);
    expect_fail("empty.png", "unsupported");
    expect_fail("missing.png", "cannot open");

    hostile();

    /* preprocessing a flat 300x200 image: every output is the normalized constant */
    rn_image fl = {300, 200, malloc(300 * 200 * 3)};
    for (int i = 0; i < 300 * 200; i++) fl.rgb[3 * i] = 10, fl.rgb[3 * i + 1] = 128, fl.rgb[3 * i + 2] = 250;
    float *out = malloc(3 * 224 * 224 * sizeof(float));
    CHECK(rn_preprocess(&fl, 256, 224, out) == 0);
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    static const float v[3] = {10, 128, 250};
    int bad = 0;
    for (int ch = 0; ch < 3; ch++)
        for (int i = 0; i < 224 * 224; i++)
            bad += fabsf(out[ch * 224 * 224 + i] - (v[ch] / 255.0f - mean[ch]) / sd[ch]) > 1e-6f;
    CHECK(bad == 0);
    free(out);
    free(fl.rgb);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return m40t_finish("test_image");
}
