# Sourced by the install tests: the README's code blocks, exactly as a reader copies them. A block is fenced by
#   <!-- readme-test: NAME -->  ```lang ... ```  <!-- /readme-test -->
# in README.md, so the README shows nothing test-specific and the tests run nothing the README does not show.

# readme_block README NAME: prints the block's lines (without the fences); fails when there is no such block.
readme_block() {
  local text
  text=$(awk -v name="$2" '
    $0 == "<!-- readme-test: " name " -->" { on = 1; next }
    on && /^<!-- \/readme-test -->/ { exit }
    on && /^```/ { next }
    on { print }' "$1")
  if [ -z "$text" ]; then
    echo "FAIL: $1 has no block marked <!-- readme-test: $2 -->" >&2
    return 1
  fi
  printf '%s\n' "$text"
}

# run_block README NAME: runs a shell block in the current shell (its exports stay), echoing it first.
run_block() {
  local code
  code=$(readme_block "$1" "$2") || return 1
  printf '+ %s\n' "$code" >&2
  eval "$code"
}

# expect_example_output OUTPUT RANKS: the C example printed the mean of 0..RANKS-1 on every rank, once each.
expect_example_output() {
  local output=$1 ranks=$2 rank mean
  mean=$(awk -v n="$ranks" 'BEGIN { printf "%g", (n - 1) / 2 }')
  for ((rank = 0; rank < ranks; rank++)); do
    if [ "$(grep -c "rank $rank of $ranks: mean rank = $mean\$" <<<"$output")" != 1 ]; then
      printf 'FAIL: expected "rank %s of %s: mean rank = %s" once in:\n%s\n' "$rank" "$ranks" "$mean" "$output" >&2
      return 1
    fi
  done
}
