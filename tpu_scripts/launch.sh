#!/usr/bin/env bash
# Runs `python -m jaxcl.main` on every worker of a TPU slice at once.
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ORIG_ARGS=("$@")
MODE="nohup"
FOLLOW=1
STOP=0
ALLOW_LOCAL_WORKDIR=0
GRACE_SECONDS=60
ENV_ASSIGNMENTS=()
TMUX_SESSION=jaxcl

usage() {
  cat <<EOF
Usage: $SCRIPT_NAME [options] CONFIG WORKDIR [--config.KEY=VALUE ...]
       $SCRIPT_NAME [options] --stop

Starts the same trainer on every worker of the slice (--worker=all):

  cd ~/$REMOTE_DIR && python -m jaxcl.main --config=CONFIG --workdir=WORKDIR [overrides]

in the venv that setup_workers.sh made. Every argument after WORKDIR goes to the
trainer unchanged, so overrides must come last. WORKDIR must be on Cloud Storage
(gs://BUCKET/PATH): every host writes its shard of the orbax checkpoints there and
reads all of them back on resume. Rerunning the same command resumes from the last
checkpoint in WORKDIR.

Each worker logs to ~/$REMOTE_LOGS/<run>/worker-N.log; worker 0's log is streamed
here. By default the run is detached from ssh (nohup), so Ctrl-C or a dropped
connection stops only the stream, never the run.

Options:
      --mode MODE     nohup (default): detached, survives a dropped ssh;
                      tmux: detached in tmux session '$TMUX_SESSION' (attach to watch);
                      foreground: tied to this ssh session, which it dies with
      --no-follow     start the run and return without streaming worker 0's log
      --env KEY=VALUE export KEY=VALUE for the trainer on every worker (repeatable),
                      e.g. --env TFDS_DATA_DIR=gs://BUCKET/tensorflow_datasets
      --remote-dir DIR, --venv DIR
                      as given to setup_workers.sh [defaults: $REMOTE_DIR, $REMOTE_VENV]
      --allow-local-workdir
                      accept a WORKDIR that is not gs:// (single-host slices only)
      --stop          stop the run on every worker (SIGTERM, then SIGKILL after
                      ${GRACE_SECONDS}s) instead of starting one
$COMMON_OPTIONS_HELP

Example:
  $SCRIPT_NAME --name my-tpu --zone us-central2-b \\
    experiments/dacl/tabular_fmnist_dacl.py gs://my-bucket/jaxcl/dacl_fmnist \\
    --config.seed=1
EOF
}

while [ "$#" -gt 0 ]; do
  if common_opt "$@"; then
    shift "$COMMON_SHIFT"
    continue
  fi
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --mode | --mode=*)
      opt_value "$@"
      MODE="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --no-follow)
      FOLLOW=0
      shift
      ;;
    --env | --env=*)
      opt_value "$@"
      ENV_ASSIGNMENTS+=("$OPTVAL")
      shift "$OPTSHIFT"
      ;;
    --remote-dir | --remote-dir=*)
      opt_value "$@"
      REMOTE_DIR="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --venv | --venv=*)
      opt_value "$@"
      REMOTE_VENV="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --allow-local-workdir)
      ALLOW_LOCAL_WORKDIR=1
      shift
      ;;
    --stop)
      STOP=1
      shift
      ;;
    --)
      shift
      break
      ;;
    --config.* | --config=* | --workdir*)
      usage_error "'$1' looks like a trainer flag: put CONFIG and WORKDIR first, overrides after them"
      ;;
    -*) usage_error "unknown option: $1" ;;
    *) break ;;
  esac
done

validate_common
check_remote_dir --remote-dir "$REMOTE_DIR"
check_remote_dir --venv "$REMOTE_VENV"
check_remote_dir JAXCL_REMOTE_LOGS "$REMOTE_LOGS"
gcloud_location_args

warn_if_no_ssh_agent

