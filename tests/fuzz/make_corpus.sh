#!/usr/bin/env bash
# Regenerates the committed seed corpora under tests/fuzz/corpus/<target>/:
# make_corpus.py for most, make_seeds_jpeg.c (needs cc and libjpeg-dev) for JPEGs.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
python3 "$HERE/make_corpus.py"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"${CC:-cc}" -O1 "$HERE/make_seeds_jpeg.c" -ljpeg -o "$TMP/make_seeds_jpeg"
"$TMP/make_seeds_jpeg" "$HERE/corpus/image"
ls "$HERE"/corpus/* | head -50
