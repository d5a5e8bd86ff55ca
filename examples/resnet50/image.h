/* Image decoding (PNG via libpng, JPEG via libjpeg, PPM/PGM built in) and
** the standard ImageNet preprocessing.
**
** Hostile files. Decoding reads untrusted bytes, so it is bounded: an image
** wider or taller than RN_IMAGE_MAX_SIDE, or with more than
** RN_IMAGE_MAX_PIXELS pixels, is refused from its header before any pixel
** memory is allocated (at the limit the RGB buffer is 768 MiB); a PPM/PGM
** whose file is too short for the pixels it declares is refused before
** allocating, and so is a PNG too short for its rows even at deflate's
** best ratio (~1032:1); a progressive JPEG may have at most RN_IMAGE_MAX_JPEG_SCANS
** scans, so work stays proportional to the pixel count; libjpeg's
** corrupt-data and premature-end warnings are errors (a truncated JPEG is
** refused, not padded with grey). Every allocation is checked. */
#ifndef M40_EXAMPLE_IMAGE_H
#define M40_EXAMPLE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifndef RN_IMAGE_MAX_SIDE
#define RN_IMAGE_MAX_SIDE 32768
#endif
#ifndef RN_IMAGE_MAX_PIXELS
#define RN_IMAGE_MAX_PIXELS (1u << 28)
#endif
#define RN_IMAGE_MAX_JPEG_SCANS 100

typedef struct rn_image {
    int width, height;  /* RGB, 8 bits per channel, rows top to bottom */
    uint8_t *rgb;       /* width*height*3 bytes, malloc'd */
} rn_image;

/* Decodes by content (magic bytes), not by extension. Returns 0 on
** success; on failure -1 with a message in err ("unsupported format",
** "corrupt JPEG: ...", "image too large: ...", ...) and img->rgb NULL.
** Never exits. */
int rn_image_load(const char *path, rn_image *img, char *err, size_t errlen);
/* The same from `size` bytes in memory (the bytes are not kept). */
int rn_image_load_memory(const void *data, size_t size, rn_image *img, char *err, size_t errlen);
/* Frees img->rgb and sets it NULL; safe to call twice. */
void rn_image_free(rn_image *img);

/* torchvision's eval transform: resize so the shorter side is `resize`
** (bilinear, antialiased when shrinking, as PIL), center-crop `crop`x`crop`,
** scale to [0,1], normalize with the ImageNet mean/std, CHW float into out
** (3*crop*crop floats). Only the cropped part of the resized image is
** computed, so memory is O(height * crop) and time linear in the pixels.
** Returns 0, or -1 (out untouched) for an invalid image, resize or crop
** outside [1, 4096], or out of memory. */
int rn_preprocess(const rn_image *img, int resize, int crop, float *out);

#endif
