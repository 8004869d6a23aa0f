#!/bin/sh
# The routine of `testing` in `stateous demo`. A slow ticket's tests hang until
# the state's timeout (5 s) fails the token; a failing ticket's first tests fail,
# which sends it back to coding; the others pass.
slow=$(stateous ctx get slow --raw 2>/dev/null || echo false)
failing=$(stateous ctx get failing --raw 2>/dev/null || echo false)
if [ "$slow" = "true" ]; then
  stateous ctx note "the tests hang"
  sleep 60
fi
sleep 1
if [ "$failing" = "true" ] && [ "$STATEOUS_VISIT" = "1" ]; then
  stateous ctx emit failed '{"passed": 2, "failed": 1}'
else
  stateous ctx emit passed '{"passed": 3, "failed": 0}'
fi
