#!/usr/bin/env bash
# Copies jaxcl to every worker of a TPU slice and installs it with jax[tpu] in a venv.
set -euo pipefail

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPO_URL=""
REF=""
PYTHON_VERSION="${JAXCL_PYTHON_VERSION:-3.11}"
EXTRAS="train"
JAX_SPEC=""
EXTRA_PKGS=()
SMOKE_TEST=1

usage() {
  cat <<EOF
Usage: $SCRIPT_NAME [options]

Puts the jaxcl code on every worker of the slice (all at once, --worker=all) and
installs it there, editable, with jax[tpu], in a virtual environment:

  code  ~/$REMOTE_DIR    either a 'git archive' of REF (default HEAD) of this checkout,
                        copied with 'gcloud compute tpus tpu-vm scp', or, with --repo-url,
                        a fresh 'git fetch' of URL at REF done by each worker
  venv  ~/$REMOTE_VENV   Python $PYTHON_VERSION made by uv (TPU images ship Python 3.10,
                        older than jax>=0.7 supports), with 'pip install -e .[$EXTRAS]'
                        and jax[tpu] pinned as in pyproject.toml

Then every worker runs 'import jax; jax.device_count()' together, which checks
that all hosts see the whole slice. Rerun after each commit you want to train.

Options:
      --repo-url URL    clone URL on the workers instead of copying this checkout
                        (a private repo needs credentials on every worker)
      --ref REF         commit, branch or tag to ship [default: HEAD; with --repo-url:
                        the remote's default branch]
      --remote-dir DIR  checkout on each worker, relative to home [default: $REMOTE_DIR]
      --venv DIR        virtual environment on each worker [default: $REMOTE_VENV]
      --python VERSION  Python for the venv, made again if it was made for another [env JAXCL_PYTHON_VERSION; default: $PYTHON_VERSION]
      --extras LIST     jaxcl extras to install, comma-separated, '' for none [default: $EXTRAS]
      --jax-spec SPEC   jax requirement [default: jax[tpu] with pyproject.toml's jax pin]
      --pip PKG         also install PKG (repeatable), e.g. --pip gcsfs
      --skip-check      skip the jax.device_count() check at the end
$COMMON_OPTIONS_HELP

Examples:
  $SCRIPT_NAME --name my-tpu --zone us-central2-b
  $SCRIPT_NAME --repo-url https://github.com/ORG/jaxcl.git --ref v0.1.0
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
    --repo-url | --repo-url=*)
      opt_value "$@"
      REPO_URL="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --ref | --ref=*)
      opt_value "$@"
      REF="$OPTVAL"
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
    --python | --python=*)
      opt_value "$@"
      PYTHON_VERSION="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --extras | --extras=*)
      opt_value "$@"
      EXTRAS="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --jax-spec | --jax-spec=*)
      opt_value "$@"
      JAX_SPEC="$OPTVAL"
      shift "$OPTSHIFT"
      ;;
    --pip | --pip=*)
      opt_value "$@"
      EXTRA_PKGS+=("$OPTVAL")
      shift "$OPTSHIFT"
      ;;
    --skip-check)
      SMOKE_TEST=0
      shift
      ;;
    *) usage_error "unknown argument: $1" ;;
  esac
done

validate_common
check_remote_dir --remote-dir "$REMOTE_DIR"
check_remote_dir --venv "$REMOTE_VENV"
if ! printf '%s' "$PYTHON_VERSION" | grep -Eq '^3\.[0-9]+(\.[0-9]+)?$'; then
  usage_error "invalid --python '$PYTHON_VERSION' (expected e.g. 3.11)"
fi
if ! printf '%s' "$EXTRAS" | grep -Eq '^[A-Za-z0-9_,.-]*$'; then
  usage_error "invalid --extras '$EXTRAS' (expected e.g. train or train,test)"
fi
gcloud_location_args
warn_if_no_ssh_agent

# What the workers install from their checkout.
if [ -n "$EXTRAS" ]; then
  jaxcl_req=".[$EXTRAS]"
else
  jaxcl_req="."
fi
pkg_words=""
if [ "${#EXTRA_PKGS[@]}" -gt 0 ]; then
  for pkg in "${EXTRA_PKGS[@]}"; do
    pkg_words="$pkg_words $(sq "$pkg")"
  done
fi

if [ -n "$REPO_URL" ]; then
  fetch_mode=clone
  tarball_name=""
  log "each worker fetches $REPO_URL at ${REF:-its default branch}"
else
  fetch_mode=tarball
  REF="${REF:-HEAD}"
  if ! git -C "$REPO_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    die "$REPO_ROOT is not a git checkout: pass --repo-url URL to clone on the workers instead"
  fi
  if ! sha="$(git -C "$REPO_ROOT" rev-parse --short "$REF^{commit}" 2>/dev/null)"; then
    usage_error "--ref '$REF' is not a commit of $REPO_ROOT"
  fi
  if [ "$REF" = HEAD ] && [ -n "$(git -C "$REPO_ROOT" status --porcelain 2>/dev/null)" ]; then
    warn "this checkout has uncommitted or untracked files; 'git archive' ships only commit $sha"
  fi
  tarball_name="jaxcl-src-$sha.tar.gz"
  log "shipping commit $sha of $REPO_ROOT to every worker"
fi

