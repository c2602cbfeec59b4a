#!/usr/bin/env bash
# Opt-in check of workflow/profiles/slurm against a real Slurm: install Debian's Slurm, start a
# throwaway one-node cluster on localhost, run the test configuration once through the profile
# and once locally (--cores 2), and require identical results. Needs root (apt-get, daemons).
#
#   bash tests/cluster/local_slurm.sh          # from the repository, venv active or ./.venv
#
# Environment (all optional):
#   LPPF_SLURM_CONFIGFILE  configuration to run            (default: .test/config/config.yaml)
#   LPPF_SLURM_SNAKEFILE   workflow to run                 (default: Snakefile)
#   LPPF_SLURM_TARGETS     targets (default: "s1 e4 v1 m1": Enron pipeline, both models, MCMC
#                          and CAVI, a data group wider than the node; "all": the whole
#                          configuration, which
#                          needs LPPF_SLURM_TIMEOUT=3600)
#   LPPF_SLURM_TIMEOUT     seconds allowed per Snakemake run (default: 1200)
#   LPPF_SLURM_KEEP=1      keep the scratch directory for inspection
#   LPPF_SLURM_SNAPSHOT=1  run a copy of src, workflow, config, .test taken at the start
#                          (lppf imported from it via PYTHONPATH), for trees edited meanwhile
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CODE=$REPO  # the code that runs: the repository or a snapshot of it
CONFIGFILE=${LPPF_SLURM_CONFIGFILE:+$(realpath -m "$LPPF_SLURM_CONFIGFILE")}
SNAKEFILE=${LPPF_SLURM_SNAKEFILE:+$(realpath -m "$LPPF_SLURM_SNAKEFILE")}
TIMEOUT=${LPPF_SLURM_TIMEOUT:-1200}
read -r -a TARGETS <<<"${LPPF_SLURM_TARGETS:-s1 e4 v1 m1}"
PIDFILE=/run/lppf-local-slurm.pids  # "pid name" of every daemon this script started
SLURM_CONF=/etc/slurm/slurm.conf
MARK="# Throwaway test cluster written by lppf tests/cluster/local_slurm.sh"
T0=$SECONDS
WORK=""
RUNNING=""  # PID of a running `timeout snakemake`, also its process group

say() { printf '[local_slurm %4ds] %s\n' "$((SECONDS - T0))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

# Wait up to $1 seconds until the command "${@:2}" succeeds.
wait_for() {
  local limit=$1
  shift
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < limit)) || return 1
    sleep 1
  done
}

