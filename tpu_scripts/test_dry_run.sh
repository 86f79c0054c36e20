#!/usr/bin/env bash
# Self-test for tpu_scripts/: runs every script against a stub `gcloud` that records
# its arguments, and checks the recorded commands. Needs no Google Cloud access.
#
#  1. Each script in --dry-run mode: it prints its gcloud commands and calls nothing.
#  2. The same invocation without --dry-run, against the stub: the argv gcloud gets
#     (zone, project, names, --worker=all) is what the dry run printed.
#  3. The scripts that setup_workers.sh and launch.sh send to the workers (--command)
#     are run here, in a sandbox home with fake curl/uv/python, to check that the
#     code is unpacked, the right jax[tpu] is installed, and the trainer receives
#     exactly the overrides given to launch.sh, however they are quoted.
#  4. slurm_launch.sh the same way against a stub `sbatch`; then the job script it
#     writes runs here under a fake SLURM environment, with a stub `srun` (which runs
#     each task in turn with the variables srun sets) and a fake venv python, to check
#     the shared-workdir check and that every process gets exactly the overrides.
#
# Usage: bash tpu_scripts/test_dry_run.sh      (Linux, bash >= 4, GNU coreutils/sed)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/.." && pwd)"
TMP="$(mktemp -d)"
STARTED_PIDS=()

