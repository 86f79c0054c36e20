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
  JAXCL_REMOTE_DIR JAXCL_REMOTE_VENV JAXCL_REMOTE_LOGS JAXCL_PYTHON_VERSION TMUX
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
# by bash, must equal the argv the stub recorded.
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
      "+ gcloud "*)
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
    fail "$name: the dry run printed each gcloud command that runs" "printed $i, ran $(count_calls)"
    return 0
  fi
  for n in $(seq 1 "$i"); do
    if ! cmp -s <(normalize <"$TMP/dry/call-$n") <(normalize <"$TMP/calls/call-$n"); then
      ok=0
      load_argv "$TMP/dry/call-$n"
      printed="$(printf ' %q' "${ARGV[@]}")"
      load_argv "$TMP/calls/call-$n"
      fail "$name: gcloud call $n equals its dry-run line" "printed:$printed" "ran:    $(printf ' %q' "${ARGV[@]}")"
    fi
  done
  if [ "$ok" -eq 1 ]; then pass "$name: each dry-run line equals the gcloud call that runs"; fi
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

echo
echo "test_dry_run: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
