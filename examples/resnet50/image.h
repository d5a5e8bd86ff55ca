/* Image decoding (PNG via libpng, JPEG via libjpeg, PPM/PGM built in) and
** the standard ImageNet preprocessing. */
#ifndef M40_EXAMPLE_IMAGE_H
#define M40_EXAMPLE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rn_image {
    int width, height;  /* RGB, 8 bits per channel, rows top to bottom */
    uint8_t *rgb;       /* width*height*3 bytes, malloc'd */
} rn_image;

/* Decodes by content (magic bytes), not by extension. Returns 0 on
** success; on failure -1 with a message in err ("unsupported format",
** "corrupt JPEG: ...", ...). Never exits. */
int rn_image_load(const char *path, rn_image *img, char *err, size_t errlen);
void rn_image_free(rn_image *img);

/* torchvision's eval transform: resize so the shorter side is `resize`
** (bilinear, antialiased when shrinking, as PIL), center-crop `crop`x`crop`,
** scale to [0,1], normalize with the ImageNet mean/std, CHW float into out
** (3*crop*crop floats). */
void rn_preprocess(const rn_image *img, int resize, int crop, float *out);

#endif
