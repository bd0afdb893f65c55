# Sourced by the launch scripts: Open MPI settings for a single machine.
# Root is allowed (containers, CI); more ranks than cores are allowed (oversubscription); the
# shared-memory single-copy mechanism is off because it needs ptrace rights containers lack.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# An optimized BLAS (OpenBLAS, installed by install-deps.sh) starts one thread per core in every
# rank unless told otherwise; several ranks per node would then oversubscribe the cores. Each
# rank sets its BLAS to --threads at start; this sizes the pool it starts with.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} BLIS_NUM_THREADS=${BLIS_NUM_THREADS:-1}
MARLSCHED_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MARLSCHED_BUILD=${MARLSCHED_BUILD:-$MARLSCHED_ROOT/build}
