#!/bin/sh
# The routine of `coding` in `stateous demo`: a second of "work", written as a
# note. A ticket marked flaky fails its first attempt (exit 1): the control plane
# queues the task again, and the second attempt succeeds.
flaky=$(stateous ctx get flaky --raw 2>/dev/null || echo false)
stateous ctx note "coding, attempt $STATEOUS_ATTEMPT"
sleep 1
if [ "$flaky" = "true" ] && [ "$STATEOUS_ATTEMPT" = "1" ]; then
  echo "the build broke: a flaky failure" >&2
  exit 1
fi
stateous ctx emit done
