#!/usr/bin/env bash
# Prints the path of a Python X.Y interpreter (the argument), for the matrix legs of `make test`:
# `pythonX.Y` on PATH when it runs, else pyenv's newest X.Y.* build. Exits 1 saying so when none.
set -u
want="$1"
if out=$("python$want" -c 'import sys; print(sys.executable)' 2>/dev/null); then echo "$out"; exit 0; fi
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for py in $(ls -d "$root"/versions/"$want".*/bin/python 2>/dev/null | sort -V -r); do
  if "$py" -c 'pass' 2>/dev/null; then echo "$py"; exit 0; fi
done
echo "no Python $want found (on PATH as python$want, or under $root/versions)" >&2
exit 1