# The shared part of every worker script: where things are, and how to find a live run.
# A run is live if the pid in job.pid is a process whose command line mentions jaxcl,
# so a pid reused after a reboot is not mistaken for one.
common_remote="set -euo pipefail
cd \"\$HOME\"
repo=$(remote_path "$REMOTE_DIR")
venv=$(remote_path "$REMOTE_VENV")
logs_root=$(remote_path "$REMOTE_LOGS")
"
common_remote+="$(
  cat <<'EOF'
pid_file="$logs_root/job.pid"
host="$(hostname)"
wid="$(curl -sf -m 5 -H "Metadata-Flavor: Google" \
  http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number \
  2>/dev/null || true)"
case "$wid" in
  "" | *[!0-9]*) wid="$(printf '%s' "$host" | sed -n 's/.*-w-\([0-9][0-9]*\)$/\1/p')" ;;
esac
wid="${wid:-0}"
live_pid() {
  local pid
  [ -s "$pid_file" ] || return 1
  pid="$(cat "$pid_file")"
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q jaxcl || return 1
  echo "$pid"
}
EOF
)"

if [ "$STOP" -eq 1 ]; then
  if [ "$#" -gt 0 ]; then
    usage_error "--stop takes no CONFIG or WORKDIR"
  fi
  remote_script="$common_remote
grace=$GRACE_SECONDS
"
  remote_script+="$(
    cat <<'EOF'
if ! pid="$(live_pid)"; then
  echo "jaxcl stop [worker $wid on $host]: no run going"
  rm -f "$pid_file"
  exit 0
fi
kill -TERM "$pid"
waited=0
while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$grace" ]; do
  sleep 1
  waited=$((waited + 1))
done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"
  echo "jaxcl stop [worker $wid on $host]: pid $pid killed after ${grace}s"
else
  echo "jaxcl stop [worker $wid on $host]: pid $pid stopped"
fi
rm -f "$pid_file"
EOF
  )"
  log "stopping the jaxcl run on every worker of '$TPU_NAME'"
  run "$GCLOUD" compute tpus tpu-vm ssh "$TPU_NAME" --worker=all "${LOCATION_ARGS[@]}" \
    --command="$remote_script"
  remote_script_note "$remote_script"
  exit 0
fi

if [ "$#" -lt 2 ]; then
  usage_error "need CONFIG and WORKDIR (e.g. experiments/dacl/tabular_fmnist_dacl.py gs://BUCKET/RUN)"
fi
CONFIG="$1"
WORKDIR="$2"
shift 2
OVERRIDES=("$@")

case "$MODE" in
  nohup | tmux | foreground) ;;
  *) usage_error "invalid --mode '$MODE' (nohup, tmux or foreground)" ;;
esac
if [ -z "$CONFIG" ]; then
  usage_error "CONFIG is empty"
fi
config_file="${CONFIG%%:*}"
if [ "${config_file#/}" = "$config_file" ] && [ ! -f "$REPO_ROOT/$config_file" ]; then
  warn "$config_file is not in this checkout; the workers have what setup_workers.sh shipped"
fi
# Strip trailing slashes so that one run always maps to one log directory.
while [ "${WORKDIR%/}" != "$WORKDIR" ] && [ "${WORKDIR%/}" != "gs:/" ]; do
  WORKDIR="${WORKDIR%/}"
done
if printf '%s' "$WORKDIR" | grep -Eq '^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/.+)?$'; then
  :
elif [ "$ALLOW_LOCAL_WORKDIR" -eq 1 ] && [ -n "$WORKDIR" ]; then
  warn "WORKDIR '$WORKDIR' is local to each worker: fine on a single-host slice, wrong on a multi-host one"
else
  usage_error "WORKDIR must be gs://BUCKET/PATH: orbax checkpoints have to be visible to every host (got '$WORKDIR'; --allow-local-workdir overrides this for single-host slices)"