cleanup() {
  local pid
  for pid in ${STARTED_PIDS[@]+"${STARTED_PIDS[@]}"}; do
    kill "$pid" 2>/dev/null || true
  done
  if [ -d "$TMP/tmux" ] && command -v tmux >/dev/null 2>&1; then
    TMUX_TMPDIR="$TMP/tmux" tmux kill-server 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# A clean environment: none of the variables the scripts read may leak in.
unset TPU_NAME ZONE PROJECT_ID ACCELERATOR_TYPE RUNTIME_VERSION CLOUDSDK_COMPUTE_ZONE GCLOUD \
  JAXCL_REMOTE_DIR JAXCL_REMOTE_VENV JAXCL_REMOTE_LOGS JAXCL_PYTHON_VERSION TMUX VIRTUAL_ENV
unset "${!SLURM_@}" "${!SBATCH_@}" "${!SRUN_@}" JAX_COORDINATOR_ADDRESS JAX_NUM_PROCESSES \
  JAX_PROCESS_ID JAX_LOCAL_DEVICE_IDS
export USER=tester
export SSH_AUTH_SOCK="$TMP/no-agent"

# --- the stub gcloud ----------------------------------------------------------------
mkdir -p "$TMP/bin" "$TMP/calls"
cat >"$TMP/bin/gcloud" <<'EOF'
#!/usr/bin/env bash
# Stub gcloud: saves its argv (NUL-separated) as calls/call-N, copies the local files
# an scp would upload, and succeeds.
set -euo pipefail
dir="${GCLOUD_STUB_DIR:?}"
n=1
while [ -e "$dir/call-$n" ]; do n=$((n + 1)); done
printf '%s\0' "$@" >"$dir/call-$n"
if [ "${4:-}" = scp ]; then
  for arg in "$@"; do
    if [ -f "$arg" ]; then cp "$arg" "$dir/scp-$n-$(basename "$arg")"; fi
  done
fi
echo "gcloud stub: recorded call $n" >&2
EOF
chmod +x "$TMP/bin/gcloud"
cat >"$TMP/bin/sbatch" <<'EOF'
#!/usr/bin/env bash
# Stub sbatch: saves its argv like the stub gcloud (calls/call-N), keeps a copy of the
# job script it was given (calls/script-N), and answers as 'sbatch --parsable' does.
set -euo pipefail
dir="${GCLOUD_STUB_DIR:?}"
n=1
while [ -e "$dir/call-$n" ]; do n=$((n + 1)); done
printf '%s\0' "$@" >"$dir/call-$n"
if [ -f "${!#}" ]; then cp "${!#}" "$dir/script-$n"; fi
echo "4242;cluster1"
EOF
chmod +x "$TMP/bin/sbatch"
export GCLOUD_STUB_DIR="$TMP/calls"
export PATH="$TMP/bin:$PATH"
if [ "$(command -v gcloud)" != "$TMP/bin/gcloud" ]; then
  echo "test_dry_run: the stub gcloud is not first on PATH; refusing to go on" >&2
  exit 1
fi

# --- assertions -----------------------------------------------------------------------
PASSED=0
FAILED=0
pass() {
  PASSED=$((PASSED + 1))
  printf 'ok    %s\n' "$1"
}
fail() {
  FAILED=$((FAILED + 1))
  printf 'FAIL  %s\n' "$1"
  shift
  local line
  for line in "$@"; do printf '        %s\n' "$line"; done
}
check_eq() { # NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected: $(printf '%q' "$2")" "actual:   $(printf '%q' "$3")"; fi
}
check_contains() { # NAME HAYSTACK NEEDLE
  if [[ "$2" == *"$3"* ]]; then pass "$1"; else fail "$1" "missing: $(printf '%q' "$3")" "in: $(printf '%q' "$2" | head -c 2000)"; fi
}
check_lacks() { # NAME HAYSTACK NEEDLE
  if [[ "$2" != *"$3"* ]]; then pass "$1"; else fail "$1" "unexpected: $(printf '%q' "$3")"; fi
}

# capture CMD...: runs CMD, setting OUT, ERR and RC.
capture() {
  set +e
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  set -e
  OUT="$(cat "$TMP/out")"
  ERR="$(cat "$TMP/err")"
}
reset_calls() { rm -f "$TMP/calls"/*; }
count_calls() { find "$TMP/calls" -name 'call-*' | wc -l | tr -d ' '; }
# load_argv FILE: reads a NUL-separated argv file into ARGV.
load_argv() {
  ARGV=()
  local word
  if [ ! -f "$1" ]; then
    ARGV=("<no file $1>")
    return 0
  fi
  while IFS= read -r -d '' word; do ARGV+=("$word"); done <"$1"
}
check_argv() { # NAME FILE EXPECTED...
  local name="$1" file="$2"
  shift 2
  load_argv "$file"
  if [ "${#ARGV[@]}" -eq "$#" ] && [ "$(printf '%s\0' "${ARGV[@]}" | od -An -c)" = "$(printf '%s\0' "$@" | od -An -c)" ]; then
    pass "$name"
  else
    fail "$name" "expected:$(printf ' %q' "$@")" "actual:  $(printf ' %q' "${ARGV[@]}")"
  fi
}
# arg_value PREFIX: the rest of the first ARGV word that starts with PREFIX.
arg_value() {
  local word
  for word in "${ARGV[@]}"; do
    if [[ "$word" == "$1"* ]]; then
      printf '%s' "${word#"$1"}"
      return 0
    fi
  done
  printf '<no %s argument>' "$1"
}
# Replace what legitimately differs between two runs: the launch time stamp and the
# temporary directory holding the tarball.
normalize() { sed -z -E 's/[0-9]{8}T[0-9]{6}Z/STAMP/g; s#^.*/(jaxcl-src-)#\1#'; }
# dry_line_to_file LINE FILE: saves the argv that bash reads from a printed
# '+ gcloud ...' line, less the word gcloud (the stub's argv starts after it).
dry_line_to_file() {
  local file="$2"
  eval "set -- ${1#+ }"
  shift
  printf '%s\0' "$@" >"$file"
}
# dry_vs_real NAME SCRIPT ARGS...: runs SCRIPT --dry-run ARGS, which must call nothing,
# then SCRIPT ARGS against the stub; the gcloud lines the dry run printed, read back
# by bash, must equal the argv the stub recorded. DRY_TOOL names the stubbed command
# (gcloud, or sbatch for slurm_launch.sh).
DRY_TOOL=gcloud
dry_vs_real() {
  local name="$1" i=0 n ok=1 line printed
  shift
  reset_calls
  capture "$1" --dry-run "${@:2}"
  if [ "$RC" -ne 0 ] || [ "$(count_calls)" -ne 0 ]; then
    fail "$name: dry run exits 0 and calls nothing" "rc=$RC calls=$(count_calls)" "$ERR"
    return 0
  fi
  pass "$name: dry run exits 0 and calls nothing"
  mkdir -p "$TMP/dry"
  rm -f "$TMP/dry"/*
  while IFS= read -r line; do
    case "$line" in
      "+ $DRY_TOOL "*)
        i=$((i + 1))
        dry_line_to_file "$line" "$TMP/dry/call-$i"
        ;;
    esac
  done <<<"$OUT"
  reset_calls
  capture "$@"
  if [ "$RC" -ne 0 ]; then
    fail "$name: real run against the stub exits 0" "rc=$RC" "$ERR"
    return 0
  fi
  if [ "$i" -eq 0 ] || [ "$i" -ne "$(count_calls)" ]; then
    fail "$name: the dry run printed each $DRY_TOOL command that runs" "printed $i, ran $(count_calls)"
    return 0
  fi
  for n in $(seq 1 "$i"); do
    if ! cmp -s <(normalize <"$TMP/dry/call-$n") <(normalize <"$TMP/calls/call-$n"); then
      ok=0
      load_argv "$TMP/dry/call-$n"
      printed="$(printf ' %q' "${ARGV[@]}")"
      load_argv "$TMP/calls/call-$n"
      fail "$name: $DRY_TOOL call $n equals its dry-run line" "printed:$printed" "ran:    $(printf ' %q' "${ARGV[@]}")"
    fi
  done
  if [ "$ok" -eq 1 ]; then pass "$name: each dry-run line equals the $DRY_TOOL call that runs"; fi
}

cd "$REPO_ROOT"
S=tpu_scripts
Z=us-central2-b

echo "# --help, argument checks"
for script in create_slice setup_workers launch delete_slice; do
  capture "$S/$script.sh" --help
  check_eq "$script --help exits 0" 0 "$RC"
  check_contains "$script --help prints usage" "$OUT" "Usage: $script.sh"
done
capture "$S/create_slice.sh"
check_eq "create_slice without a zone exits 2" 2 "$RC"
check_contains "create_slice without a zone says how to set one" "$ERR" "pass --zone or set ZONE"
capture env GCLOUD=gcloud-not-installed "$S/create_slice.sh" --zone "$Z"
check_eq "create_slice without gcloud exits 1" 1 "$RC"
check_contains "create_slice without gcloud says so" "$ERR" "not found on PATH"
capture env GCLOUD=gcloud-not-installed "$S/delete_slice.sh" --zone "$Z" --dry-run
check_eq "dry run works without gcloud installed" 0 "$RC"
capture "$S/create_slice.sh" --zone "$Z" --spot --preemptible
check_eq "--spot with --preemptible is refused" 2 "$RC"
capture "$S/create_slice.sh" --zone "$Z" --name Bad_Name
check_eq "an invalid TPU name is refused" 2 "$RC"
capture "$S/create_slice.sh" --zone "$Z" --accelerator-type v9x-8
check_contains "an unknown TPU type needs --version" "$ERR" "pass --version"
capture "$S/launch.sh" --zone "$Z" cfg.py /tmp/run
check_eq "launch refuses a workdir outside gs://" 2 "$RC"
check_contains "launch explains why the workdir must be on GCS" "$ERR" "visible to every host"
capture "$S/launch.sh" --zone "$Z" --config.seed=1 cfg.py gs://bucket/run
check_contains "launch wants overrides after CONFIG WORKDIR" "$ERR" "overrides after them"
capture "$S/setup_workers.sh" --zone "$Z" --remote-dir ..
check_eq "setup refuses a remote dir that is not below home" 2 "$RC"

echo "# create_slice.sh"
dry_vs_real "create v4-32 spot" "$S/create_slice.sh" --name my-tpu --zone "$Z" --project proj-1 \
  --accelerator-type v4-32 --spot
check_argv "create: gcloud argv" "$TMP/calls/call-1" compute tpus tpu-vm create my-tpu \
  "--zone=$Z" --project=proj-1 --accelerator-type=v4-32 --version=tpu-ubuntu2204-base --spot
reset_calls
capture env ZONE=europe-west4-b ACCELERATOR_TYPE=v5litepod-16 "$S/create_slice.sh" -- --network=my-net
check_argv "create: env defaults, v5e runtime, extra flags after --" "$TMP/calls/call-1" \
  compute tpus tpu-vm create jaxcl-tester --zone=europe-west4-b --accelerator-type=v5litepod-16 \
  --version=v2-alpha-tpuv5-lite --network=my-net
for pair in v5p-8:v2-alpha-tpuv5 v6e-16:v2-alpha-tpuv6e v3-32:tpu-ubuntu2204-base; do
  capture "$S/create_slice.sh" --zone "$Z" --dry-run -a "${pair%%:*}"
  check_contains "create: ${pair%%:*} defaults to ${pair#*:}" "$OUT" "--version=${pair#*:}"
done
capture "$S/create_slice.sh" --zone "$Z" --dry-run -a v6e-16 --version=my-image --preemptible
check_contains "create: --version and --preemptible win" "$OUT" "--version=my-image --preemptible"

echo "# delete_slice.sh"
dry_vs_real "delete" "$S/delete_slice.sh" --name my-tpu --zone "$Z" --yes
check_argv "delete: gcloud argv" "$TMP/calls/call-1" compute tpus tpu-vm delete my-tpu "--zone=$Z" --quiet

echo "# setup_workers.sh (tarball of HEAD)"
sha="$(git -C "$REPO_ROOT" rev-parse --short HEAD)"
dry_vs_real "setup" "$S/setup_workers.sh" --name my-tpu --zone "$Z" --project proj-1 --pip gcsfs \
  --gcloud-arg=--internal-ip
load_argv "$TMP/calls/call-1"
check_argv "setup: scp of the tarball to all workers" "$TMP/calls/call-1" compute tpus tpu-vm scp \
  "${ARGV[4]}" "my-tpu:jaxcl-src-$sha.tar.gz" --worker=all "--zone=$Z" --project=proj-1 --internal-ip
check_contains "setup: the uploaded file is the tarball" "${ARGV[4]}" "/jaxcl-src-$sha.tar.gz"
tarball="$TMP/calls/scp-1-jaxcl-src-$sha.tar.gz"
tar -tzf "$tarball" >"$TMP/tarball-files" 2>/dev/null || true
if grep -qx 'pyproject.toml' "$TMP/tarball-files" && grep -qx 'jaxcl/__init__.py' "$TMP/tarball-files"; then
  pass "setup: the tarball holds the committed package"
else
  fail "setup: the tarball holds the committed package" "$tarball"
fi
load_argv "$TMP/calls/call-2"
setup_cmd="$(arg_value --command=)"
check_argv "setup: ssh to all workers" "$TMP/calls/call-2" compute tpus tpu-vm ssh my-tpu --worker=all \
  "--zone=$Z" --project=proj-1 --internal-ip "--command=$setup_cmd"

echo "# setup_workers.sh: the worker script, run in a sandbox"
# Fakes for the worker's tools: curl answers the metadata query with FAKE_WORKER_ID;
# uv makes a venv whose python is the fake trainer and records 'uv pip install'.
mkdir -p "$TMP/fakebin"
cat >"$TMP/fakebin/curl" <<'EOF'
#!/usr/bin/env bash
printf '%s' "${FAKE_WORKER_ID:?}"
EOF
cat >"$TMP/fakebin/uv" <<EOF
#!/usr/bin/env bash
set -euo pipefail
if [ "\$1" = venv ]; then
  venv="\${!#}"
  mkdir -p "\$venv/bin"
  printf 'PATH=%q/bin:"\$PATH"\nexport PATH\n' "\$venv" >"\$venv/bin/activate"
  cp "$TMP/fake-python" "\$venv/bin/python"
else
  printf '%s\0' "\$@" >"$TMP/uv-pip-argv"
fi
EOF
cat >"$TMP/fake-python" <<'EOF'
#!/usr/bin/env bash
# Fake trainer: records argv, cwd and TFDS_DATA_DIR, prints, sleeps, exits.
if [ "${1:-}" = -c ]; then echo "fake jax check"; exit 0; fi
out="${FAKE_TRAINER_OUT:?}"
printf '%s\0' "$@" >"$out.tmp" && mv "$out.tmp" "$out"
pwd >"$out.cwd"
printf '%s' "${TFDS_DATA_DIR-unset}" >"$out.env"
echo "fake trainer: step 1"
trap 'echo "fake trainer: got SIGTERM"; kill "$sleeper" 2>/dev/null; exit 143' TERM
sleep "${FAKE_TRAINER_SECONDS:-0}" &
sleeper=$!
wait "$sleeper"
echo "fake trainer: done, exit ${FAKE_TRAINER_EXIT:-0}"
exit "${FAKE_TRAINER_EXIT:-0}"
EOF
chmod +x "$TMP/fakebin/curl" "$TMP/fakebin/uv" "$TMP/fake-python"
SANDBOX="$TMP/home"
mkdir -p "$SANDBOX"
# on_worker ID SCRIPT: runs a --command script the way sshd does, as `bash -c`.
on_worker() {
  capture env HOME="$SANDBOX" PATH="$TMP/fakebin:$PATH" FAKE_WORKER_ID="$1" \
    FAKE_TRAINER_OUT="$TMP/trainer-argv" timeout 60 bash -c "$2"
}
cp "$tarball" "$SANDBOX/jaxcl-src-$sha.tar.gz"
on_worker 0 "$setup_cmd"
check_eq "setup script: exits 0" 0 "$RC"
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR"
check_eq "setup script: unpacks the code into ~/jaxcl" yes \
  "$([ -f "$SANDBOX/jaxcl/pyproject.toml" ] && [ -f "$SANDBOX/jaxcl/.jaxcl-setup" ] && echo yes)"
check_eq "setup script: removes the uploaded tarball" no "$([ -e "$SANDBOX/jaxcl-src-$sha.tar.gz" ] && echo yes || echo no)"
check_contains "setup script: runs the jax check" "$OUT" "fake jax check"
# The jax pin, read independently of the script's sed: from pyproject.toml with tomllib.
jax_pin="$(python3 - "$REPO_ROOT/pyproject.toml" <<'EOF'
import re, sys
try:
    import tomllib
    deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
except ImportError:  # Python < 3.11
    deps = re.findall(r'^\s*"([^"]+)"', open(sys.argv[1]).read(), re.M)
print(next(re.sub(r"^jax", "", d) for d in deps if re.match(r"jax[<>=!~]", d)))
EOF
)"
check_argv "setup script: installs jaxcl[train] and jax[tpu] with pyproject's pin" "$TMP/uv-pip-argv" \
  pip install --quiet --python "$SANDBOX/jaxcl-venv/bin/python" -e ".[train]" "jax[tpu]$jax_pin" gcsfs
cp "$tarball" "$SANDBOX/jaxcl-src-$sha.tar.gz"
on_worker 1 "$setup_cmd"
check_eq "setup script: a rerun replaces its own checkout" 0 "$RC"
check_eq "setup script: a rerun keeps a venv made for the same --python" no \
  "$(printf '%s' "$OUT" | grep -q 'making it again' && echo yes || echo no)"
# A venv made for another Python (an earlier --python) is made again, not silently kept.
venv_python="$(cat "$SANDBOX/jaxcl-venv/.jaxcl-python")"
echo 3.10 >"$SANDBOX/jaxcl-venv/.jaxcl-python"
cp "$tarball" "$SANDBOX/jaxcl-src-$sha.tar.gz"
on_worker 1 "$setup_cmd"
check_eq "setup script: another --python rebuilds the venv" 0 "$RC"
check_contains "setup script: says the venv is made again" "$OUT" "not made for Python $venv_python"
check_eq "setup script: the rebuilt venv records its Python" "$venv_python" \
  "$(cat "$SANDBOX/jaxcl-venv/.jaxcl-python")"
# A venv without the marker (the user's own) is kept, not deleted.
rm "$SANDBOX/jaxcl-venv/.jaxcl-python"
touch "$SANDBOX/jaxcl-venv/users-file"
cp "$tarball" "$SANDBOX/jaxcl-src-$sha.tar.gz"
on_worker 1 "$setup_cmd"
check_eq "setup script: a venv it did not make is kept" yes \
  "$([ -f "$SANDBOX/jaxcl-venv/users-file" ] && echo yes || echo no)"
check_contains "setup script: says it kept the venv" "$ERR" "was not made by setup_workers.sh"
mv "$SANDBOX/jaxcl" "$SANDBOX/jaxcl-keep" && mkdir "$SANDBOX/jaxcl"
cp "$tarball" "$SANDBOX/jaxcl-src-$sha.tar.gz"
on_worker 0 "$setup_cmd"
check_eq "setup script: will not replace a directory it did not make" 1 "$RC"
check_contains "setup script: says why" "$ERR" "did not make it"
rm -rf "$SANDBOX/jaxcl" && mv "$SANDBOX/jaxcl-keep" "$SANDBOX/jaxcl"
# Nor replace the code under a running trainer (one whose command line names jaxcl).
mkdir -p "$SANDBOX/jaxcl-logs"
bash -c 'exec -a jaxcl-trainer-stand-in sleep 30' &
STARTED_PIDS+=("$!")
echo "$!" >"$SANDBOX/jaxcl-logs/job.pid"
sleep 0.2
cp "$tarball" "$SANDBOX/jaxcl-src-$sha.tar.gz"
on_worker 0 "$setup_cmd"
check_eq "setup script: refuses while a run is going" 1 "$RC"
check_contains "setup script: says a run is going" "$ERR" "stop it first"
kill "$!" 2>/dev/null || true
rm -f "$SANDBOX/jaxcl-logs/job.pid" "$SANDBOX/jaxcl-src-$sha.tar.gz"

echo "# setup_workers.sh --repo-url (clone on the workers)"
reset_calls
capture "$S/setup_workers.sh" --zone "$Z" --repo-url "file://$REPO_ROOT" --ref HEAD --skip-check \
  --remote-dir code/jaxcl --venv /opt/venvs/jaxcl
check_eq "clone: one gcloud call, no scp" 1 "$(count_calls)"
load_argv "$TMP/calls/call-1"
clone_cmd="$(arg_value --command=)"
check_contains "clone: fetches the given URL" "$clone_cmd" "repo_url='file://$REPO_ROOT'"
check_contains "clone: absolute venv path kept" "$clone_cmd" "venv='/opt/venvs/jaxcl'"
check_contains "clone: relative dir under home" "$clone_cmd" "repo=\"\$HOME\"/'code/jaxcl'"
# Run it with the venv moved into the sandbox, since /opt is not ours.
clone_cmd="${clone_cmd//venv=\'\/opt\/venvs\/jaxcl\'/venv=\"\$HOME\"/\'clone-venv\'}"
mkdir -p "$SANDBOX/code"
on_worker 0 "$clone_cmd"
check_eq "clone script: exits 0" 0 "$RC"
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR"
check_eq "clone script: checks out HEAD" "$(git -C "$REPO_ROOT" rev-parse HEAD)" \
  "$(git -C "$SANDBOX/code/jaxcl" rev-parse HEAD 2>/dev/null || true)"

echo "# launch.sh"
# Overrides that break naive quoting: quotes, $, backticks, globs, an empty value, a
# newline, and a value given as a separate word.
OVERRIDES=(--config.seed=7 "--config.name=it's a \"test\" \$HOME \`date\`" "--config.dims=(512, 256)"
  "--config.glob=*" --config.empty= "--config.note=line1
line2" --config.lr 0.1)
CONFIG=experiments/dacl/tabular_fmnist_dacl.py:cpu
WORKDIR="gs://my-bucket/jaxcl runs/dacl"
dry_vs_real "launch" "$S/launch.sh" --name my-tpu --zone "$Z" --env "TFDS_DATA_DIR=gs://b/tfds dir" \
  "$CONFIG" "$WORKDIR/" "${OVERRIDES[@]}"
check_eq "launch: one gcloud call" 1 "$(count_calls)"
load_argv "$TMP/calls/call-1"
launch_cmd="$(arg_value --command=)"
check_argv "launch: ssh to all workers" "$TMP/calls/call-1" compute tpus tpu-vm ssh my-tpu \
  --worker=all "--zone=$Z" "--command=$launch_cmd"
check_contains "launch: prints how to follow worker 0's log" "$ERR" "--worker=0"
check_contains "launch: prints how to resume" "$ERR" "rerun the same command"
check_contains "launch: prints the TensorBoard command" "$ERR" "tensorboard --logdir"
# The printed stop command keeps the user's gcloud flags (--internal-ip: without it the
# stop could not reach the workers the launch reached).
capture "$S/launch.sh" --dry-run --name my-tpu --zone "$Z" --gcloud-arg=--internal-ip \
  "$CONFIG" "$WORKDIR/"
check_eq "launch with --gcloud-arg: dry run exits 0" 0 "$RC"
check_contains "launch: the printed stop command keeps --gcloud-arg" "$ERR" \
  "--gcloud-arg --internal-ip --stop"

expected_trainer=(-m jaxcl.main "--config=$CONFIG" "--workdir=$WORKDIR" "${OVERRIDES[@]}")
run_dir="$SANDBOX/jaxcl-logs/my-bucket_jaxcl_runs_dacl"
wait_for() { # FILE: waits up to 10 s for FILE to exist
  local i
  for i in $(seq 1 100); do
    if [ -e "$1" ]; then return 0; fi
    sleep 0.1
  done
  return 1
}

rm -f "$TMP/trainer-argv"*
on_worker 1 "$launch_cmd"
check_eq "launch script, worker 1: returns at once" 0 "$RC"
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR"
check_contains "launch script, worker 1: reports the pid" "$OUT" "started pid"
wait_for "$TMP/trainer-argv" || true
check_argv "launch script: the trainer gets the overrides verbatim" "$TMP/trainer-argv" "${expected_trainer[@]}"
check_eq "launch script: the trainer runs in the checkout" "$SANDBOX/jaxcl" "$(cat "$TMP/trainer-argv.cwd" 2>/dev/null)"
check_eq "launch script: --env reaches the trainer" "gs://b/tfds dir" "$(cat "$TMP/trainer-argv.env" 2>/dev/null)"
sleep 0.5
check_contains "launch script, worker 1: logs to its file" "$(cat "$run_dir/worker-1.log" 2>/dev/null)" "fake trainer: done"

rm -f "$TMP/trainer-argv"*
capture env HOME="$SANDBOX" PATH="$TMP/fakebin:$PATH" FAKE_WORKER_ID=0 FAKE_TRAINER_OUT="$TMP/trainer-argv" \
  FAKE_TRAINER_SECONDS=1 FAKE_TRAINER_EXIT=3 timeout 60 bash -c "$launch_cmd"
check_contains "launch script, worker 0: streams the log" "$OUT" "fake trainer: done, exit 3"
check_eq "launch script, worker 0: exits with the trainer's status" 3 "$RC"
# A resumed run appends to the same log; the stream shows only the new launch.
capture env HOME="$SANDBOX" PATH="$TMP/fakebin:$PATH" FAKE_WORKER_ID=0 FAKE_TRAINER_OUT="$TMP/trainer-argv" \
  timeout 60 bash -c "$launch_cmd"
check_eq "launch script, worker 0, rerun: exits 0" 0 "$RC"
check_contains "launch script, worker 0, rerun: streams the new launch" "$OUT" "fake trainer: done, exit 0"
check_lacks "launch script, worker 0, rerun: and not the earlier one" "$OUT" "exit 3"
check_eq "launch script, worker 0, rerun: appends to the log" 2 \
  "$(grep -c '^==== jaxcl launch' "$run_dir/worker-0.log" 2>/dev/null)"

# A second launch while a run is going is refused; --stop ends the run.
dry_vs_real "launch --no-follow" "$S/launch.sh" --name my-tpu --zone "$Z" --no-follow "$CONFIG" "$WORKDIR"
load_argv "$TMP/calls/call-1"
nofollow_cmd="$(arg_value --command=)"
rm -f "$TMP/trainer-argv"*
capture env HOME="$SANDBOX" PATH="$TMP/fakebin:$PATH" FAKE_WORKER_ID=0 FAKE_TRAINER_OUT="$TMP/trainer-argv" \
  FAKE_TRAINER_SECONDS=30 timeout 60 bash -c "$nofollow_cmd"
check_eq "launch --no-follow, worker 0: returns at once" 0 "$RC"
wait_for "$TMP/trainer-argv" || true
on_worker 0 "$nofollow_cmd"
check_eq "launch: refused while a run is going" 1 "$RC"
check_contains "launch: says a run is going" "$ERR" "still going"
dry_vs_real "stop" "$S/launch.sh" --name my-tpu --zone "$Z" --stop
load_argv "$TMP/calls/call-1"
stop_cmd="$(arg_value --command=)"
check_argv "stop: ssh to all workers" "$TMP/calls/call-1" compute tpus tpu-vm ssh my-tpu \
  --worker=all "--zone=$Z" "--command=$stop_cmd"
on_worker 0 "$stop_cmd"
check_contains "stop script: stops the run" "$OUT" "stopped"
sleep 0.3
check_contains "stop script: the trainer got SIGTERM" "$(cat "$run_dir/worker-0.log")" "got SIGTERM"
on_worker 0 "$stop_cmd"
check_contains "stop script: nothing left to stop" "$OUT" "no run going"

# A pid file left over from another boot whose pid now belongs to an unrelated
# process must not block a launch, nor get that process killed.
sleep 30 &
STARTED_PIDS+=("$!")
echo "$!" >"$SANDBOX/jaxcl-logs/job.pid"
rm -f "$TMP/trainer-argv"*
on_worker 1 "$nofollow_cmd"
check_eq "launch: a stale pid file of another process does not block" 0 "$RC"
check_eq "launch: the unrelated process lives on" yes "$(kill -0 "$!" 2>/dev/null && echo yes)"
wait_for "$TMP/trainer-argv" || true
on_worker 1 "$stop_cmd"

echo "# launch.sh --mode=foreground and --mode=tmux"
dry_vs_real "launch foreground" "$S/launch.sh" --name my-tpu --zone "$Z" --mode foreground "$CONFIG" "$WORKDIR" --config.seed=2
load_argv "$TMP/calls/call-1"
fg_cmd="$(arg_value --command=)"
rm -f "$TMP/trainer-argv"*
on_worker 0 "$fg_cmd"
check_eq "foreground, worker 0: exits 0 after the run" 0 "$RC"
check_contains "foreground, worker 0: streams the run" "$OUT" "fake trainer: done"
check_argv "foreground: trainer argv" "$TMP/trainer-argv" -m jaxcl.main "--config=$CONFIG" "--workdir=$WORKDIR" --config.seed=2

if command -v tmux >/dev/null 2>&1; then
  mkdir -p "$TMP/tmux"
  export TMUX_TMPDIR="$TMP/tmux"
  dry_vs_real "launch tmux" "$S/launch.sh" --name my-tpu --zone "$Z" --mode tmux "$CONFIG" "$WORKDIR" "${OVERRIDES[@]}"
  load_argv "$TMP/calls/call-1"
  tmux_cmd="$(arg_value --command=)"
  rm -f "$TMP/trainer-argv"*
  capture env HOME="$SANDBOX" PATH="$TMP/fakebin:$PATH" FAKE_WORKER_ID=0 FAKE_TRAINER_OUT="$TMP/trainer-argv" \
    FAKE_TRAINER_SECONDS=1 timeout 60 bash -c "$tmux_cmd"
  check_eq "tmux, worker 0: exits 0" 0 "$RC"
  check_contains "tmux, worker 0: streams the run" "$OUT" "fake trainer: done"
  check_argv "tmux: the trainer gets the overrides verbatim" "$TMP/trainer-argv" "${expected_trainer[@]}"
  # A tmux session of that name that is not ours is left alone.
  tmux new-session -d -s jaxcl "sleep 30"
  on_worker 1 "$tmux_cmd"
  check_eq "tmux: refuses to reuse an existing session" 1 "$RC"
  check_eq "tmux: the existing session survives" 0 "$(tmux has-session -t =jaxcl 2>/dev/null; echo $?)"
  unset TMUX_TMPDIR
else
  echo "skip  tmux is not installed here"
fi

echo "# slurm_launch.sh"
DRY_TOOL=sbatch
capture "$S/slurm_launch.sh" --help
check_eq "slurm_launch --help exits 0" 0 "$RC"
check_contains "slurm_launch --help prints usage" "$OUT" "Usage: slurm_launch.sh"
SHARED="$TMP/shared"
SVENV="$TMP/slurm-venv"
mkdir -p "$SHARED" "$SVENV/bin"
# The fake venv: activating it puts its python, a fake trainer, first on PATH.
# The literal $PATH is meant: it expands when the job sources the file.
# shellcheck disable=SC2016
printf 'PATH=%q/bin:"$PATH"\nexport PATH\n' "$SVENV" >"$SVENV/bin/activate"
cat >"$SVENV/bin/python" <<'EOF'
#!/usr/bin/env bash
# Fake trainer for the SLURM job: records argv, cwd and environment per SLURM_PROCID.
out="${FAKE_TRAINER_OUT:?}.${SLURM_PROCID:-none}"
printf '%s\0' "$@" >"$out"
pwd >"$out.cwd"
env -0 >"$out.env"
echo "fake trainer: process ${SLURM_PROCID:-?} of ${SLURM_NTASKS:-?}"
if [ "${SLURM_PROCID:-}" = "${FAKE_TRAINER_FAIL_PROCID:-none}" ]; then exit 3; fi
EOF
chmod +x "$SVENV/bin/python"
# The stub srun: records its argv (srun-N), then runs the command once per task, one
# after another, with the variables that srun sets for each task (those JAX's SLURM
# detection reads among them). With FAKE_NODE_LOCAL=DIR, the nodes other than the
# first do not see DIR: paths under it in the command are swapped for missing ones.
mkdir -p "$TMP/slurmbin" "$TMP/srun"
cat >"$TMP/slurmbin/srun" <<'EOF'
#!/usr/bin/env bash
set -uo pipefail
dir="${FAKE_SRUN_DIR:?}"
n=1
while [ -e "$dir/srun-$n" ]; do n=$((n + 1)); done
printf '%s\0' "$@" >"$dir/srun-$n"
nodes="${SLURM_JOB_NUM_NODES:?}"
per_node="${SLURM_NTASKS_PER_NODE:?}"
ntasks=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --nodes=*) nodes="${1#*=}" ;;
    --ntasks=*) ntasks="${1#*=}" ;;
    --ntasks-per-node=*) per_node="${1#*=}" ;;
    -*) ;;
    *) break ;;
  esac
  shift
done
ntasks="${ntasks:-$((nodes * per_node))}"
status=0
for ((task = 0; task < ntasks; task++)); do
  node=$((task / per_node))
  cmd=("$@")
  if [ -n "${FAKE_NODE_LOCAL:-}" ] && [ "$node" -gt 0 ]; then
    for i in "${!cmd[@]}"; do
      case "${cmd[$i]}" in "$FAKE_NODE_LOCAL"/*) cmd[i]="/nonexistent${cmd[$i]}" ;; esac
    done
  fi
  env SLURM_STEP_ID="$((n - 1))" SLURM_STEP_NODELIST="$SLURM_JOB_NODELIST" \
    SLURM_STEP_NUM_NODES="$nodes" SLURM_STEP_NUM_TASKS="$ntasks" SLURM_NTASKS="$ntasks" \
    SLURM_PROCID="$task" SLURM_LOCALID="$((task % per_node))" SLURM_NODEID="$node" \
    SLURMD_NODENAME="gpu0$((node + 1))" "${cmd[@]}"
  rc=$?
  if [ "$rc" -gt "$status" ]; then status="$rc"; fi
done
exit "$status"
EOF
chmod +x "$TMP/slurmbin/srun"

capture "$S/slurm_launch.sh" cfg.py "$SHARED/run"
check_eq "slurm: --gpus-per-node is required" 2 "$RC"
check_contains "slurm: says so" "$ERR" "pass --gpus-per-node"
capture "$S/slurm_launch.sh" --gpus-per-node 4 --venv "$SVENV" cfg.py gs://bucket/run
check_eq "slurm: a URL workdir is refused" 2 "$RC"
capture "$S/slurm_launch.sh" -N 2 --gpus-per-node 4 --venv "$SVENV" cfg.py /tmp/jaxcl-run
check_eq "slurm: a multi-node workdir under /tmp is refused" 2 "$RC"
check_contains "slurm: explains why the workdir must be shared" "$ERR" "every process on every node"
capture "$S/slurm_launch.sh" --gpus-per-node 4 --venv "$SVENV" --config.seed=1 cfg.py "$SHARED/run"
check_contains "slurm: overrides go after CONFIG WORKDIR" "$ERR" "overrides after them"
capture "$S/slurm_launch.sh" --gpus-per-node 4 --venv "$SVENV" --allow-local-workdir cfg.py "$SHARED/a run"
check_contains "slurm: a workdir that cannot hold the #SBATCH log needs --log-dir" "$ERR" "pass --log-dir"
capture "$S/slurm_launch.sh" --gpus-per-node 4 --venv "$SVENV" --allow-local-workdir --sbatch-arg "--comment=a b" \
  cfg.py "$SHARED/run"
check_eq "slurm: an #SBATCH value with a space is refused" 2 "$RC"
capture "$S/slurm_launch.sh" --gpus-per-node 4 --venv "$SHARED/no-venv" --allow-local-workdir cfg.py "$SHARED/run"
check_eq "slurm: a missing venv is an error" 1 "$RC"
check_contains "slurm: says how to make the venv" "$ERR" "jax[cuda12]"

SWORKDIR="$SHARED/jaxcl runs/dacl"
SLOGS="$SHARED/logs"
SJOB="$SLOGS/jaxcl-dacl.sbatch"
slurm_args=(--nodes 2 --gpus-per-node 4 --cpus-per-task 6 --time 01:00:00 --partition gpu
  --account proj-1 --venv "$SVENV" --log-dir "$SLOGS" --allow-local-workdir
  --setup "export JAXCL_SITE_SETUP='loaded it'\${JAXCL_UNSET_IN_THE_SITE_SCRIPT}" --env "TFDS_DATA_DIR=/shared/tfds dir"
  --sbatch-arg=--requeue --srun-arg=--mpi=none "$CONFIG" "$SWORKDIR/" "${OVERRIDES[@]}")
capture "$S/slurm_launch.sh" --dry-run "${slurm_args[@]}"
check_eq "slurm dry run: exits 0" 0 "$RC"
check_eq "slurm dry run: writes nothing" no "$([ -e "$SLOGS" ] && echo yes || echo no)"
check_contains "slurm dry run: warns that the workdir is node-local" "$ERR" "local to each node"
# The job script as the dry run printed it (each line after '#   ').
printed_script="$(printf '%s\n' "$OUT" | sed -n '/^# The job script /,$p' | tail -n +2 | sed 's/^#   //')"
dry_vs_real "slurm" "$S/slurm_launch.sh" "${slurm_args[@]}"
check_argv "slurm: sbatch argv" "$TMP/calls/call-1" --parsable "$SJOB"
check_eq "slurm: the script submitted is the one the dry run printed" "$printed_script" \
  "$(cat "$TMP/calls/script-1" 2>/dev/null)"
check_eq "slurm: the script is kept beside the logs" "$printed_script" "$(cat "$SJOB" 2>/dev/null)"
check_contains "slurm: prints the job's log file" "$ERR" "$SLOGS/jaxcl-dacl-4242.out"
check_contains "slurm: prints how to cancel" "$ERR" "scancel 4242"
check_contains "slurm: prints how to resume" "$ERR" "submit again"
check_eq "slurm: the #SBATCH lines" "#SBATCH --job-name=jaxcl-dacl
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=6
#SBATCH --time=01:00:00
#SBATCH --output=$SLOGS/%x-%j.out
#SBATCH --open-mode=append
#SBATCH --dependency=singleton
#SBATCH --partition=gpu
#SBATCH --account=proj-1
#SBATCH --requeue" "$(grep '^#SBATCH' "$SJOB" 2>/dev/null)"
if command -v shellcheck >/dev/null 2>&1; then
  # Warnings and errors; the infos are SC2016 about the literal '$' meant in quotes.
  capture shellcheck --severity=warning "$SJOB"
  check_eq "slurm: the job script is shellcheck-clean (warnings and errors)" 0 "$RC"
  [ "$RC" -eq 0 ] || printf '%s\n' "$OUT"
fi

echo "# slurm_launch.sh: the job script, run under a fake SLURM allocation"
# What sbatch gives the batch script on the first node of a 2 x 4 allocation, plus
# stale JAX settings from the submitting shell, which the job must drop.
slurm_env=(SLURM_JOB_ID=4242 SLURM_JOB_NAME=jaxcl-dacl SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2
  "SLURM_JOB_NODELIST=gpu[01-02]" "SLURM_NODELIST=gpu[01-02]" SLURM_NTASKS=8
  SLURM_NTASKS_PER_NODE=4 SLURM_TASKS_PER_NODE="4(x2)" SLURM_CPUS_PER_TASK=6
  SLURM_GPUS_PER_NODE=4 SLURM_SUBMIT_DIR="$TMP" SLURMD_NODENAME=gpu01
  JAX_COORDINATOR_ADDRESS=stale:1234 JAX_LOCAL_DEVICE_IDS=0)
run_job() { # [VAR=VALUE...]: runs the job script as the batch step, from $TMP
  rm -f "$TMP/srun"/* "$TMP/trainer-argv"*
  capture env -C "$TMP" "${slurm_env[@]}" "$@" PATH="$TMP/slurmbin:$PATH" FAKE_SRUN_DIR="$TMP/srun" \
    FAKE_TRAINER_OUT="$TMP/trainer-argv" timeout 60 bash "$SJOB"
}
run_job
check_eq "slurm job: exits 0" 0 "$RC"
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR"
load_argv "$TMP/srun/srun-1"
check_eq "slurm job: first step checks the workdir on one task per node" \
  "--nodes=2 --ntasks=2 --ntasks-per-node=1" "${ARGV[*]:0:3}"
check_eq "slurm job: the check's marker is gone" "" "$(find "$SWORKDIR" -name '.shared-check-*')"
expected_slurm_trainer=(-m jaxcl.main "--config=$CONFIG" "--workdir=$SWORKDIR" "${OVERRIDES[@]}")
check_argv "slurm job: srun argv of the training step" "$TMP/srun/srun-2" --kill-on-bad-exit=1 \
  --gpu-bind=none --label --cpus-per-task=6 --mpi=none python "${expected_slurm_trainer[@]}"
check_eq "slurm job: no other srun step" no "$([ -e "$TMP/srun/srun-3" ] && echo yes || echo no)"
for task in 0 1 2 3 4 5 6 7; do
  check_argv "slurm job: process $task gets the overrides verbatim" "$TMP/trainer-argv.$task" \
    "${expected_slurm_trainer[@]}"
done
task_env="$(cat "$TMP/trainer-argv.5.env" 2>/dev/null | tr '\0' '\n' || true)"
check_eq "slurm job: the trainer runs in the checkout" "$REPO_ROOT" "$(cat "$TMP/trainer-argv.5.cwd" 2>/dev/null)"
check_contains "slurm job: process 5 is SLURM_PROCID 5" "$task_env" $'\nSLURM_PROCID=5\n'
check_contains "slurm job: process 5 is SLURM_LOCALID 1" "$task_env" $'\nSLURM_LOCALID=1\n'
check_contains "slurm job: --env reaches the trainer" "$task_env" $'\nTFDS_DATA_DIR=/shared/tfds dir\n'
# (its line reads an unset variable, as module systems do: the job runs it without set -u)
check_contains "slurm job: --setup ran first" "$task_env" $'\nJAXCL_SITE_SETUP=loaded it\n'
check_contains "slurm job: unbuffered output" "$task_env" $'\nPYTHONUNBUFFERED=1\n'
check_lacks "slurm job: a stale JAX_COORDINATOR_ADDRESS is dropped" "$task_env" "JAX_COORDINATOR_ADDRESS="
check_lacks "slurm job: a stale JAX_LOCAL_DEVICE_IDS is dropped" "$task_env" "JAX_LOCAL_DEVICE_IDS="
check_contains "slurm job: prints the srun command" "$OUT" "+ srun --kill-on-bad-exit=1"
# JAX itself, given process 5's environment: SLURM detected, the first node coordinates,
# 8 processes, and process 5 takes local GPU 1.
jax_python="$REPO_ROOT/.venv/bin/python"
if [ ! -f "$TMP/trainer-argv.5.env" ]; then
  fail "slurm job: JAX reads the task's environment" "process 5 did not run"
elif [ -x "$jax_python" ] && "$jax_python" -c 'import jax._src.clusters' 2>/dev/null; then
  task_env_args=()
  while IFS= read -r -d '' word; do task_env_args+=("$word"); done <"$TMP/trainer-argv.5.env"
  detected="$(env -i "${task_env_args[@]}" "$jax_python" -c '
from jax._src import clusters
print(clusters.ClusterEnv.auto_detect_unset_distributed_params(None, None, None, None, None, 300))
' 2>&1)"
  check_eq "slurm job: JAX reads the task's environment as process 5 of 8 on GPU 1" \
    "('gpu01:$((4242 % 4096 + 61440))', 8, 5, [1])" "$detected"
else
  echo "skip  jax is not importable from $jax_python"
fi

run_job FAKE_TRAINER_FAIL_PROCID=2
check_eq "slurm job: a failed process fails the job" 3 "$RC"
run_job FAKE_NODE_LOCAL="$SHARED"
check_eq "slurm job: a workdir the second node cannot see stops the job" 1 "$RC"
check_contains "slurm job: names the node" "$ERR" "node $(hostname) does not see"
check_contains "slurm job: says the workdir must be shared" "$ERR" "not shared by all nodes"
check_eq "slurm job: and trains nothing" no "$([ -e "$TMP/srun/srun-2" ] && echo yes || echo no)"

echo "# slurm_launch.sh: one node, --gres with a GPU type, --no-submit"
reset_calls
SWORKDIR1="$SHARED/seed0"
capture "$S/slurm_launch.sh" --dry-run --gpus-per-node 1 --gres --gpu-type a100 --venv "$SVENV" \
  --allow-local-workdir "$CONFIG" "$SWORKDIR1" --config.seed=0
printed_script="$(printf '%s\n' "$OUT" | sed -n '/^# The job script /,$p' | tail -n +2 | sed 's/^#   //')"
check_contains "slurm one node: --gres=gpu:TYPE:G" "$printed_script" $'\n#SBATCH --gres=gpu:a100:1\n'
check_contains "slurm one node: the log defaults to WORKDIR/slurm" "$printed_script" \
  "#SBATCH --output=$SWORKDIR1/slurm/%x-%j.out"
check_contains "slurm one node: the job name comes from WORKDIR" "$printed_script" "#SBATCH --job-name=jaxcl-seed0"
capture "$S/slurm_launch.sh" --no-submit --gpus-per-node 1 --gres --gpu-type a100 --venv "$SVENV" \
  --allow-local-workdir "$CONFIG" "$SWORKDIR1" --config.seed=0
check_eq "slurm --no-submit: submits nothing" 0 "$(count_calls)"
SJOB="$SWORKDIR1/slurm/jaxcl-seed0.sbatch"
check_eq "slurm --no-submit: writes the script the dry run printed" "$printed_script" "$(cat "$SJOB" 2>/dev/null)"
slurm_env=(SLURM_JOB_ID=77 SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=gpu07 SLURM_NTASKS=1
  SLURM_NTASKS_PER_NODE=1)
run_job
check_eq "slurm one node: exits 0" 0 "$RC"
check_argv "slurm one node: a single srun step, the trainer's" "$TMP/srun/srun-1" --kill-on-bad-exit=1 \
  --gpu-bind=none --label python -m jaxcl.main "--config=$CONFIG" "--workdir=$SWORKDIR1" --config.seed=0
check_eq "slurm one node: no workdir check" no "$([ -e "$TMP/srun/srun-2" ] && echo yes || echo no)"
DRY_TOOL=gcloud

echo
echo "test_dry_run: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
