#!/bin/sh
# nvidia-persistenced -- Kindling test stand-in, NOT NVIDIA's persistence daemon.
# Installed by the Kindling test-fixture driver userspace package (nvidia-driver on Debian,
# nvidia-driver-<branch> on Ubuntu; see tests/fixture_sources/build_fixtures.py) so that roles
# can enable and start nvidia-persistenced.service inside a GPU-less test container.
#
# It models persistence mode the way the real daemon sets it: on by default, off when started
# with --no-persistence-mode (the last of --persistence-mode / --no-persistence-mode wins). It
# writes "Enabled" or "Disabled" to $STATE_DIR/persistence-mode and its PID to
# $STATE_DIR/nvidia-persistenced.pid; the stand-in nvidia-smi reports Persistence Mode from that
# file. SIGTERM/SIGINT remove both files and end it cleanly. --user is accepted and ignored.
# KINDLING_FAKE_PERSISTENCED_DIR overrides the state directory (/run/nvidia-persistenced).
case "${1:-}" in
    --version|-v)
        echo "nvidia-persistenced:  version @DRIVER_VERSION@ (Kindling test stand-in)"
        exit 0 ;;
esac
STATE_DIR="${KINDLING_FAKE_PERSISTENCED_DIR:-/run/nvidia-persistenced}"
mode=Enabled
for arg in "$@"; do
    case "$arg" in
        --no-persistence-mode) mode=Disabled ;;
        --persistence-mode) mode=Enabled ;;
    esac
done
mkdir -p "$STATE_DIR"
echo "$mode" > "$STATE_DIR/persistence-mode"
echo "$$" > "$STATE_DIR/nvidia-persistenced.pid"
pid=
cleanup() {
    rm -f "$STATE_DIR/persistence-mode" "$STATE_DIR/nvidia-persistenced.pid"
}
trap 'echo "nvidia-persistenced: Kindling test stand-in stopping" >&2; cleanup; [ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 0' TERM INT
echo "nvidia-persistenced: Kindling test stand-in for driver @DRIVER_VERSION@ started, persistence mode $mode (args: $*)" >&2
while :; do
    sleep 3600 &
    pid=$!
    wait "$pid"
done
