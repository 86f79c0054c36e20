#!/usr/bin/env bash
# Writes a SLURM batch script that runs `python -m jaxcl.main` on a multi-node GPU
# allocation (one process per GPU, started by srun), and submits it with sbatch.
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ORIG_ARGS=("$@")
NODES=1
GPUS_PER_NODE=""
GPU_TYPE=""
USE_GRES=0
TIME_LIMIT="04:00:00"
PARTITION=""
ACCOUNT=""
QOS=""
CPUS_PER_TASK=""
JOB_NAME=""
LOG_DIR=""
VENV="${VIRTUAL_ENV:-$REPO_ROOT/.venv}"
SETUP_LINES=()
ENV_ASSIGNMENTS=()
SBATCH_EXTRA=()
SRUN_EXTRA=()
ALLOW_LOCAL_WORKDIR=0
NO_SUBMIT=0

usage() {
  cat <<EOF
Usage: $SCRIPT_NAME [options] --gpus-per-node G CONFIG WORKDIR [--config.KEY=VALUE ...]

Writes a SLURM batch script for NODES x G GPUs and submits it with sbatch. The job
runs, from this checkout ($REPO_ROOT) and in the venv VENV,

  srun python -m jaxcl.main --config=CONFIG --workdir=WORKDIR [overrides]

with one process per GPU (--ntasks-per-node=G): JAX's SLURM detection, which the
trainer's jax.distributed.initialize() uses, gives each process the GPU numbered
SLURM_LOCALID and picks the first node of the step as the coordinator. Every argument
after WORKDIR goes to the trainer unchanged, so overrides must come last.

The checkout, the venv and WORKDIR must be on a filesystem that every node shares
(NFS, Lustre, GPFS, ...): every process writes its shard of each orbax checkpoint to
WORKDIR and reads the whole checkpoint back on resume. A multi-node job checks this
before training. Resume after the time limit, a crash or scancel: submit again (rerun
this command); the trainer restores the newest checkpoint in WORKDIR. Jobs of the same
name run one at a time (--dependency=singleton).

Options:
  -N, --nodes N          nodes [default: $NODES]
      --gpus-per-node G  GPUs per node, also the processes per node [required]
      --gpu-type TYPE    GPU type in the request, e.g. a100 (--gpus-per-node=a100:G)
      --gres             request the GPUs as --gres=gpu[:TYPE]:G (older SLURM, or
                         sites that ask for it) instead of --gpus-per-node
  -t, --time TIME        time limit [default: $TIME_LIMIT]
  -p, --partition P      partition
  -A, --account A        account to charge
  -q, --qos QOS          quality of service
  -c, --cpus-per-task C  CPU cores per process (also passed to srun, which since
                         SLURM 22.05 does not inherit it) [default: the site's]
  -J, --job-name NAME    [default: jaxcl-<last part of WORKDIR>]
      --log-dir DIR      where SLURM writes the job's output, NAME-JOBID.out, and
                         where the job script NAME.sbatch is kept [default: WORKDIR/slurm]
      --venv DIR         venv with jaxcl[train] and jax[cuda12], on the shared
                         filesystem [default: \$VIRTUAL_ENV, else $REPO_ROOT/.venv]
      --setup LINE       shell line the job runs before activating the venv
                         (repeatable), e.g. --setup 'module load cuda/12.4'
      --env KEY=VALUE    export KEY=VALUE for the trainer (repeatable),
                         e.g. --env JAXCL_FASHION_MNIST_DIR=/shared/data/fashion-mnist
      --sbatch-arg ARG   extra '#SBATCH ARG' line (repeatable), e.g. --sbatch-arg=--requeue
      --srun-arg ARG     extra srun flag for the trainer's step (repeatable)
      --allow-local-workdir
                         accept a WORKDIR under /tmp, /var/tmp, /dev/shm or \$TMPDIR
                         (node-local: single-node jobs only)
      --no-submit        write the job script and print the sbatch command, but do
                         not submit (to edit the script first)
      --dry-run          print the commands and the job script; write and submit nothing
  -h, --help             show this help

Example:
  $SCRIPT_NAME --nodes 2 --gpus-per-node 8 --time 12:00:00 --partition gpu \\
    --setup 'module load cuda/12.4' \\
    experiments/dacl/tabular_fmnist_dacl.py /shared/\$USER/jaxcl/dacl_fmnist \\
    --config.seed=1
EOF
}

# sbatch reads '#SBATCH' lines with its own quoting rules (quotes group words, '#'
# starts a comment), so the values written there must need no quoting at all.
sbatch_safe() { # WHAT VALUE
  case "$2" in
    "" | *[[:space:]]* | *\'* | *\"* | *\\* | *"#"*)
      usage_error "$1 '$2' cannot go on an #SBATCH line: it must be non-empty, without spaces, quotes, '\\' or '#'"
      ;;
  esac
}
positive_int() { # WHAT VALUE
  if ! printf '%s' "$2" | grep -Eq '^[1-9][0-9]*$'; then
    usage_error "$1 must be a positive integer, got '$2'"
  fi
}
# abs_path PATH: PATH made absolute against the current directory, with no trailing '/'.
abs_path() {
  local p="$1"
  case "$p" in
    /*) ;;
    *) p="$PWD/$p" ;;
  esac
  while [ "${p%/}" != "$p" ] && [ "$p" != / ]; do
    p="${p%/}"
  done
  printf '%s' "$p"
}

while [ "$#" -gt 0 ]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --dry-run)
      DRY_RUN=1
      shift
      ;;
    --no-submit)
      NO_SUBMIT=1
      shift
      ;;
    --gres)
      USE_GRES=1
      shift
      ;;
    --allow-local-workdir)
      ALLOW_LOCAL_WORKDIR=1
      shift
      ;;
    -N | --nodes | --nodes=*)
      opt_value "$@"
      NODES="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --gpus-per-node | --gpus-per-node=*)
      opt_value "$@"
      GPUS_PER_NODE="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --gpu-type | --gpu-type=*)
      opt_value "$@"
      GPU_TYPE="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -t | --time | --time=*)
      opt_value "$@"
      TIME_LIMIT="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -p | --partition | --partition=*)
      opt_value "$@"
      PARTITION="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -A | --account | --account=*)
      opt_value "$@"
      ACCOUNT="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -q | --qos | --qos=*)
      opt_value "$@"
      QOS="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -c | --cpus-per-task | --cpus-per-task=*)
      opt_value "$@"
      CPUS_PER_TASK="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -J | --job-name | --job-name=*)
      opt_value "$@"
      JOB_NAME="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --log-dir | --log-dir=*)
      opt_value "$@"
      LOG_DIR="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --venv | --venv=*)
      opt_value "$@"
      VENV="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --setup | --setup=*)
      opt_value "$@"
      SETUP_LINES+=("$OPTVAL")
      shift "$OPTSHIFT"
      ;;
    --env | --env=*)
      opt_value "$@"
      ENV_ASSIGNMENTS+=("$OPTVAL")
      shift "$OPTSHIFT"
      ;;
    --sbatch-arg | --sbatch-arg=*)
      opt_value "$@"
      SBATCH_EXTRA+=("$OPTVAL")
      shift "$OPTSHIFT"
      ;;
    --srun-arg | --srun-arg=*)
      opt_value "$@"
      SRUN_EXTRA+=("$OPTVAL")
      shift "$OPTSHIFT"
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

if [ "$#" -lt 2 ]; then
  usage_error "need CONFIG and WORKDIR (e.g. experiments/dacl/tabular_fmnist_dacl.py /shared/\$USER/jaxcl/RUN)"
fi
CONFIG="$1"
WORKDIR="$2"
shift 2
OVERRIDES=("$@")

# --- checks ---------------------------------------------------------------------------
if [ -z "$GPUS_PER_NODE" ]; then
  usage_error "pass --gpus-per-node: the GPUs of each node, which is also the number of processes per node"
fi
positive_int --nodes "$NODES"
positive_int --gpus-per-node "$GPUS_PER_NODE"
if [ -n "$CPUS_PER_TASK" ]; then
  positive_int --cpus-per-task "$CPUS_PER_TASK"
fi
if [ -n "$GPU_TYPE" ]; then
  sbatch_safe --gpu-type "$GPU_TYPE"
  case "$GPU_TYPE" in
    *:* | *,*) usage_error "--gpu-type wants a single type such as a100, got '$GPU_TYPE'" ;;
  esac
fi
sbatch_safe --time "$TIME_LIMIT"
for pair in "--partition:$PARTITION" "--account:$ACCOUNT" "--qos:$QOS"; do
  if [ -n "${pair#*:}" ]; then
    sbatch_safe "${pair%%:*}" "${pair#*:}"
  fi
done
if [ "${#SBATCH_EXTRA[@]}" -gt 0 ]; then
  for arg in "${SBATCH_EXTRA[@]}"; do
    sbatch_safe --sbatch-arg "$arg"
    case "$arg" in
      -*) ;;
      *) usage_error "--sbatch-arg wants an sbatch flag such as --requeue or --mem=0, got '$arg'" ;;
    esac
  done
fi
if [ "${#ENV_ASSIGNMENTS[@]}" -gt 0 ]; then
  for assignment in "${ENV_ASSIGNMENTS[@]}"; do
    if ! printf '%s' "${assignment%%=*}" | grep -Eq '^[A-Za-z_][A-Za-z0-9_]*$' ||
      [ "${assignment#*=}" = "$assignment" ]; then
      usage_error "--env wants KEY=VALUE, got '$assignment'"
    fi
  done
fi
if [ -z "$CONFIG" ]; then
  usage_error "CONFIG is empty"
fi
config_file="${CONFIG%%:*}"
if [ "${config_file#/}" = "$config_file" ] && [ ! -f "$REPO_ROOT/$config_file" ]; then
  warn "$config_file is not in $REPO_ROOT, where the job runs; relative configs are read from there"
fi

# WORKDIR: one folder that all processes on all nodes share.
case "$WORKDIR" in
  "") usage_error "WORKDIR is empty" ;;
  *://*)
    usage_error "WORKDIR '$WORKDIR' is a URL: on a SLURM cluster give a folder on the filesystem every node shares (this script checks, before training, that every node sees a file written there, which needs a mounted folder; object-store URLs are for TPU VMs, via launch.sh)"
    ;;
esac
WORKDIR="$(abs_path "$WORKDIR")"
local_reason=""
for tmp_root in /tmp /var/tmp /dev/shm "${TMPDIR:-/tmp}"; do
  tmp_root="$(abs_path "$tmp_root")"
  case "$WORKDIR/" in
    "$tmp_root"/*) local_reason="it is under $tmp_root, which is local to each node" ;;
  esac
done
if [ -n "$local_reason" ]; then
  if [ "$ALLOW_LOCAL_WORKDIR" -eq 1 ]; then
    warn "WORKDIR '$WORKDIR': $local_reason; fine for a single node, and a multi-node job stops before training if a node cannot see it"
  elif [ "$NODES" -gt 1 ]; then
    usage_error "WORKDIR '$WORKDIR': $local_reason, but every process on every node writes its checkpoint shards there and reads all of them back on resume; use a folder on the shared filesystem (--allow-local-workdir overrides this)"
  else
    usage_error "WORKDIR '$WORKDIR': $local_reason and may be wiped when the job ends, so the run could not resume; use a folder on the shared filesystem (--allow-local-workdir overrides this)"
  fi
fi
# The filesystem type, where GNU stat tells it: a hint only, since the job checks.
probe="$WORKDIR"
while [ ! -e "$probe" ] && [ "$probe" != / ]; do
  probe="$(dirname "$probe")"
done
fs_type="$(stat -f -c %T "$probe" 2>/dev/null || true)"
case "$fs_type" in
  ext2/ext3 | xfs | btrfs | tmpfs | overlayfs | ramfs)
    if [ "$NODES" -gt 1 ] && [ -z "$local_reason" ]; then
      warn "WORKDIR '$WORKDIR' is on a $fs_type filesystem here, which is usually local to one machine; the job checks that every node sees it before training"
    fi
    ;;
esac

case "$VENV" in
  "") usage_error "--venv is empty" ;;
esac
VENV="$(abs_path "$VENV")"
if [ ! -f "$VENV/bin/activate" ]; then
  msg="no venv at '$VENV' (pass --venv). Make one on the shared filesystem, e.g.: python3 -m venv $REPO_ROOT/.venv && $REPO_ROOT/.venv/bin/pip install -e '${REPO_ROOT}[train]' 'jax[cuda12]'"
  if [ "$DRY_RUN" -eq 1 ]; then
    warn "$msg"
  else
    die "$msg"
  fi
fi

if [ -z "$JOB_NAME" ]; then
  JOB_NAME="jaxcl-$(printf '%s' "$(basename "$WORKDIR")" | tr -c 'A-Za-z0-9._-' '_')"
fi
sbatch_safe --job-name "$JOB_NAME"
case "$JOB_NAME" in
  */* | .*) usage_error "--job-name '$JOB_NAME' must not contain '/' or start with '.'" ;;
esac
if [ -z "$LOG_DIR" ]; then
  LOG_DIR="$WORKDIR/slurm"
  case "$LOG_DIR" in
    *[[:space:]]* | *\'* | *\"* | *\\* | *"#"* | *%*)
      usage_error "WORKDIR '$WORKDIR' cannot hold the SLURM log (#SBATCH --output takes no spaces, quotes, '\\', '#' or '%'): pass --log-dir DIR"
      ;;
  esac
fi
LOG_DIR="$(abs_path "$LOG_DIR")"
sbatch_safe --log-dir "$LOG_DIR"
case "$LOG_DIR" in
  *%*) usage_error "--log-dir '$LOG_DIR' must not contain '%' (sbatch expands it)" ;;
