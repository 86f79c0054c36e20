# shellcheck shell=bash
# The scripts that source this file use the variables it sets.
# shellcheck disable=SC2034
#
# Shared helpers for the tpu_scripts/*.sh entry points. Sourced, never run.
#
# Written for bash 3.2+ (the macOS system bash): no mapfile, no ${x,,}, no
# associative arrays, and possibly-empty arrays are expanded as ${a[@]+"${a[@]}"}
# because bash < 4.4 treats "${a[@]}" of an empty array as unset under `set -u`.

if [ -z "${BASH_VERSION:-}" ]; then
  echo "tpu_scripts: run these scripts with bash" >&2
  exit 2
fi

SCRIPT_NAME="$(basename "$0")"
TPU_SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$TPU_SCRIPTS_DIR/.." && pwd)"

# GCLOUD picks the gcloud binary (the self-test points PATH at a stub instead).
GCLOUD="${GCLOUD:-gcloud}"
DRY_RUN=0
# The variable names follow Google's Cloud TPU guides (TPU_NAME, ZONE, PROJECT_ID,
# ACCELERATOR_TYPE, RUNTIME_VERSION), so an environment set up from them just works.
_default_user="$(printf '%s' "${USER:-user}" | tr 'A-Z_.' 'a-z--' | tr -cd 'a-z0-9-')"
TPU_NAME="${TPU_NAME:-jaxcl-${_default_user:-user}}"
ZONE="${ZONE:-${CLOUDSDK_COMPUTE_ZONE:-}}"
PROJECT_ID="${PROJECT_ID:-}"
GCLOUD_EXTRA=()

# Where each worker keeps the checkout, the virtual environment and the run logs.
# Relative paths are relative to the remote user's home directory.
REMOTE_DIR="${JAXCL_REMOTE_DIR:-jaxcl}"
REMOTE_VENV="${JAXCL_REMOTE_VENV:-jaxcl-venv}"
REMOTE_LOGS="${JAXCL_REMOTE_LOGS:-jaxcl-logs}"

log() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
warn() { printf '%s: warning: %s\n' "$SCRIPT_NAME" "$*" >&2; }
die() {
  printf '%s: error: %s\n' "$SCRIPT_NAME" "$*" >&2
  exit 1
}
usage_error() {
  printf '%s: error: %s\n' "$SCRIPT_NAME" "$*" >&2
  printf "Run '%s --help' for usage.\n" "$SCRIPT_NAME" >&2
  exit 2
}

# opt_value "$@": reads the value of the option in $1, given as `--opt=VALUE` or
# `--opt VALUE`. Sets OPTVAL, and OPTSHIFT to the number of words used.
opt_value() {
  case "$1" in
    --*=*)
      OPTVAL="${1#*=}"
      OPTSHIFT=1
      ;;
    *)
      if [ "$#" -lt 2 ]; then
        usage_error "option $1 needs a value"
      fi
      OPTVAL="$2"
      OPTSHIFT=2
      ;;
  esac
}

COMMON_OPTIONS_HELP="Common options:
  -n, --name NAME        TPU VM (slice) name [env TPU_NAME; default: $TPU_NAME]
  -z, --zone ZONE        zone, e.g. us-central2-b [env ZONE or CLOUDSDK_COMPUTE_ZONE; required]
  -p, --project PROJECT  Google Cloud project [env PROJECT_ID; default: gcloud's core/project]
      --gcloud-arg ARG   extra flag for every gcloud call of this script (repeatable), e.g.
                         --gcloud-arg=--verbosity=debug. Workers without external IPs:
                         --gcloud-arg=--internal-ip for setup_workers.sh and launch.sh (their
                         ssh/scp take it; create, delete and list do not), and
                         'create_slice.sh ... -- --internal-ips' to create such a slice
      --dry-run          print the gcloud commands instead of running them
  -h, --help             show this help"

# common_opt "$@": handles one common option. Returns 1 when $1 is not one; else
# sets COMMON_SHIFT to the number of words it used.
common_opt() {
  case "$1" in
    -n | --name | --name=*)
      opt_value "$@"
      TPU_NAME="$OPTVAL"
      ;;
    -z | --zone | --zone=*)
      opt_value "$@"
      ZONE="$OPTVAL"
      ;;
    -p | --project | --project=*)
      opt_value "$@"
      PROJECT_ID="$OPTVAL"
      ;;
    --gcloud-arg | --gcloud-arg=*)
      opt_value "$@"
      GCLOUD_EXTRA+=("$OPTVAL")
      ;;
    --dry-run)
      DRY_RUN=1
      OPTSHIFT=1
      ;;
    *) return 1 ;;
  esac
  COMMON_SHIFT="$OPTSHIFT"
}

