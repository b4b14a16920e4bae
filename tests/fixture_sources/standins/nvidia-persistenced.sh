#!/bin/sh
# nvidia-persistenced -- Kindling test stand-in, NOT NVIDIA's persistence daemon.
# Installed by the Kindling test-fixture packages nvidia-driver-<branch> (see
# tests/fixture_sources/build_fixtures.py) so that roles can enable and start
# nvidia-persistenced.service inside a GPU-less test container. It only logs and
# waits; SIGTERM/SIGINT end it cleanly.
case "${1:-}" in
    --version|-v)
        echo "nvidia-persistenced:  version @DRIVER_VERSION@ (Kindling test stand-in)"
        exit 0 ;;
esac
pid=
trap 'echo "nvidia-persistenced: Kindling test stand-in stopping" >&2; [ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 0' TERM INT
echo "nvidia-persistenced: Kindling test stand-in for driver @DRIVER_VERSION@ started (args: $*)" >&2
while :; do
    sleep 3600 &
    pid=$!
    wait "$pid"
done
