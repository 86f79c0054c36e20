#!/usr/bin/env bash
# Deletes a Cloud TPU VM slice with `gcloud compute tpus tpu-vm delete`.
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ASSUME_YES=0
ASYNC=0

usage() {
  cat <<EOF
Usage: $SCRIPT_NAME [options]

Deletes the TPU VM slice NAME in ZONE, with the workers' disks: their checkouts,
venvs and ~/$REMOTE_LOGS go with it. The run's workdir on Cloud Storage (checkpoints,
TensorBoard events) stays, and keeps costing storage until you remove it.

Options:
  -y, --yes    do not ask for confirmation (passes --quiet to gcloud)
      --async  return without waiting for the deletion to finish
$COMMON_OPTIONS_HELP

Example:
  $SCRIPT_NAME --name my-tpu --zone us-central2-b
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
    -y | --yes)
      ASSUME_YES=1
      shift
      ;;
    --async)
      ASYNC=1
      shift
      ;;
    *) usage_error "unknown argument: $1" ;;
  esac
done

validate_common
gcloud_location_args
cmd=("$GCLOUD" compute tpus tpu-vm delete "$TPU_NAME" "${LOCATION_ARGS[@]}")
if [ "$ASYNC" -eq 1 ]; then
  cmd+=(--async)
fi
if [ "$ASSUME_YES" -eq 1 ]; then
  cmd+=(--quiet)
fi

log "deleting TPU slice '$TPU_NAME' in $ZONE (gcloud asks to confirm unless --yes)"
run "${cmd[@]}"
log "the GCS workdirs are not touched; list your slices with: gcloud compute tpus tpu-vm list --zone=$ZONE"
