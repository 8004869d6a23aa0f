#!/bin/sh
# The routine of `testing` in the `sdlc` example: run each executable `test_*`
# file of the checkout, count the ones that pass and fail, and emit `passed` or
# `failed` with the counts. A missing checkout fails the attempt (exit 1), and the
# reason, this script's last lines of stderr, goes into the token's history.
repo=$(stateous ctx get repo --raw) || exit 1
if [ ! -d "$repo" ]; then
  echo "no checkout at $repo" >&2
  exit 1
fi
passed=0
failed=0
for test in "$repo"/test_*; do
  [ -x "$test" ] || continue
  if (cd "$repo" && "./$(basename "$test")") >/dev/null 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    stateous ctx note "failed: $(basename "$test")"
  fi
done
counts="{\"passed\": $passed, \"failed\": $failed}"
if [ "$failed" -eq 0 ]; then
  stateous ctx emit passed "$counts"
else
  stateous ctx emit failed "$counts"
fi