esac
JOB_FILE="$LOG_DIR/$JOB_NAME.sbatch"

if [ "$NO_SUBMIT" -eq 0 ] && ! command -v sbatch >/dev/null 2>&1; then
  if [ "$DRY_RUN" -eq 1 ]; then
    warn "'sbatch' is not on PATH; printing the commands anyway (--dry-run)"
  else
    die "'sbatch' not found on PATH: run this on a login node of the SLURM cluster (or use --no-submit and submit the script yourself)"
  fi
fi

# --- the job script -------------------------------------------------------------------
if [ -n "$GPU_TYPE" ]; then
  gpu_count="$GPU_TYPE:$GPUS_PER_NODE"
else
  gpu_count="$GPUS_PER_NODE"
fi
if [ "$USE_GRES" -eq 1 ]; then
  gpu_line="--gres=gpu:$gpu_count"
else
  gpu_line="--gpus-per-node=$gpu_count"
fi
sbatch_lines=("--job-name=$JOB_NAME" "--nodes=$NODES" "--ntasks-per-node=$GPUS_PER_NODE"
  "$gpu_line")
if [ -n "$CPUS_PER_TASK" ]; then
  sbatch_lines+=("--cpus-per-task=$CPUS_PER_TASK")
fi
sbatch_lines+=("--time=$TIME_LIMIT" "--output=$LOG_DIR/%x-%j.out" --open-mode=append
  --dependency=singleton)
