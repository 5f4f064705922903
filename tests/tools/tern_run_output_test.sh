#!/usr/bin/env bash
# tern-run tags each line with its rank, keeps stdout and stderr apart and never mixes partial lines of two ranks.
# Rank command lines are single-quoted on purpose: the rank's shell expands $TERN_*, not this one.
# shellcheck disable=SC2016
# shellcheck source=tern_run_lib.sh
source "$(dirname "$0")/tern_run_lib.sh"

run_tern -n 3 sh -c 'echo out$TERN_RANK; echo err$TERN_RANK >&2'
expect_eq "$RC" 0 "exit code"
expect_eq "$(sort <<<"$OUT")" $'[0] out0\n[1] out1\n[2] out2' "tagged stdout"
expect_eq "$(sort <<<"$ERR")" $'[0] err0\n[1] err1\n[2] err2' "tagged stderr"

# The rank number is padded to the width of the largest rank.
run_tern -n 11 sh -c 'echo x'
expect_eq "$(sort <<<"$OUT" | head -2)" $'[ 0] x\n[ 1] x' "padded tag"
expect_match "$OUT" $'(^|\n)\\[10\\] x' "two-digit tag"

# Lines are written whole even when a rank writes them in pieces while another rank writes too.
run_tern -n 2 sh -c 'printf "a$TERN_RANK"; sleep 0.2; printf "b$TERN_RANK\n"'
expect_eq "$(sort <<<"$OUT")" $'[0] a0b0\n[1] a1b1' "lines written in pieces"

# A last line without a newline is still printed, tagged and terminated.
"$TERN_RUN" -n 1 printf abc >"$WORK/raw"
expect_eq "$(od -An -c "$WORK/raw" | tr -s ' ')" " [ 0 ] a b c \n" "unterminated last line"

# Without tagging, output passes through byte for byte.
"$TERN_RUN" -n 1 --no-tag-output printf abc >"$WORK/raw"
expect_eq "$(od -An -c "$WORK/raw" | tr -s ' ')" " a b c" "--no-tag-output"

# Lots of output: nothing lost, nothing reordered within a rank.
run_tern -n 2 seq 50000
expect_eq "$(grep -c '^\[0\] ' <<<"$OUT")" 50000 "rank 0 line count"
expect_eq "$(grep '^\[1\] ' <<<"$OUT" | cut -c5- | sha1sum)" "$(seq 50000 | sha1sum)" "rank 1 content"

echo PASS
