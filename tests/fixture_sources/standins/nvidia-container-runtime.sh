#!/bin/sh
# nvidia-container-runtime -- Kindling test stand-in, NOT NVIDIA's OCI runtime.
# Installed by the Kindling test-fixture package nvidia-container-toolkit so that the
# runtime path written by nvidia-ctk exists. It cannot run containers.
if [ "${1:-}" = "--version" ]; then
    echo "NVIDIA Container Runtime version @VERSION@ (Kindling test stand-in)"
    exit 0
fi
echo "nvidia-container-runtime: Kindling test stand-in; it cannot run containers" >&2
exit 1
