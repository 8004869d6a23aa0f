#!/bin/sh
# The routine of `coding` in the `sdlc` example. A real one would run a coding
# agent in the checkout; this one shows the moves such a routine makes: it keeps
# the agent's session id in its memory (so a retry resumes the same session),
# writes each step as a note, and ends with `done`, or `stuck` when the checkout
# is missing.
set -e
repo=$(stateous ctx get repo --raw)
if [ ! -d "$repo" ]; then
  stateous ctx note "no checkout at $repo"
  stateous ctx emit stuck
  exit 0
fi
session=$(stateous ctx memory get session --raw 2>/dev/null || true)
if [ -z "$session" ]; then
  session="session-$STATEOUS_TOKEN-$STATEOUS_TASK"
  stateous ctx memory set session "\"$session\""
fi
stateous ctx note "coding in $repo with $session (attempt $STATEOUS_ATTEMPT)"
stateous ctx emit done
