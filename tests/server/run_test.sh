#!/usr/bin/env sh
# Runs test_server.py with the venv's Python when the setup made one.
#   run_test.sh VENV_DIR test_server.py args...
venv=$1; shift
py=python3
[ -x "$venv/bin/python" ] && py="$venv/bin/python"
exec "$py" "$@"
