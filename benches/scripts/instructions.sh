#!/bin/sh
# Instructions per operation of benchmark rows (2), (3), (5), (8), (12) and
# (13), counted by callgrind: each case's loop run N and 0 times, the
# difference divided by N (the set-up cancels out). Build first:
#   cargo build --release -p xplug-benches --example instr_loop --example resolve_loop
# Prints one `row case instructions` line per case. Row (13) counts only
# inside the profile's wrapper (`--toggle-collect`, the callee included):
# the profiler's clock calibration at set-up varies from run to run, which
# the whole-program difference would pick up.
set -euf
n=${N:-10000}
examples=${EXAMPLES:-target/release/examples}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # binary args... -> total instructions (inside $COLLECT when set)
    valgrind --tool=callgrind ${COLLECT:+--toggle-collect="$COLLECT"} --callgrind-out-file="$out/cg" "$@" >/dev/null 2>"$out/log" || {
        cat "$out/log" >&2
        exit 1
    }
    sed -n 's/^summary: //p' "$out/cg"
}
per() { # row case binary args-before-N...
    row=$1 case=$2
    shift 2
    many=$(count "$@" "$n")
    none=$(count "$@" 0)
    echo "$row $case $(( (many - none + n / 2) / n ))"
}
for case in manager_1 manager_8; do per 2 "$case" "$examples/instr_loop" "$case"; done
for case in call_handle call_typed; do per 3 "$case" "$examples/instr_loop" "$case"; done
for case in anchor_c_plugin anchor_3_plugins anchor_sdk_1 anchor_sdk_4; do
    per 5 "$case" "$examples/instr_loop" "$case"
done
for side in xplug fresh; do
    for case in c_plugin sdk_1 sdk_4; do per 8 "$side/$case" "$examples/resolve_loop" "$side" "$case"; done
done
for case in plain_scale swap_scale; do per 12 "$case" "$examples/instr_loop" "$case"; done
COLLECT='*profiled_call*' per 13 profiled_call "$examples/instr_loop" profiled_call