# The script each worker runs: variable assignments with every value quoted, then a
# fixed body. gcloud runs it with the remote login shell (bash on TPU VM images).
remote_script="set -euo pipefail
repo=$(remote_path "$REMOTE_DIR")
venv=$(remote_path "$REMOTE_VENV")
pid_file=$(remote_path "$REMOTE_LOGS")/job.pid
fetch_mode=$fetch_mode
tarball=$(sq "$tarball_name")
repo_url=$(sq "$REPO_URL")
ref=$(sq "${REF:-HEAD}")
python_version=$(sq "$PYTHON_VERSION")
jaxcl_req=$(sq "$jaxcl_req")
jax_spec=$(sq "$JAX_SPEC")
extra_pkgs=($pkg_words )
smoke_test=$SMOKE_TEST
"
remote_script+="$(
  cat <<'EOF'
cd "$HOME"
host="$(hostname)"
# Replacing the code under a running trainer would break it (launch.sh writes job.pid).
if [ -s "$pid_file" ] && pid="$(cat "$pid_file")" && [ -r "/proc/$pid/cmdline" ] &&
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q jaxcl; then
  echo "jaxcl setup [$host]: a jaxcl run (pid $pid) is going; stop it first with launch.sh --stop" >&2
  exit 1
fi
stage="$repo.incoming"
rm -rf "$stage"
mkdir -p "$stage"
if [ "$fetch_mode" = tarball ]; then
  tar -xzf "$tarball" -C "$stage"
else
  git -C "$stage" init --quiet
  git -C "$stage" remote add origin "$repo_url"
  git -C "$stage" fetch --quiet --depth 1 origin "$ref"
  git -C "$stage" checkout --quiet --detach FETCH_HEAD
fi
touch "$stage/.jaxcl-setup"
if [ -e "$repo" ] && [ ! -e "$repo/.jaxcl-setup" ]; then
  echo "jaxcl setup [$host]: $repo exists but setup_workers.sh did not make it; move it away or pass --remote-dir" >&2
  exit 1
fi
rm -rf "$repo"
mv "$stage" "$repo"
echo "jaxcl setup [$host]: code in $repo"

# uv provides a Python that jax accepts: the TPU images' python3 is 3.10.
export PATH="$HOME/.local/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --user --quiet uv ||
    python3 -m pip install --user --quiet --break-system-packages uv
fi
# A venv this script made remembers the --python it was made for: asking for another makes
# it again. One without the marker (the user's own, or from before the marker) is kept.
if [ -x "$venv/bin/python" ] && [ -f "$venv/.jaxcl-python" ] &&
  [ "$(cat "$venv/.jaxcl-python")" != "$python_version" ]; then
  echo "jaxcl setup [$host]: $venv was not made for Python $python_version; making it again"
  rm -rf "$venv"
elif [ -x "$venv/bin/python" ] && [ ! -f "$venv/.jaxcl-python" ]; then
  echo "jaxcl setup [$host]: $venv was not made by setup_workers.sh; kept, its Python unchecked" >&2
fi
if [ ! -x "$venv/bin/python" ]; then
  uv venv --quiet --python "$python_version" "$venv"
  printf '%s\n' "$python_version" >"$venv/.jaxcl-python"
fi
cd "$repo"
if [ -z "$jax_spec" ]; then
  jax_spec="jax[tpu]$(sed -n 's/^[[:space:]]*"jax\([<>=!~][^"]*\)".*/\1/p' pyproject.toml | head -n 1)"
fi
echo "jaxcl setup [$host]: installing -e $jaxcl_req $jax_spec ${extra_pkgs[*]:-}"
uv pip install --quiet --python "$venv/bin/python" -e "$jaxcl_req" "$jax_spec" ${extra_pkgs[@]+"${extra_pkgs[@]}"}
# Removed only now: gcloud retries a dropped ssh session, which reruns this script.
if [ "$fetch_mode" = tarball ]; then
  rm -f "$HOME/$tarball"
fi
if [ "$smoke_test" = 1 ]; then
  # All workers run this at once, like the check in Google's guide to JAX on TPU slices.
  timeout 600 "$venv/bin/python" -c 'import jax; print(f"jaxcl setup: process {jax.process_index()} of {jax.process_count()} sees {jax.local_device_count()} local and {jax.device_count()} global {jax.default_backend()} devices")'
fi
EOF
)"

if [ "$fetch_mode" = tarball ]; then
  tmpdir="$(mktemp -d)"
  trap 'rm -rf "$tmpdir"' EXIT
  run git -C "$REPO_ROOT" archive --format=tar.gz -o "$tmpdir/$tarball_name" "$REF"
  run "$GCLOUD" compute tpus tpu-vm scp "$tmpdir/$tarball_name" "$TPU_NAME:$tarball_name" \
    --worker=all "${LOCATION_ARGS[@]}"
fi
run "$GCLOUD" compute tpus tpu-vm ssh "$TPU_NAME" --worker=all "${LOCATION_ARGS[@]}" \
  --command="$remote_script"
remote_script_note "$remote_script"

log "next, start a run on all workers (the workdir must be on GCS):"
printf '  tpu_scripts/launch.sh --name %q --zone %q CONFIG gs://BUCKET/RUN [--config.KEY=VALUE ...]\n' \
  "$TPU_NAME" "$ZONE" >&2
