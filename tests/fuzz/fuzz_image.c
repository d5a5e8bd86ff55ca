/* libFuzzer target: the ResNet example's image loader (PNG via libpng, JPEG
** via libjpeg, PPM/PGM built in; examples/resnet50/image.c), from memory.
** A decoded image must have sane dimensions and go through the ImageNet
** preprocessing; a refused one must say why and hold no pixels. run_fuzz.sh
** builds image.c with a lower pixel cap (RN_IMAGE_MAX_PIXELS) so that a
** decodable 16K x 16K image does not slow every run; the checks are the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rn_image img;
    char err[256] = "";
    if (rn_image_load_memory(data, size, &img, err, sizeof err) != 0) {
        if (img.rgb || !err[0]) abort();
        return 0;
    }
    if (!img.rgb || img.width < 1 || img.height < 1 || img.width > RN_IMAGE_MAX_SIDE ||
        img.height > RN_IMAGE_MAX_SIDE || (uint64_t)img.width * (uint64_t)img.height > RN_IMAGE_MAX_PIXELS)
        abort();
    volatile uint8_t sink = img.rgb[(size_t)img.width * img.height * 3 - 1]; /* the whole buffer is there */
    (void)sink;
    float out[3 * 8 * 8];
    int resize = 8 + (int)(size % 8), crop = 8;
    if (rn_preprocess(&img, resize, crop, out) != 0) abort();
    for (int i = 0; i < 3 * 8 * 8; i++)
        if (!(out[i] > -3.0f && out[i] < 3.0f)) abort(); /* normalized 8-bit values */
    rn_image_free(&img);
    return 0;
}
