#!/usr/bin/env bash
# Fuzz every target in fuzz/ (docs/fuzzing.md), one after another.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS (default 600) is the fuzzing time per target; 0 replays the committed
# seeds (fuzz/seeds/TARGET) once and fuzzes nothing (a quick regression check).
# TARGETs default to every target of `cargo fuzz list`.
#
# Installs cargo-fuzz if it is missing (`cargo install cargo-fuzz --locked`).
# Uses the nightly toolchain when rustup has one, else the stable one with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz passes nightly-only -Z flags); set
# PJC_FUZZ_TOOLCHAIN=nightly|stable to choose. Idempotent: seeds are copied into
# the git-ignored working corpus fuzz/corpus/TARGET, which keeps growing across
# runs; logs go to fuzz/logs/TARGET.log.
#
# Environment: FUZZ_TIMEOUT (seconds per input, default 10), FUZZ_RSS_MB
# (default 2048), FUZZ_VERBOSE=1 (show libFuzzer's output, not just the log).
#
# Exit status: 0 when no target failed; 1 when a target crashed, timed out or
# ran out of memory (the artifact is named); 2 on a setup error.
set -euo pipefail

secs=${1:-600}
shift || true
case $secs in '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;; esac
timeout_s=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fuzz=$root/fuzz
cd "$root"

# --- toolchain ---------------------------------------------------------------
choice=${PJC_FUZZ_TOOLCHAIN:-}
if [ -z "$choice" ]; then
    if command -v rustup >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
        choice=nightly
    else
        choice=stable
    fi
fi
tc=()
case $choice in
    nightly) tc=(+nightly) ;;
    stable)
        export RUSTC_BOOTSTRAP=1
        if command -v rustup >/dev/null; then tc=(+stable); fi
        ;;
    *) echo "PJC_FUZZ_TOOLCHAIN must be nightly or stable, not '$choice'" >&2; exit 2 ;;
esac
cargo=(cargo "${tc[@]}")
echo "fuzz: toolchain: $(rustc "${tc[@]}" --version)${RUSTC_BOOTSTRAP:+ (with RUSTC_BOOTSTRAP=1)}"

# --- cargo-fuzz --------------------------------------------------------------
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: cargo-fuzz is missing; installing it (cargo install cargo-fuzz --locked, several minutes)"
    cargo install cargo-fuzz --locked
fi
echo "fuzz: $(cargo fuzz --version)"

# --- targets -----------------------------------------------------------------
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <("${cargo[@]}" fuzz list --fuzz-dir "$fuzz")
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets found in $fuzz/Cargo.toml" >&2; exit 2; }
echo "fuzz: targets: ${targets[*]}; ${secs}s each"

mkdir -p "$fuzz/logs"
failed=()
summary=()
for t in "${targets[@]}"; do
    seeds=$fuzz/seeds/$t
    # lex has no seeds of its own: it reads the front end's.
    [ -d "$seeds" ] || seeds=$fuzz/seeds/parse_verify
    corpus=$fuzz/corpus/$t
    mkdir -p "$corpus" "$fuzz/artifacts/$t"
    cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
    log=$fuzz/logs/$t.log
    if [ "$secs" = 0 ]; then
        # Replay the seeds only (not the working corpus): every seed runs once.
        args=("$seeds" -- -runs=0)
        echo "fuzz: $t: replaying $(ls "$seeds" | wc -l) seeds from ${seeds#$root/}"
    else
        args=("$corpus" -- -dict="$fuzz/pir.dict" -max_total_time="$secs")
        echo "fuzz: $t: fuzzing for ${secs}s, corpus ${corpus#$root/} ($(ls "$corpus" | wc -l) files), log ${log#$root/}"
    fi
    args+=(-timeout="$timeout_s" -rss_limit_mb="$rss_mb" -print_final_stats=1)
    set +e
    if [ "${FUZZ_VERBOSE:-0}" = 1 ]; then
        "${cargo[@]}" fuzz run --fuzz-dir "$fuzz" "$t" "${args[@]}" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
    else
        "${cargo[@]}" fuzz run --fuzz-dir "$fuzz" "$t" "${args[@]}" >"$log" 2>&1
        rc=$?
    fi
    set -e
    last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED|pulse|NEW|REDUCE)' "$log" | tail -n 1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([^ ]*\).*/cov \1, ft \2, corpus \3/p' <<<"$last")
    line="$t: executions ${execs:-?}, ${eps:-?} exec/s, ${cov:-no coverage line}"
    if [ "$rc" != 0 ]; then
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        cause=$(grep -m1 -E "panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|SUMMARY:" "$log" || true)
        line="$line -- FAILED (exit $rc): ${cause:-see the log}; artifact: ${artifact:-none}"
        failed+=("$t")
        echo "fuzz: !!! $t FAILED (exit $rc); log $log" >&2
        [ -n "$artifact" ] && echo "fuzz: !!! artifact: $artifact (reproduce: ${cargo[*]} fuzz run --fuzz-dir fuzz $t $artifact)" >&2
    fi
    echo "fuzz: $line"
    summary+=("$line")
done

echo
echo "fuzz: summary (${secs}s per target)"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (artifacts under fuzz/artifacts/, logs under fuzz/logs/)" >&2
    exit 1
fi
echo "fuzz: no failures"