fi
if [ "${#ENV_ASSIGNMENTS[@]}" -gt 0 ]; then
  for assignment in "${ENV_ASSIGNMENTS[@]}"; do
    if ! printf '%s' "${assignment%%=*}" | grep -Eq '^[A-Za-z_][A-Za-z0-9_]*$' ||
      [ "${assignment#*=}" = "$assignment" ]; then
      usage_error "--env wants KEY=VALUE, got '$assignment'"
    fi
  done
fi

# One log directory per WORKDIR, so a resumed run appends to the same files.
run_id="$(printf '%s' "${WORKDIR#gs://}" | tr -c 'A-Za-z0-9._-' '_')"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"

# The trainer's command line, every word quoted for the worker's shell.
train_cmd="python -m jaxcl.main $(sq "--config=$CONFIG") $(sq "--workdir=$WORKDIR")"
if [ "${#OVERRIDES[@]}" -gt 0 ]; then
  for word in "${OVERRIDES[@]}"; do
    train_cmd="$train_cmd $(sq "$word")"
  done
fi

# The job script each worker writes to disk and runs detached. Its first argument is
# the worker number. It records its pid, then execs python, so the pid is the
# trainer's and a SIGTERM from --stop reaches the trainer itself.
env_lines=""
if [ "${#ENV_ASSIGNMENTS[@]}" -gt 0 ]; then
  for assignment in "${ENV_ASSIGNMENTS[@]}"; do
    env_lines="${env_lines}export ${assignment%%=*}=$(sq "${assignment#*=}")
"
  done
fi
job_script="#!/usr/bin/env bash
set -euo pipefail
echo \"\$\$\" >$(remote_path "$REMOTE_LOGS")/job.pid
cd $(remote_path "$REMOTE_DIR")
. $(remote_path "$REMOTE_VENV")/bin/activate
export PYTHONUNBUFFERED=1
${env_lines}echo \"==== jaxcl launch $stamp, worker \$1 on \$(hostname): \$(date -u) ====\"
set -- $train_cmd
printf '+'
printf ' %q' \"\$@\"
printf '\\n'
exec \"\$@\""
# The job script goes to the worker inside a quoted here-document; make sure no
# override could end it early.
heredoc_end=JAXCL_JOB_SCRIPT_END
if printf '%s\n' "$job_script" | grep -qx "$heredoc_end"; then
  usage_error "an argument is exactly '$heredoc_end', which this script cannot pass through"
fi

remote_script="$common_remote
run_dir=\"\$logs_root\"/$(sq "$run_id")
mode=$MODE
follow=$FOLLOW
session=$TMUX_SESSION
"
remote_script+="$(
  cat <<'EOF'
if pid="$(live_pid)"; then
  echo "jaxcl launch [worker $wid on $host]: a run is still going (pid $pid); stop it first with launch.sh --stop" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ] || [ ! -d "$repo" ]; then
  echo "jaxcl launch [worker $wid on $host]: no $repo or $venv; run tpu_scripts/setup_workers.sh first" >&2
  exit 1
fi
rm -f "$pid_file"
mkdir -p "$run_dir"
job_file="$run_dir/jaxcl-job.sh"
EOF
)"
remote_script+="
cat >\"\$job_file\" <<'$heredoc_end'
$job_script
$heredoc_end
"
remote_script+="$(
  cat <<'EOF'
log="$run_dir/worker-$wid.log"
touch "$log"
offset="$(wc -c <"$log")"
case "$mode" in
  foreground)
    if [ "$wid" = 0 ]; then
      bash "$job_file" "$wid" 2>&1 | tee -a "$log"
    else
      bash "$job_file" "$wid" >>"$log" 2>&1
    fi
    exit
    ;;
  nohup)
    nohup setsid bash "$job_file" "$wid" >>"$log" 2>&1 </dev/null &
    job=$!
    ;;
  tmux)
    command -v tmux >/dev/null || { echo "jaxcl launch [worker $wid on $host]: tmux is not installed" >&2; exit 1; }
    if tmux has-session -t "=$session" 2>/dev/null; then
      echo "jaxcl launch [worker $wid on $host]: a tmux session '$session' exists; end it with 'tmux kill-session -t $session'" >&2
      exit 1
    fi
    printf -v tmux_cmd 'bash %q %q 2>&1 | tee -a %q' "$job_file" "$wid" "$log"
    tmux new-session -d -s "$session" "$tmux_cmd"
    job=""
    ;;
