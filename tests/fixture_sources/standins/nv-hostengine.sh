#!/bin/sh
# nv-hostengine -- Kindling test stand-in, NOT NVIDIA's DCGM host engine.
# Installed by the Kindling test-fixture package datacenter-gpu-manager (see
# tests/fixture_sources/build_fixtures.py). It writes its pid file (which the
# stand-in dcgmi checks) and waits. Without -n it detaches like the real engine;
# -t/--term stops a running one. SIGTERM/SIGINT end it cleanly.
PIDFILE="${KINDLING_FAKE_DCGM_PIDFILE:-/run/nvhostengine.pid}"
foreground=no
for arg in "$@"; do
    case "$arg" in
        --version|-v)
            echo "nv-hostengine version @VERSION@ (Kindling test stand-in)"; exit 0 ;;
        -t|--term)
            if [ -f "$PIDFILE" ]; then kill "$(cat "$PIDFILE")" 2>/dev/null; rm -f "$PIDFILE"; fi
            echo "Host engine successfully terminated."; exit 0 ;;
        -n|--no-daemon) foreground=yes ;;
    esac
done
if [ "$foreground" = no ]; then
    setsid "$0" -n "$@" </dev/null >/dev/null 2>&1 &
    echo "Started host engine version @VERSION@ using port number: 5555 (Kindling test stand-in)"
    exit 0
fi
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$PIDFILE"; exit 0' TERM INT
echo $$ > "$PIDFILE"
echo "nv-hostengine: Kindling test stand-in started (args: $*)" >&2
while :; do
    sleep 3600 &
    pid=$!
    wait "$pid"
done
