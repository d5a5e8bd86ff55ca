#!/usr/bin/env bash
# The README's C example must compile against the public header alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp --suffix=.c)
trap 'rm -f "$tmp"' EXIT
awk '/^```c$/{f=1;next} /^```$/{f=0} f' README.md > "$tmp"
[ -s "$tmp" ] || { echo "readme_example: no C block in README.md"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -Iinclude "$tmp"
echo "ok: README example compiles ($(wc -l < "$tmp") lines)"
