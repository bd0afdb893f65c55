#pragma once
/// \file grad.hpp
/// Gradient averaging across ranks. libtorch's C++ API has no DistributedDataParallel, so this
/// is ours: a GradBucket makes every gradient of a parameter list a slice of one contiguous
/// float buffer, so autograd accumulates straight into it and ONE in-place MPI_Allreduce per
/// update (not one per tensor, and no packing) averages them all. The bucket can also start the
/// allreduce without waiting (MPI_Iallreduce), so that it overlaps other work, e.g. the critic's
/// gradients travel while the actor's backward pass runs.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "dist/comm.hpp"

namespace marlsched::dist {

/// The gradients of a parameter list as slices of one flat buffer (see the file comment), on
/// the parameters' device; a GPU bucket goes through a host copy for MPI.
/// Binding keeps any gradient a parameter already has; a parameter without one gets zeros, so
/// every rank reduces identical layouts. If something replaces a bound gradient (say, an
/// optimizer that sets gradients to none), the next call copies it back in and rebinds.
class GradBucket {
 public:
  GradBucket() = default;
  explicit GradBucket(std::vector<torch::Tensor> params);
  GradBucket(GradBucket&&) = default;
  GradBucket& operator=(GradBucket&&) = default;
  GradBucket(const GradBucket&) = delete;
  GradBucket& operator=(const GradBucket&) = delete;
  ~GradBucket();

  /// Sets every gradient to zero in place (one fill of the buffer; keeps the binding).
  void zero();
  /// loss.backward() with the gradient seed 1/size instead of 1, so that the ranks' sum is
  /// already their mean and average() need not pass over the buffer again (the same result, bit
  /// for bit, at power-of-two rank counts: scaling by 2^-k commutes with rounding). Call zero()
  /// first: gradients accumulated without the seed would be scaled wrongly.
  void backward(const torch::Tensor& loss, const Comm& comm);
  /// For gradients written by hand instead of by backward() (nn::MlpTape): returns the seed they
  /// must be scaled by (1/size, as backward() applies) and records it, so that finish() does not
  /// scale them again. Call zero() first.
  float seed(const Comm& comm);
  /// Averages the gradients over the ranks of `comm`: one in-place MPI_Allreduce, then a scale by
  /// 1/size unless backward() applied it already. Returns the number of floats reduced.
  std::int64_t average(const Comm& comm);
  /// Starts the same reduction without waiting (MPI_Iallreduce); finish() waits and scales.
  /// Between the two, the gradients must not be read or written.
  void start(const Comm& comm);
  void finish();

 private:
  void bind();
  std::vector<torch::Tensor> params_;
  torch::Tensor flat_, host_;  // host_: staging for MPI when flat_ is on a GPU
  float* mpi_buffer() { return host_.defined() ? host_.data_ptr<float>() : data_; }
  float* data_ = nullptr;
  std::int64_t n_ = 0;
  Request req_;  ///< the allreduce in flight (its destructor waits for it)
  int ranks_ = 1;
  int prescaled_ = 0;  // the rank count backward() scaled for since zero(); 0: none
};

/// One-off form: averages the gradients of `params` through a temporary bucket (which leaves
/// them bound to its buffer, kept alive by the gradients). Returns the number of floats reduced.
std::int64_t average_gradients(const std::vector<torch::Tensor>& params, const Comm& comm);

/// Copies rank 0's parameter values to every rank (one flattened broadcast).
void broadcast_parameters(const std::vector<torch::Tensor>& params, const Comm& comm);

/// FNV-1a hash of the parameters' bytes: equal on all ranks iff parameters are bitwise equal.
std::uint64_t parameter_digest(const std::vector<torch::Tensor>& params);

/// True when every rank holds bitwise-identical parameters.
bool parameters_identical(const std::vector<torch::Tensor>& params, const Comm& comm);

}  // namespace marlsched::dist
