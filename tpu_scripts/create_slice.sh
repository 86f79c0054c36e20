#!/usr/bin/env bash
# Creates a Cloud TPU VM slice for jaxcl with `gcloud compute tpus tpu-vm create`.
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ACCELERATOR_TYPE="${ACCELERATOR_TYPE:-v4-32}"
RUNTIME_VERSION="${RUNTIME_VERSION:-}"
CAPACITY=""
CREATE_EXTRA=()

usage() {
  cat <<EOF
Usage: $SCRIPT_NAME [options] [-- extra 'gcloud compute tpus tpu-vm create' flags]

Creates the TPU VM slice NAME in ZONE. A slice bills for every second it exists,
busy or idle, until delete_slice.sh removes it.

Options:
  -a, --accelerator-type TYPE  e.g. v4-32, v5litepod-16, v5p-32, v6e-16
                               [env ACCELERATOR_TYPE; default: v4-32]
  -v, --version VERSION        TPU runtime image [env RUNTIME_VERSION; default from TYPE:
                               v2/v3/v4 -> tpu-ubuntu2204-base, v5litepod -> v2-alpha-tpuv5-lite,
                               v5p -> v2-alpha-tpuv5, v6e -> v2-alpha-tpuv6e]
      --spot                   Spot capacity: much cheaper, can be preempted at any time
      --preemptible            legacy preemptible capacity (at most 24 hours)
      --reserved               use the project's TPU reservation
$COMMON_OPTIONS_HELP

Examples:
  $SCRIPT_NAME --name my-tpu --zone us-central2-b --accelerator-type v4-32 --spot
  ZONE=europe-west4-b $SCRIPT_NAME -a v5litepod-16 -- --network=my-net --labels=team=ssl
EOF
}

# default_runtime TYPE: the runtime image Google's guides name for a TPU generation.
default_runtime() {
  case "$1" in
    v2-* | v3-* | v4-*) echo tpu-ubuntu2204-base ;;
    v5litepod-*) echo v2-alpha-tpuv5-lite ;;
    v5p-*) echo v2-alpha-tpuv5 ;;
    v6e-*) echo v2-alpha-tpuv6e ;;
    *) return 1 ;;
  esac
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
    -a | --accelerator-type | --accelerator-type=*)
      opt_value "$@"
      ACCELERATOR_TYPE="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    -v | --version | --version=*)
      opt_value "$@"
      RUNTIME_VERSION="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --spot | --preemptible | --reserved)
      if [ -n "$CAPACITY" ] && [ "$CAPACITY" != "$1" ]; then
        usage_error "$CAPACITY and $1 exclude each other"
      fi
      CAPACITY="$1"
      shift
      ;;
    --)
      shift
      CREATE_EXTRA=("$@")
      break
      ;;
    *) usage_error "unknown argument: $1" ;;
  esac
done

validate_common
if ! printf '%s' "$ACCELERATOR_TYPE" | grep -Eq '^v[0-9]+[a-z]*-[0-9]+$'; then
  usage_error "invalid accelerator type '$ACCELERATOR_TYPE' (expected e.g. v4-32 or v5litepod-16)"
fi
if [ -z "$RUNTIME_VERSION" ]; then
  if ! RUNTIME_VERSION="$(default_runtime "$ACCELERATOR_TYPE")"; then
    usage_error "no default runtime image for '$ACCELERATOR_TYPE': pass --version (list them with 'gcloud compute tpus tpu-vm versions list --zone=$ZONE')"
  fi
fi

gcloud_location_args
cmd=("$GCLOUD" compute tpus tpu-vm create "$TPU_NAME" "${LOCATION_ARGS[@]}"
  "--accelerator-type=$ACCELERATOR_TYPE" "--version=$RUNTIME_VERSION")
if [ -n "$CAPACITY" ]; then
  cmd+=("$CAPACITY")
fi
if [ "${#CREATE_EXTRA[@]}" -gt 0 ]; then
  cmd+=("${CREATE_EXTRA[@]}")
fi

log "creating TPU slice '$TPU_NAME' ($ACCELERATOR_TYPE, runtime $RUNTIME_VERSION${CAPACITY:+, ${CAPACITY#--}}) in $ZONE"
log "it is billed until deleted: tpu_scripts/delete_slice.sh --name $TPU_NAME --zone $ZONE"
run "${cmd[@]}"

next=(tpu_scripts/setup_workers.sh --name "$TPU_NAME" --zone "$ZONE")
if [ -n "$PROJECT_ID" ]; then
  next+=(--project "$PROJECT_ID")
fi
log "next, copy jaxcl to every worker and install it:"
printf '  %s\n' "$(printf '%q ' "${next[@]}")" >&2
