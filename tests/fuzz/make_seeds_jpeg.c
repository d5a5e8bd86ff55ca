/* Writes the JPEG seeds of the image fuzz target with libjpeg: baseline RGB,
** grayscale, progressive, restart markers, CMYK. Run by make_corpus.sh.
**   make_seeds_jpeg DIR */
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

static void write_one(const char *dir, const char *name, int w, int h, J_COLOR_SPACE cs, int comps,
                      int progressive, int restart) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) exit(1);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = comps;
    c.in_color_space = cs;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 50, TRUE);
    if (progressive) jpeg_simple_progression(&c);
    c.restart_interval = (unsigned)restart;
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = malloc((size_t)w * comps);
    while (c.next_scanline < (JDIMENSION)h) {
        for (int i = 0; i < w * comps; i++) row[i] = (unsigned char)(i * 13 + c.next_scanline * 29);
        JSAMPROW rp = row;
        jpeg_write_scanlines(&c, &rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    write_one(argv[1], "rgb8x8.jpg", 8, 8, JCS_RGB, 3, 0, 0);
    write_one(argv[1], "gray8x8.jpg", 8, 8, JCS_GRAYSCALE, 1, 0, 0);
    write_one(argv[1], "prog16x16.jpg", 16, 16, JCS_RGB, 3, 1, 0);
    write_one(argv[1], "restart24x16.jpg", 24, 16, JCS_RGB, 3, 0, 1);
    write_one(argv[1], "cmyk8x8.jpg", 8, 8, JCS_CMYK, 4, 0, 0);
    return 0;
}
