#pragma once
/// \file fused.hpp
/// The training step without autograd, for MLPs on the CPU (issue 20): a forward pass that
/// keeps its activations in buffers it reuses, a backward pass written out by hand (three matrix
/// products per layer, straight into the parameters' gradient slots, which a dist::GradBucket
/// makes slices of one flat buffer), a vectorised tanh, global-norm gradient clipping and an Adam
/// step as plain loops over the parameters. Each replaces tens of small torch operations (their
/// dispatch, autograd bookkeeping and allocations), which at MAPPO's sizes cost more than the
/// matrix products themselves. The results equal autograd's and torch::optim::Adam's up to float
/// rounding (tests/agents/test_fused.cpp). Internal to agents/ (includes torch).

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "agents/nn.hpp"

namespace marlsched::nn {

/// tanh in place over n floats, vectorised (AVX-512 / AVX2 / SSE2, chosen at run time): about
/// six times faster than torch::tanh here. It computes (e^{2x}-1)/(e^{2x}+1) with its own
/// exponential (range reduction and a degree-7 polynomial), so it agrees with std::tanh to
/// 1.5e-7 absolute and 3e-7 relative (two to four float ulps) instead of torch's one ulp.
void tanh_inplace(float* x, std::int64_t n);

/// Makes `t` a float32 [rows, cols] buffer, allocating only when it is undefined or grows.
void ensure_shape(torch::Tensor& t, std::int64_t rows, std::int64_t cols);

/// One MLP's forward and backward pass without autograd (CPU, float32, contiguous rows). The
/// tape owns its buffers: a forward at the same row count allocates nothing.
class MlpTape {
 public:
  /// Output [rows, out] of `net` for inputs X [rows, in] (X must stay alive until backward()).
  /// The hidden layers use tanh_inplace(), so the output differs from net->forward(X) by float
  /// rounding only.
  const torch::Tensor& forward(const Mlp& net, const torch::Tensor& X);
  /// Backward pass of the last forward() for dL/d(output) `dy` [rows, out]: WRITES (does not
  /// add) every parameter's gradient; defines the gradients that are missing.
  void backward(const torch::Tensor& dy);

 private:
  const MlpImpl* net_ = nullptr;
  std::vector<torch::Tensor> out_;    // out_[i]: layer i's output (tanh applied but for the head)
  std::vector<torch::Tensor> delta_;  // gradient at each hidden layer's pre-activation
  torch::Tensor in_;
};

/// torch::nn::utils::clip_grad_norm_ in one pass: the global L2 norm of the gradients of
/// `params` (summed in double), every gradient scaled by max_norm / (norm + 1e-6) when that is
/// below 1; returns the norm before clipping. CPU float gradients (others: torch's function).
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

/// One step of `opt`, the same update as opt.step() (Kingma & Ba with torch's bias correction
/// and eps placement), as one loop per parameter. The moments stay in the optimizer's own state,
/// so saving and loading it are unchanged. Falls back to opt.step() for what the loop does not
/// cover: parameters off the CPU or not float32, amsgrad, weight decay.
void adam_step(torch::optim::Adam& opt);

}  // namespace marlsched::nn
