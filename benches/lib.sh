# Shared by the benchmark scripts (benches/*.sh), which source it after `cd` to the repository
# root:  source benches/lib.sh
# Functions only: sourcing it sets no variable and runs nothing (a function may set the
# variables it names).

# The three binaries a load run needs (server, load generator, the CLI that generates requests),
# built in one cargo call; extra arguments go to cargo (--release, -j 2).
build_load_binaries() {
    cargo build "$@" -p enygma-server -p enygma-loadgen -p enygma-cli
}

# profile_binaries PROFILE: builds the load binaries of PROFILE (debug or release) unless
# BUILD=0, and sets SERVER_BIN, LOADGEN_BIN and ENYGMA_BIN to them (each kept if already set).
profile_binaries() {
    local profile=$1 bin
    [ "$profile" = debug ] || [ "$profile" = release ] || { echo "PROFILE is debug or release" >&2; exit 2; }
    if [ "${BUILD:-1}" = 1 ]; then
        if [ "$profile" = release ]; then build_load_binaries --release; else build_load_binaries; fi
    fi
    bin=${CARGO_TARGET_DIR:-target}/$profile
    SERVER_BIN=${SERVER_BIN:-$bin/enygma-server}
    LOADGEN_BIN=${LOADGEN_BIN:-$bin/enygma-loadgen}
    ENYGMA_BIN=${ENYGMA_BIN:-$bin/enygma}
}

# request_pool ENYGMA DIR SEED COUNT GEN_REQUEST_ARGS...
# Fills DIR with COUNT distinct requests from `ENYGMA gen-request GEN_REQUEST_ARGS` with SEED,
# unless DIR already holds files: the pool lives under target/ and is reused, because generating
# it takes longer than a short run, and one seed gives every run the same requests to compare.
request_pool() {
    local enygma=$1 dir=$2 seed=$3 count=$4
    shift 4
    if [ -z "$(ls -A "$dir" 2>/dev/null)" ]; then
        mkdir -p "$dir"
        "$enygma" gen-request "$@" --seed "$seed" --count "$count" --out "$dir"
    fi
}

# The CPU's model name, as lscpu gives it ("AMD EPYC 9R14 96-Core Processor").
cpu_model() {
    lscpu | sed -n 's/^Model name: *//p' | head -1
}

# cpu_slug MODEL: the model name as a results directory's machine part ("amd-epyc-9r14"): lower
# case, vendor marks, clock and core count dropped, at most three words.
cpu_slug() {
    echo "$1" | tr 'A-Z' 'a-z' \
        | sed -E 's/\(r\)|\(tm\)|cpu|@.*|[0-9]+-core.*|processor//g; s/[^a-z0-9]+/-/g; s/^-|-$//g' \
        | cut -d- -f1-3
}
