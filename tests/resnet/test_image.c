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

    /* preprocessing a flat 300x200 image: every output is the normalized constant */
    rn_image fl = {300, 200, malloc(300 * 200 * 3)};
    for (int i = 0; i < 300 * 200; i++) fl.rgb[3 * i] = 10, fl.rgb[3 * i + 1] = 128, fl.rgb[3 * i + 2] = 250;
    float *out = malloc(3 * 224 * 224 * sizeof(float));
    rn_preprocess(&fl, 256, 224, out);
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