# validate_common: checks the values every script needs and that gcloud exists.
validate_common() {
  if ! command -v "$GCLOUD" >/dev/null 2>&1; then
    if [ "$DRY_RUN" -eq 1 ]; then
      warn "'$GCLOUD' is not on PATH; printing the commands anyway (--dry-run)"
    else
      die "'$GCLOUD' not found on PATH. Install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install), then run 'gcloud auth login' and 'gcloud config set project PROJECT_ID'."
    fi
  fi
  if [ -z "$TPU_NAME" ]; then
    usage_error "no TPU name: pass --name or set TPU_NAME"
  fi
  # Cloud TPU node IDs: lower-case letters, digits and hyphens, starting with a letter.
  if ! printf '%s' "$TPU_NAME" | grep -Eq '^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'; then
    usage_error "invalid TPU name '$TPU_NAME': use lower-case letters, digits and '-', starting with a letter, at most 63 characters"
  fi
  if [ -z "$ZONE" ]; then
    usage_error "no zone: pass --zone or set ZONE (which zones offer which TPU types: https://cloud.google.com/tpu/docs/regions-zones, or 'gcloud compute tpus locations list')"
  fi
  if ! printf '%s' "$ZONE" | grep -Eq '^[a-z]+-[a-z]+[0-9]+-[a-z]$'; then
    usage_error "invalid zone '$ZONE' (expected something like us-central2-b)"
  fi
  if [ -n "$PROJECT_ID" ] && ! printf '%s' "$PROJECT_ID" | grep -Eq '^[a-z0-9.:-]+$'; then
    usage_error "invalid project id '$PROJECT_ID'"
  fi
}

# gcloud_location_args: prints nothing; fills LOCATION_ARGS with --zone/--project and
# the user's --gcloud-arg flags, in that order.
gcloud_location_args() {
  LOCATION_ARGS=("--zone=$ZONE")
  if [ -n "$PROJECT_ID" ]; then
    LOCATION_ARGS+=("--project=$PROJECT_ID")
  fi
  if [ "${#GCLOUD_EXTRA[@]}" -gt 0 ]; then
    LOCATION_ARGS+=("${GCLOUD_EXTRA[@]}")
  fi
}

# warn_if_no_ssh_agent: `gcloud ... ssh --worker=all` connects to several workers at
# once, and gcloud's own help asks for the key in an ssh-agent first.
warn_if_no_ssh_agent() {
  if [ -z "${SSH_AUTH_SOCK:-}" ] && [ "$DRY_RUN" -eq 0 ]; then
    warn "no ssh-agent: for --worker=all gcloud advises 'eval \$(ssh-agent) && ssh-add ~/.ssh/google_compute_engine' first"
  fi
}

# show_cmd ARGV...: prints the command as one line that bash can paste back in.
show_cmd() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
}

# run ARGV...: prints the command, then runs it unless --dry-run.
run() {
  show_cmd "$@"
  if [ "$DRY_RUN" -eq 1 ]; then
    return 0
  fi
  "$@"
}

# sq STRING: quotes STRING for any POSIX shell with single quotes ('it'\''s'). Used for
# the values embedded in the scripts that run on the workers, which stay readable.
sq() {
  local s="$1" q="'\\''"
  printf "'%s'" "${s//\'/$q}"
}

# remote_path PATH: a shell expression for PATH on a worker; relative paths are
# taken from the remote user's home directory.
remote_path() {
  case "$1" in
    /*) sq "$1" ;;
    *)
      # The literal $HOME is meant: it expands on the worker.
      # shellcheck disable=SC2016
      printf '"$HOME"/%s' "$(sq "$1")"
      ;;
  esac
}

# check_remote_dir WHAT PATH: rejects paths that are, or could climb to, the home
# directory or the root, since the worker scripts replace these directories whole.
check_remote_dir() {
  case "$2" in
    "" | / | . | "~"*)
      usage_error "$1 must name a directory such as 'jaxcl' or '/mnt/disk/jaxcl', got '$2'"
      ;;
  esac
  case "/$2/" in
    */./* | */../*)
      usage_error "$1 must not contain '.' or '..' components, got '$2'"
      ;;
  esac
}

# remote_script_note SCRIPT: in --dry-run, shows the script that --command runs on
# each worker in readable form (the gcloud line above has it in one escaped line).
remote_script_note() {
  if [ "$DRY_RUN" -eq 1 ]; then
    printf '# The --command script above, as each worker runs it:\n'
    printf '%s\n' "$1" | sed 's/^/#   /'
  fi
}
