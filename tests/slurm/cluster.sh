#!/usr/bin/env bash
# A real Slurm for tests, on this host, owned by the calling test (Debian's slurm-wlm + munge):
#
#   source tests/slurm/cluster.sh
#   slurm_start DIR [CPUS]          one node: this host
#   slurm_start_nodes DIR N CPUS    N nodes, each a network namespace of this machine with its
#                                   own address and slurmd, joined by veth links to a bridge
#   sl sbatch ... / sl squeue ...   run a client command where it reaches slurmctld
#   slurm_stop                      kill everything and remove the namespaces (call it on EXIT)
#
# munged (own key and socket), slurmctld and slurmd(s) run in the foreground as children of the
# test, with state, spool, logs and ports under DIR; SLURM_CONF points the client commands at
# DIR/slurm.conf. A node may advertise more CPUs than this machine has
# (SlurmdParameters=config_overrides) so that 4-rank jobs fit on 2 cores.
#
# The multi-node cluster uses the addresses 10.213.0.0/24 inside namespaces this test creates
# (the bridge lives in a namespace of its own, too): no traffic leaves them. Processes enter a
# node's namespace with `nsenter --net` (not `ip netns exec`, which remounts /sys without the
# cgroup file systems slurmd reads).

slurm_log() { echo "[slurm] $*" >&2; }

slurm_free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

SLURM_PIDS=()
SLURM_NETNS=()
SLURM_CLIENT_NS=""

# sl CMD...: a Slurm client command (in the controller's namespace for a multi-node cluster).
sl() {
  if [ -n "$SLURM_CLIENT_NS" ]; then
    nsenter --net="/run/netns/$SLURM_CLIENT_NS" "$@"
  else
    "$@"
  fi
}

slurm_start_munge() {
  SLURM_DIR=$1
  mkdir -p "$SLURM_DIR"/{state,spool,log,munge}
  chmod 700 "$SLURM_DIR/munge"
  dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$SLURM_DIR/munge/munge.key"
  MUNGE_SOCKET=$SLURM_DIR/munge/munge.socket
  munged -F --force --key-file="$SLURM_DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
    --seed-file="$SLURM_DIR/munge/seed" > /dev/null 2>&1 &
  SLURM_PIDS+=($!)
}

# slurm_write_conf CONTROLLER NODE_LINES: slurm.conf with everything under SLURM_DIR.
slurm_write_conf() {
  local ctl=$1 nodes=$2 ctl_port d_port
  ctl_port=$(slurm_free_port)
  d_port=$(slurm_free_port)
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  cat > "$SLURM_CONF" <<CONF
ClusterName=marlsched-test
SlurmctldHost=$ctl
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
SchedulerParameters=sched_interval=1
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
$nodes
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
}

# slurm_wait_up N: waits until N nodes are idle.
slurm_wait_up() {
  local want=$1 i
  for i in $(seq 60); do
    if [ "$(sl sinfo -h -N -o %T 2> /dev/null | grep -cE '^(idle|mixed|allocated)')" -ge "$want" ]; then
      slurm_log "up: $(sl sinfo -h -o '%P %D nodes %T %N')"
      return 0
    fi
    sleep 0.5
  done
  slurm_log "did not come up; logs:"
  tail -n 20 "$SLURM_DIR"/log/* >&2
  return 1
}

slurm_start() {
  local cpus=${2:-4} host mem
  slurm_start_munge "$1"
  host=$(hostname -s)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  slurm_write_conf "$host" "NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN"
  slurmctld -D -i -f "$SLURM_CONF" > "$SLURM_DIR/log/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  slurmd -D -f "$SLURM_CONF" > "$SLURM_DIR/log/slurmd.out" 2>&1 &
  SLURM_PIDS+=($!)
  slurm_wait_up 1
}

slurm_start_nodes() {
  local n=$2 cpus=$3 tag=ms$$ i ns mem lines=""
  slurm_start_munge "$1"
  mem=$(awk -v n="$n" '/MemTotal/ {print int($2 / 1024 / 2 / n)}' /proc/meminfo)
  # node1..nodeN in namespaces ${tag}n1.., each with a veth to a bridge in namespace ${tag}br.
  ip netns add "${tag}br" || return 1
  SLURM_NETNS+=("${tag}br")
  ip -n "${tag}br" link add br0 type bridge || return 1
  ip -n "${tag}br" link set br0 up
  ip -n "${tag}br" link set lo up
  for i in $(seq "$n"); do
    ns=${tag}n$i
    ip netns add "$ns" || return 1
    SLURM_NETNS+=("$ns")
    ip link add "${tag}a$i" type veth peer name "${tag}b$i" || return 1
    ip link set "${tag}a$i" netns "$ns"
    ip link set "${tag}b$i" netns "${tag}br"
    ip -n "$ns" link set "${tag}a$i" name eth0
    ip -n "$ns" addr add "10.213.0.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip -n "${tag}br" link set "${tag}b$i" master br0
    ip -n "${tag}br" link set "${tag}b$i" up
    lines+="NodeName=node$i NodeAddr=10.213.0.$((10 + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
  done
  SLURM_CLIENT_NS=${tag}n1
  slurm_write_conf "$(hostname -s)(10.213.0.11)" "$lines"
  nsenter --net="/run/netns/${tag}n1" slurmctld -D -i -f "$SLURM_CONF" > "$SLURM_DIR/log/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  for i in $(seq "$n"); do
    # Every node reads the same slurm.conf, from a directory of its own whose mpi.conf gives the
    # PMIx plugin a per-node temp directory (real nodes have their own /tmp; these share one).
    mkdir -p "$SLURM_DIR/spool/node$i" "$SLURM_DIR/etc-node$i" "$SLURM_DIR/tmp-node$i"
    cp "$SLURM_CONF" "$SLURM_DIR/etc-node$i/slurm.conf"
    echo "PMIxCliTmpDirBase=$SLURM_DIR/tmp-node$i" > "$SLURM_DIR/etc-node$i/mpi.conf"
    # Its own host name too (a UTS namespace), as Open MPI names shared-memory segments by host.
    nsenter --net="/run/netns/${tag}n$i" unshare --uts /bin/sh -c \
      "hostname node$i && exec slurmd -D -N node$i -f '$SLURM_DIR/etc-node$i/slurm.conf'" \
      > "$SLURM_DIR/log/slurmd-node$i.out" 2>&1 &
    SLURM_PIDS+=($!)
  done
  slurm_wait_up "$n"
}

slurm_stop() {
  local p ns
  for p in "${SLURM_PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${SLURM_PIDS[@]}"; do wait "$p" 2> /dev/null || true; done
  for ns in "${SLURM_NETNS[@]}"; do
    # Job processes left in a namespace (none normally) would keep it alive: end them first.
    ip netns pids "$ns" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
    ip netns del "$ns" 2> /dev/null || true
  done
  SLURM_PIDS=()
  SLURM_NETNS=()
  SLURM_CLIENT_NS=""
}

# slurm_wait JOBID TIMEOUT_S: waits until the job (every array task) has left the queue.
slurm_wait() {
  local job=$1 timeout=$2 t=0
  while sl squeue -h -j "$job" 2> /dev/null | grep -q .; do
    sleep 1
    t=$((t + 1))
    if [ "$t" -ge "$timeout" ]; then
      slurm_log "job $job still queued after ${timeout}s: $(sl squeue -j "$job")"
      return 1
    fi
  done
}
