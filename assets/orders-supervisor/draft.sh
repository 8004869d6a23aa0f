#!/bin/sh
# The routine of `draft` in the `orders` example: write the order up, then submit
# it for review. The grant arrives as JSON on stdin; this routine needs only the
# context, which `stateous ctx get` reads.
set -e
title=$(stateous ctx get title --raw)
stateous ctx note "drafting '$title' (visit $STATEOUS_VISIT)"
stateous ctx emit submitted