if [ -n "$PARTITION" ]; then sbatch_lines+=("--partition=$PARTITION"); fi
if [ -n "$ACCOUNT" ]; then sbatch_lines+=("--account=$ACCOUNT"); fi
if [ -n "$QOS" ]; then sbatch_lines+=("--qos=$QOS"); fi
sbatch_lines+=(${SBATCH_EXTRA[@]+"${SBATCH_EXTRA[@]}"})

header=""
for line in "${sbatch_lines[@]}"; do
  header="${header}#SBATCH $line
"
done
if [ "${#SETUP_LINES[@]}" -gt 0 ]; then
  setup_block="$(printf '%s\n' "${SETUP_LINES[@]}")"
else
  setup_block="# (none given; e.g. 'module load cuda/12.4' if the site's driver setup needs it)"
fi
env_lines=""
if [ "${#ENV_ASSIGNMENTS[@]}" -gt 0 ]; then
  for assignment in "${ENV_ASSIGNMENTS[@]}"; do
    env_lines="${env_lines}export ${assignment%%=*}=$(sq "${assignment#*=}")
"
  done
fi
train_words="python -m jaxcl.main $(sq "--config=$CONFIG") $(sq "--workdir=$WORKDIR")"
if [ "${#OVERRIDES[@]}" -gt 0 ]; then
  for word in "${OVERRIDES[@]}"; do
    train_words="$train_words $(sq "$word")"
  done
fi
srun_extra_words=""
if [ "${#SRUN_EXTRA[@]}" -gt 0 ]; then
  for word in "${SRUN_EXTRA[@]}"; do
    srun_extra_words="$srun_extra_words $(sq "$word")"
  done
fi

job_script="#!/usr/bin/env bash
# jaxcl on $NODES node(s) x $GPUS_PER_NODE GPU(s), one process per GPU; written by
# tpu_scripts/slurm_launch.sh. Submit (again, to resume from the newest checkpoint in
# the workdir) with: sbatch $(printf '%q' "$JOB_FILE")
# --ntasks-per-node must equal the GPUs per node: each process takes one GPU.
${header}
set -euo pipefail

# Site setup (--setup), without set -u: module systems (Lmod, Environment Modules) and
# conda's hooks read unset variables.
set +u
$setup_block
set -u

cd $(sq "$REPO_ROOT")
. $(sq "$VENV")/bin/activate
# Log lines reach the SLURM output file as they are written.
export PYTHONUNBUFFERED=1
# sbatch copies the submitting shell's environment: drop the settings that would
# override what jax.distributed.initialize() reads from SLURM (--env may set them).
unset JAX_COORDINATOR_ADDRESS JAX_NUM_PROCESSES JAX_PROCESS_ID JAX_LOCAL_DEVICE_IDS
${env_lines}workdir=$(sq "$WORKDIR")
"
job_script+="$(
  cat <<'EOF'
mkdir -p "$workdir"
nodes="${SLURM_JOB_NUM_NODES:-1}"
echo "==== jaxcl job ${SLURM_JOB_ID:-?} on $nodes node(s) (${SLURM_JOB_NODELIST:-?}), ${SLURM_NTASKS:-?} processes: $(date -u) ===="

# Every process writes its checkpoint shards to the workdir and reads all of them back
# on resume, so every node must see the same folder: check before training.
if [ "$nodes" -gt 1 ]; then
  marker="$workdir/.shared-check-${SLURM_JOB_ID:-0}"
  : >"$marker"
  if ! srun --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1 --kill-on-bad-exit=0 \
    bash -c '[ -e "$1" ] || { echo "jaxcl: node $(hostname) does not see $1" >&2; exit 1; }' \
    jaxcl-check "$marker"; then
    rm -f "$marker"
    echo "jaxcl: the workdir $workdir is not shared by all nodes of the job; put it on the cluster's shared filesystem" >&2
    exit 1
  fi
  rm -f "$marker"
fi

# One process per GPU. JAX gives each process the GPU numbered SLURM_LOCALID among
# those it sees, so no task may be bound to a subset of its node's GPUs (--gpu-bind=none).
# --kill-on-bad-exit: one failed process ends the step instead of leaving the others
# waiting in a collective. srun does not inherit --cpus-per-task since SLURM 22.05.
srun_args=(--kill-on-bad-exit=1 --gpu-bind=none --label)
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
  srun_args+=("--cpus-per-task=$SLURM_CPUS_PER_TASK")
fi
EOF
)"
job_script+="
srun_args+=($srun_extra_words )
set -- $train_words
printf '+ srun'
printf ' %q' \"\${srun_args[@]}\" \"\$@\"
printf '\\n'
srun \"\${srun_args[@]}\" \"\$@\""

