#!/bin/sh
# Builds Jaeger (the OTLP backend of the test bed's `otlp` check, docs/testbed.md) from Go's
# module proxy into the test bed's cache, once: testbed/cache/tools/jaeger-VERSION/jaeger.
# The module list is pinned by testbed/tools/jaeger/go.mod and go.sum (a `tool` directive:
# `go get -tool github.com/jaegertracing/jaeger/cmd/jaeger@VERSION` wrote them).
# Idempotent: a binary that is already there is kept. About ten minutes of two cores the
# first time (testbed/results/README.md has the measured time); not part of `make test`.
set -eu
cd "$(dirname "$0")/.."
VERSION=v1.76.0
OUT=testbed/cache/tools/jaeger-$VERSION
if [ -x "$OUT/jaeger" ]; then
    echo "build-jaeger: $OUT/jaeger is there"
    exit 0
fi
GO=$(command -v go || true)
[ -n "$GO" ] || [ ! -x /usr/local/go/bin/go ] || GO=/usr/local/go/bin/go
if [ -z "$GO" ]; then
    echo "build-jaeger: no go command (Jaeger $VERSION needs Go 1.24.6 or newer; Debian 12's golang is older)" >&2
    exit 1
fi
mkdir -p "$OUT"
# The tool's module and its pinned sums; -trimpath keeps this machine's paths out of it.
(cd testbed/tools/jaeger && "$GO" build -trimpath -o "../../../$OUT/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
mv "$OUT/jaeger.tmp" "$OUT/jaeger"
echo "build-jaeger: built $OUT/jaeger ($("$GO" version))"