# Stop exactly the daemons listed in $PIDFILE (TERM, then KILL), if still the same programs.
stop_recorded() {
  [[ -f $PIDFILE ]] || return 0
  local pid name _
  while read -r pid name; do
    [[ -d /proc/$pid && $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 20); do [[ -d /proc/$pid ]] || break; sleep 0.5; done
    if [[ -d /proc/$pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  done < <(tac "$PIDFILE")
  rm -f "$PIDFILE"
}

teardown() {
  local rc=$?
  trap - EXIT
  # A hung Snakemake ignores SIGTERM: kill its whole process group (timeout made one).
  if [[ -n $RUNNING ]]; then kill -KILL -- "-$RUNNING" 2>/dev/null || true; fi
  if [[ -f $PIDFILE ]] && scontrol ping >/dev/null 2>&1; then
    squeue -h -o %i | xargs -r scancel 2>/dev/null || true
    wait_for 30 bash -c '[[ -z $(squeue -h -o %i) ]]' || true
  fi
  stop_recorded
  if [[ -f $SLURM_CONF ]] && grep -qF "$MARK" "$SLURM_CONF"; then rm -f "$SLURM_CONF"; fi
  if [[ -n $WORK ]]; then
    rm -f "$WORK"/*.pid
    if [[ ${LPPF_SLURM_KEEP:-0} == 1 || $rc != 0 ]]; then
      say "scratch directory kept: $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  if [[ $rc == 0 ]]; then say "PASS (total $((SECONDS - T0)) s)"; else say "FAIL (exit $rc)"; fi
  exit "$rc"
}

# Start "${@:2}" in its own session, detached from this shell; record its PID as daemon $1.
start_daemon() {
  local name=$1
  shift
  nohup setsid "$@" >"$WORK/$name.out" 2>&1 </dev/null &
  echo "$! $name" >>"$PIDFILE"
}

install_slurm() {
  if command -v slurmctld slurmd sbatch munged >/dev/null; then
    say "Slurm and munge already installed"
    return
  fi
  say "installing slurmctld slurmd slurm-client munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq -o DPkg::Lock::Timeout=120 --no-install-recommends \
    slurmctld slurmd slurm-client munge >"$WORK/apt.log" 2>&1 ||
    { tail -n 20 "$WORK/apt.log"; fail "apt-get install failed"; }
}

install_plugin() {
  if [[ -z ${VIRTUAL_ENV:-} ]]; then
    [[ -f $REPO/.venv/bin/activate ]] || fail "no virtual environment active and no $REPO/.venv"
    # shellcheck disable=SC1091
    . "$REPO/.venv/bin/activate"
  fi
  if ! python -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
    say "pip install -e '.[slurm]' into $VIRTUAL_ENV"
    python -m pip install -q -e "$REPO[slurm]"
  fi
  say "$(python -m pip list 2>/dev/null | grep -E '^snakemake(-executor-plugin-slurm)? ' |
    tr -s ' ' | paste -sd ',')"
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    say "using the running munged"
    return
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  start_daemon munged setpriv --reuid=munge --regid=munge --init-groups \
    "$(command -v munged)" --foreground --force
  wait_for 30 bash -c 'munge -n </dev/null | unmunge' || fail "munged did not start"
}

# Slurm's clients inside jobs (srun) read only the default path, so the file goes there; an
# existing configuration that this script did not write is never touched.
write_slurm_conf() {
  local host cpus mem node
  if [[ -e $SLURM_CONF ]] && ! grep -qF "$MARK" "$SLURM_CONF"; then
    fail "$SLURM_CONF exists and was not written by this script; not touching it"
  fi
  host=$(hostname -s)
  cpus=$(getconf _NPROCESSORS_ONLN)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  node=$(slurmd -C 2>/dev/null | head -n 1 | sed -E 's/ RealMemory=[0-9]+//')
  [[ $node == NodeName=* ]] || node="NodeName=$host CPUs=$cpus"
  mkdir -p "$WORK/state" "$WORK/spool"
  mkdir -p "$(dirname "$SLURM_CONF")"
  cat >"$SLURM_CONF.tmp" <<EOF
$MARK
ClusterName=lppftest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=600
MailProg=/bin/true
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
$node NodeAddr=127.0.0.1 RealMemory=$mem State=UNKNOWN
PartitionName=lppftest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$SLURM_CONF.tmp" "$SLURM_CONF"
}

start_slurm() {
  if (exec 3<>/dev/tcp/127.0.0.1/6817) 2>/dev/null; then
    fail "port 6817 is in use: another slurmctld runs here; not touching it"
  fi
  start_daemon slurmctld slurmctld -D -i
  wait_for 60 bash -c 'scontrol ping | grep -q UP' ||
    { tail -n 20 "$WORK/slurmctld.log"; fail "slurmctld did not come up"; }
  start_daemon slurmd slurmd -D
  wait_for 60 bash -c '[[ $(sinfo -h -o %T) == idle ]]' ||
    { sinfo; tail -n 20 "$WORK/slurmd.log"; fail "node did not become idle"; }
  say "one-node cluster up: $(sinfo -h -o '%P %D node(s) %c CPUs %m MB %T')"
}

snapshot_code() {
  CODE=$WORK/code
  mkdir -p "$CODE"
  tar -C "$REPO" --exclude=__pycache__ -cf - src workflow envs Snakefile config .test | tar -C "$CODE" -xf -
  export PYTHONPATH=$CODE/src${PYTHONPATH:+:$PYTHONPATH}
  say "running a snapshot of the code: $CODE"
}

# Digest of the code and configuration, to tell when they were edited during the check.
code_digest() {
  find "$CODE/src" "$CODE/workflow" "$SNAKEFILE" "$CONFIGFILE" -type f \
    -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 cat | sha256sum
}

# Run Snakemake on the configuration in a fresh working directory $1; extra arguments follow.
run_workflow() {
  local wd=$1
  shift
  mkdir -p "$wd"
  ln -sfn "$CODE/config" "$wd/config"
  # In the background, so that a signal to this script is handled at once (see teardown).
  timeout -s KILL "$TIMEOUT" snakemake "${TARGETS[@]}" --snakefile "$SNAKEFILE" --directory "$wd" \
    --configfile "$CONFIGFILE" "$@" >"$wd.log" 2>&1 &
  RUNNING=$!
  if ! wait "$RUNNING"; then
    RUNNING=""
    tail -n 40 "$wd.log"
    fail "snakemake $* failed or timed out (${TIMEOUT} s): $wd.log"
  fi
  RUNNING=""
}

run_slurm() {
  # The profile as a user would edit it: only the two placeholders filled in.
  mkdir -p "$WORK/profile"
  sed -e 's/EDIT-ME-partition/lppftest/' -e 's/EDIT-ME-account/lppftest/' \
    "$REPO/workflow/profiles/slurm/config.yaml" >"$WORK/profile/config.yaml"
  grep -q "EDIT-ME-" "$WORK/profile/config.yaml" && fail "unfilled placeholder in the profile"
  # Poll every 5 s instead of 40 s: only to keep this check short.
  # --cores: the node's CPUs, the profile's value for this cluster.
  run_workflow "$WORK/slurm" --profile "$WORK/profile" --cores "$(sinfo -h -o %c)" \
    --slurm-init-seconds-before-status-checks 5
}

check_slurm_jobs() {
  local states n
  states=$(squeue -h --states=all -o '%T' | sort | uniq -c | paste -sd ',')
  n=$(squeue -h --states=all -o %i | wc -l)
  say "Slurm jobs: $n ($states)"
  ((n > 0)) || fail "no job went through Slurm"
  [[ $(squeue -h --states=all -o %T | sort -u) == COMPLETED ]] || fail "not all jobs COMPLETED"
  say "numba threads logged by the Slurm jobs (count, line):"
  find "$WORK/slurm" -path '*/.snakemake' -prune -o -name '*.log' -print0 |
    xargs -0 -r grep -h "numba threads" | sort | uniq -c || true
}

main() {
  [[ $(id -u) == 0 ]] || fail "needs root (apt-get, Slurm daemons)"
  trap teardown EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if [[ -f $PIDFILE ]]; then
    say "stopping daemons left by an earlier, killed run: $(paste -sd' ' "$PIDFILE")"
    stop_recorded
  fi
  WORK=$(mktemp -d /tmp/lppf-slurm.XXXXXX)
  chmod 0755 "$WORK"
  if [[ ${LPPF_SLURM_SNAPSHOT:-0} == 1 ]]; then snapshot_code; fi
  CONFIGFILE=${CONFIGFILE:-$CODE/.test/config/config.yaml}
  SNAKEFILE=${SNAKEFILE:-$CODE/Snakefile}
  [[ -f $CONFIGFILE ]] || fail "configuration not found: $CONFIGFILE"
  [[ -f $SNAKEFILE ]] || fail "workflow not found: $SNAKEFILE"
  say "config $CONFIGFILE, targets: ${TARGETS[*]}, scratch $WORK"
  install_slurm
  install_plugin
  write_slurm_conf
  start_munge
  start_slurm
  local t=$SECONDS digest
  digest=$(code_digest)
  say "setup done; local run (--cores 2)"
  run_workflow "$WORK/local" --cores 2
  say "local run: $((SECONDS - t)) s; Slurm run (--profile workflow/profiles/slurm)"
  t=$SECONDS
  run_slurm
  say "Slurm run: $((SECONDS - t)) s"
  check_slurm_jobs
  if ! python "$REPO/tests/cluster/compare_results.py" "$WORK/local" "$WORK/slurm"; then
    [[ $(code_digest) == "$digest" ]] || say "note: src/, workflow/ or the config changed meanwhile"
    fail "Slurm results differ from the local run's"
  fi
}

main "$@"
