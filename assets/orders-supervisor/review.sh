#!/bin/sh
# The routine of `review` in the `orders` example. The first review of an order
# sends it back to `draft` with a note; the second approves it. The count of
# reviews lives in the routine's memory (one per token and state), which outlives
# each visit and each retry. A title that starts with "rush" is approved at once.
set -e
title=$(stateous ctx get title --raw)
reviews=$(stateous ctx memory get reviews 2>/dev/null || echo 0)
reviews=$((reviews + 1))
stateous ctx memory set reviews "$reviews"
case "$title" in
  rush*) approved=true ;;
  *) if [ "$reviews" -ge 2 ]; then approved=true; else approved=false; fi ;;
esac
if [ "$approved" = true ]; then
  stateous ctx emit reviewed '{"approved": true, "note": "looks good"}'
else
  stateous ctx note "review $reviews of '$title': needs more detail"
  stateous ctx emit reviewed '{"approved": false, "note": "add more detail"}'
fi