# --- submit ---------------------------------------------------------------------------
sbatch_cmd=(sbatch --parsable "$JOB_FILE")
resume_cmd=("$0")
for word in ${ORIG_ARGS[@]+"${ORIG_ARGS[@]}"}; do
  case "$word" in
    --dry-run | --no-submit) ;;
    *) resume_cmd+=("$word") ;;
  esac
done

show_cmd mkdir -p "$LOG_DIR"
printf '# write the job script to %s\n' "$JOB_FILE"
if [ "$NO_SUBMIT" -eq 1 ]; then
  printf '# submit with:\n'
  printf '#  %s\n' "$(printf ' %q' sbatch "$JOB_FILE")"
else
  show_cmd "${sbatch_cmd[@]}"
fi
if [ "$DRY_RUN" -eq 1 ]; then
  printf '# The job script %s:\n' "$JOB_FILE"
  printf '%s\n' "$job_script" | sed 's/^/#   /'
  exit 0
fi

mkdir -p "$LOG_DIR"
printf '%s\n' "$job_script" >"$JOB_FILE.tmp"
mv "$JOB_FILE.tmp" "$JOB_FILE"
if [ "$NO_SUBMIT" -eq 1 ]; then
  log "wrote $JOB_FILE; submit it with: sbatch $(printf '%q' "$JOB_FILE")"
  exit 0
fi

out="$("${sbatch_cmd[@]}")"
job_id="${out%%;*}"
log_file="$LOG_DIR/$JOB_NAME-$job_id.out"
{
  echo "$SCRIPT_NAME: submitted job $job_id ($JOB_NAME): $NODES node(s) x $GPUS_PER_NODE GPU(s)"
  echo "  config:   $CONFIG"
  echo "  workdir:  $WORKDIR"
  echo "  state:    squeue -j $job_id"
  echo "  log:      tail -n 200 -F $(printf '%q' "$log_file")"
  echo "  cancel:   scancel $job_id"
  printf '  TensorBoard: tensorboard --logdir %q\n' "$WORKDIR"
  echo "  resume (time limit, crash, scancel): submit again; the trainer restores the newest"
  echo "  checkpoint in the workdir, and a job queued while this one runs waits for it:"
  printf '   %s\n' "$(printf ' %q' "${resume_cmd[@]}")"
} >&2
