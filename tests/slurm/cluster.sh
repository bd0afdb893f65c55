#!/usr/bin/env bash
# A real single-node Slurm for tests, on this host, owned by the calling test:
#   source tests/slurm/cluster.sh; slurm_start DIR [CPUS]; ...sbatch/squeue/scontrol...; slurm_stop
# munged (own key and socket), slurmctld and slurmd from Debian's slurm-wlm run in the
# foreground as children of the test, with state, spool, logs and ports under DIR; SLURM_CONF
# points the client commands at DIR/slurm.conf. slurm_stop kills them all (call it on EXIT).
# CPUS (default 4) is what the node advertises: more than this machine's cores is allowed
# (SlurmdParameters=config_overrides) so that 4-rank jobs fit on 2 cores.

slurm_log() { echo "[slurm] $*" >&2; }

slurm_free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

slurm_start() {
  SLURM_DIR=$1
  local cpus=${2:-4}
  local host
  host=$(hostname -s)
  mkdir -p "$SLURM_DIR"/{state,spool,log,munge}
  chmod 700 "$SLURM_DIR/munge"
  dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$SLURM_DIR/munge/munge.key"
  MUNGE_SOCKET=$SLURM_DIR/munge/munge.socket
  munged -F --force --key-file="$SLURM_DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
    --seed-file="$SLURM_DIR/munge/seed" > /dev/null 2>&1 &
  SLURM_PIDS=($!)
  local ctl_port d_port mem
  ctl_port=$(slurm_free_port)
  d_port=$(slurm_free_port)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  cat > "$SLURM_CONF" <<CONF
ClusterName=marlsched-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  slurmctld -D -i -f "$SLURM_CONF" > "$SLURM_DIR/log/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  slurmd -D -f "$SLURM_CONF" > "$SLURM_DIR/log/slurmd.out" 2>&1 &
  SLURM_PIDS+=($!)

  local i
  for i in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      slurm_log "up: $(sinfo -h -o '%P %D %T %c cpus')"
      return 0
    fi
    sleep 0.5
  done
  slurm_log "did not come up; logs:"
  tail -n 20 "$SLURM_DIR"/log/* >&2
  return 1
}

slurm_stop() {
  local p
  for p in "${SLURM_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2> /dev/null || true; done
  for p in "${SLURM_PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2> /dev/null || true; done
  SLURM_PIDS=()
}

# slurm_wait JOBID TIMEOUT_S: waits until the job (every array task) has left the queue and
# prints its final state(s) from scontrol.
slurm_wait() {
  local job=$1 timeout=$2 t=0
  while squeue -h -j "$job" 2> /dev/null | grep -q .; do
    sleep 1
    t=$((t + 1))
    if [ "$t" -ge "$timeout" ]; then
      slurm_log "job $job still queued after ${timeout}s: $(squeue -j "$job")"
      return 1
    fi
  done
}