esac
waited=0
while [ ! -s "$pid_file" ] && [ "$waited" -lt 100 ]; do
  sleep 0.1
  waited=$((waited + 1))
done
pid="$(cat "$pid_file" 2>/dev/null || true)"
if [ -z "$pid" ]; then
  echo "jaxcl launch [worker $wid on $host]: the run did not start; end of $log:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
echo "jaxcl launch [worker $wid on $host]: started pid $pid, logging to $log"
if [ "$wid" != 0 ] || [ "$follow" != 1 ]; then
  exit 0
fi
tail -c "+$((offset + 1))" --pid="$pid" -f "$log"
if [ -n "$job" ]; then
  status=0
  wait "$job" || status=$?
  echo "jaxcl launch [worker 0 on $host]: the run exited with status $status"
  exit "$status"
fi
echo "jaxcl launch [worker 0 on $host]: the run ended; its log is $log"
EOF
)"

# How to watch, resume and stop this run, printed before the (possibly long) stream.
ssh_base=("$GCLOUD" compute tpus tpu-vm ssh "$TPU_NAME" "${LOCATION_ARGS[@]}")
# Relative to the home directory, where the ssh command starts.
log_path="$REMOTE_LOGS/$run_id"
resume_cmd=("$0")
for word in ${ORIG_ARGS[@]+"${ORIG_ARGS[@]}"}; do
  if [ "$word" != --dry-run ]; then
    resume_cmd+=("$word")
  fi
done
stop_cmd=("$0" --name "$TPU_NAME" --zone "$ZONE")
if [ -n "$PROJECT_ID" ]; then
  stop_cmd+=(--project "$PROJECT_ID")
fi
for extra in ${GCLOUD_EXTRA[@]+"${GCLOUD_EXTRA[@]}"}; do
  stop_cmd+=(--gcloud-arg "$extra")  # e.g. --internal-ip: the stop must reach the workers too
done
stop_cmd+=(--stop)
{
  echo "$SCRIPT_NAME: starting jaxcl.main on every worker of '$TPU_NAME' ($MODE)"
  echo "  config:   $CONFIG"
  echo "  workdir:  $WORKDIR"
  echo "  follow worker 0 (N for others):"
  printf '   %s\n' "$(printf ' %q' "${ssh_base[@]}" --worker=0 "--command=tail -n 200 -F $log_path/worker-0.log")"
  if [ "$MODE" = tmux ]; then
    echo "  watch the live tmux session on worker 0 (detach with Ctrl-b d):"
    printf '   %s -- -t tmux attach -t %s\n' "$(printf ' %q' "${ssh_base[@]}" --worker=0)" "$TMUX_SESSION"
  fi
  echo "  TensorBoard (for gs://: tensorboard and gcsfs, which 'pip install jaxcl[train]' installs):"
  printf '    tensorboard --logdir %q\n' "$WORKDIR"
  echo "  resume after a preemption or a stop: rerun the same command; it restarts from"
  echo "  the last checkpoint in the workdir:"
  printf '   %s\n' "$(printf ' %q' "${resume_cmd[@]}")"
  echo "  stop the run on all workers:"
  printf '   %s\n' "$(printf ' %q' "${stop_cmd[@]}")"
  if [ "$MODE" = foreground ]; then
    echo "  --mode=foreground: the run dies if this ssh session drops."
  elif [ "$FOLLOW" -eq 1 ]; then
    echo "  Ctrl-C ends only this log stream; the run goes on."
  fi
} >&2

run "$GCLOUD" compute tpus tpu-vm ssh "$TPU_NAME" --worker=all "${LOCATION_ARGS[@]}" \
  --command="$remote_script"
remote_script_note "$remote_script"
