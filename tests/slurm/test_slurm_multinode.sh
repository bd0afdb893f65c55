#!/usr/bin/env bash
# marlsched across two Slurm nodes: each node is a network namespace of this machine with its
# own address (10.213.0.11, .12 on a bridge), host name and slurmd; slurmctld runs in node1's.
# One training job of 4 ranks, 2 per node, launched by `marlsched slurm --nodes 2` with
# `srun --mpi=pmix`: ranks on the same node talk through shared memory, ranks on different
# nodes over TCP between the namespaces. The job must complete on both nodes and reproduce the
# metrics of the same run started with mpirun on one host.
source "$(dirname "$0")/../launch/common.sh" "$@"
source "$(dirname "$0")/cluster.sh"
cd "$WORK"
trap 'slurm_stop; rm -rf "$WORK"' EXIT
slurm_start_nodes "$WORK/slurm" 2 2 || fail "the two-node Slurm did not start (needs root: ip netns, veth, bridge)"
ARGS=(--envs-per-rank 1 --rollout-steps 24 --iterations 3 --quiet --no-eval-after)
# TCP between nodes only on the namespaces' network.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=10.213.0.0/24
sl "$BIN" slurm "${ARGS[@]}" --nodes 2 --run-dir two > two.sub
jid=$(sed -n 's/^submitted job \([0-9]*\):.*/\1/p' two.sub)
[ -n "$jid" ] || fail "no job id: $(cat two.sub)"
grep -q "4 ranks on 2 node(s)" two.sub || fail "layout: $(cat two.sub)"
slurm_wait "$jid" 240 || fail "the two-node job did not finish"
info=$(sl scontrol -o show job "$jid")
grep -q "JobState=COMPLETED" <<<"$info" || fail "job: $info; $(cat two/slurm-"$jid".out)"
grep -q "NodeList=node\[1-2\]" <<<"$info" || fail "the job did not span both nodes: $info"
grep -q "parameters identical on all ranks: yes" "two/slurm-$jid.out" || fail "$(cat "two/slurm-$jid.out")"
pass "a 4-rank training job ran on 2 Slurm nodes (network namespaces, TCP between them)"
unset OMPI_MCA_btl_tcp_if_include
export OMPI_MCA_btl=self,vader
mpi 4 "$BIN" train "${ARGS[@]}" --run-dir one > one.log
cmp one/metrics.csv two/metrics.csv || fail "the two-node run's metrics differ from the one-host run"
pass "the two-node run reproduces the one-host mpirun run's metrics exactly"
