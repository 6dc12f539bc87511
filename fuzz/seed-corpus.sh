#!/bin/sh
# Copies the built .sos files (and each of their records as a plain ELF)
# into the fuzz corpus. Run `cargo xtask build-plugins` first.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/fuzz/corpus/validate"
mkdir -p "$corpus"
found=0
for sos in $(find "$root/target/plugins" -name '*.sos'); do
    cp "$sos" "$corpus/"
    found=1
done
for elf in "$root"/target/sos-build/*.so; do
    [ -e "$elf" ] && cp "$elf" "$corpus/"
done
if [ "$found" = 0 ]; then
    echo "no .sos files under target/plugins: run \`cargo xtask build-plugins\` first" >&2
    exit 1
fi
ls -l "$corpus"
