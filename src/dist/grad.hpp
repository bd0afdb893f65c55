#pragma once
/// \file grad.hpp
/// Gradient averaging across ranks. libtorch's C++ API has no DistributedDataParallel, so this
/// is ours: all gradients of a parameter list are packed into one contiguous float buffer and
/// averaged with ONE MPI_Allreduce per update (not one per tensor), then unpacked.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "dist/comm.hpp"

namespace marlsched::dist {

/// Averages the gradients of `params` over all ranks of `comm` in one flattened allreduce.
/// Parameters without a gradient contribute zeros (so every rank packs identical layouts).
/// Returns the number of floats reduced.
std::int64_t average_gradients(const std::vector<torch::Tensor>& params, const Comm& comm);

/// Copies rank 0's parameter values to every rank (one flattened broadcast).
void broadcast_parameters(const std::vector<torch::Tensor>& params, const Comm& comm);

/// FNV-1a hash of the parameters' bytes: equal on all ranks iff parameters are bitwise equal.
std::uint64_t parameter_digest(const std::vector<torch::Tensor>& params);

/// True when every rank holds bitwise-identical parameters.
bool parameters_identical(const std::vector<torch::Tensor>& params, const Comm& comm);

}  // namespace marlsched::dist
