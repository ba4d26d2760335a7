#!/bin/sh
# The container's entry point. Runs its command (by default `make experiment`), then gives
# everything under $RESULTS to the owner of that folder. The command runs as root, which a
# rootful engine maps to root on the host, so without this the results on a volume would belong
# to root rather than to whoever made the folder and mounted it. (Under rootless podman both are
# the invoking user already and the change is a no-op.)
#
# A stop (`podman stop`, `docker stop`, Ctrl-C) is passed on to the command as SIGTERM, which
# the harness takes as an interruption: it stops its kernels and keeps the finished runs, and a
# second container on the same volume resumes. The hand-over happens in that case too.
set -u
results=${RESULTS:-/results}
mkdir -p "$results"

"$@" &
command_pid=$!
trap 'kill -TERM "$command_pid" 2>/dev/null' TERM INT HUP
# A trapped signal ends `wait` early; wait again until the command itself has ended.
status=0
while :; do
  wait "$command_pid"
  status=$?
  kill -0 "$command_pid" 2>/dev/null || break
done

owner=$(stat -c %u:%g "$results")
chown -R "$owner" "$results" || echo "entrypoint: could not give $results to $owner" >&2
exit "$status"
