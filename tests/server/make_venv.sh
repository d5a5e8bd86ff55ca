#!/usr/bin/env sh
# The test setup of m40-server's checks: a venv with the official openai
# client from PyPI, made once in the build directory (the tests run without
# it when there is no network: those checks are then reported as skipped).
#   make_venv.sh DIR    (M40_NO_NETWORK=1: make nothing)
dir=$1
[ -n "$dir" ] || { echo "usage: make_venv.sh DIR"; exit 2; }
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import openai" 2>/dev/null; then
    echo "venv: $dir has openai $("$dir/bin/python" -c 'import openai; print(openai.__version__)')"
    exit 0
fi
if [ "${M40_NO_NETWORK:-0}" = 1 ]; then
    echo "venv: M40_NO_NETWORK=1: the openai-client checks will be skipped"
    exit 0
fi
rm -rf "$dir"
if ! python3 -m venv "$dir" > "$dir.log" 2>&1; then
    echo "venv: python3 -m venv failed (Debian: python3-venv); the openai-client checks will be skipped"
    rm -rf "$dir"
    exit 0
fi
if ! timeout 240 "$dir/bin/pip" install -q --disable-pip-version-check "openai>=1,<3" >> "$dir.log" 2>&1; then
    echo "venv: pip install openai failed (no network to PyPI?); the openai-client checks will be skipped"
    tail -3 "$dir.log"
    rm -rf "$dir"
    exit 0
fi
echo "venv: $dir with openai $("$dir/bin/python" -c 'import openai; print(openai.__version__)')"
