#include "dist/grad.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/serialize.hpp"

namespace marlsched::dist {

namespace {
std::int64_t total_numel(const std::vector<torch::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}
}  // namespace

GradBucket::GradBucket(std::vector<torch::Tensor> params) : params_(std::move(params)) {
  n_ = total_numel(params_);
  MARLSCHED_CHECK(n_ < (std::int64_t{1} << 31), "gradient buffer too large for one allreduce");
  const torch::Device dev = params_.empty() ? torch::Device(torch::kCPU) : params_[0].device();
  for (const auto& p : params_)
    MARLSCHED_CHECK(p.scalar_type() == torch::kFloat32 && p.device() == dev,
                    "gradient buckets hold float32 parameters on one device");
  flat_ = torch::zeros({std::max<std::int64_t>(n_, 1)},
                       torch::TensorOptions(torch::kFloat32).device(dev));
  data_ = flat_.data_ptr<float>();
  // MPI reads host memory: a device bucket reduces through a host copy (a CUDA-aware MPI could
  // take the device pointer; Open MPI as packaged is not built that way).
  if (!dev.is_cpu()) host_ = torch::empty_like(flat_, torch::TensorOptions().device(torch::kCPU));
  bind();
}

GradBucket::~GradBucket() = default;  // req_ waits for an allreduce still in flight

void GradBucket::bind() {
  torch::NoGradGuard guard;
  std::int64_t off = 0;
  for (const auto& p : params_) {
    float* slot = data_ + off;
    auto& g = p.mutable_grad();
    if (!g.defined() || g.data_ptr() != static_cast<void*>(slot) || !g.is_contiguous()) {
      // A plain tensor over the slice (not an autograd view, so optimizers may detach_ it); the
      // deleter holds the flat buffer alive as long as any gradient points into it.
      auto view = torch::from_blob(
          slot, p.sizes(), [keep = flat_](void*) {}, flat_.options());
      if (g.defined())
        view.copy_(g);
      else
        view.zero_();
      g = view;
    }
    off += p.numel();
  }
}

void GradBucket::zero() {
  MARLSCHED_CHECK(!req_.active(), "gradient bucket zeroed while its allreduce runs");
  bind();
  flat_.zero_();
  prescaled_ = 0;
}

void GradBucket::backward(const torch::Tensor& loss, const Comm& comm) {
  loss.backward(torch::full({}, seed(comm), loss.options()));
}

float GradBucket::seed(const Comm& comm) {
  MARLSCHED_CHECK(!req_.active(), "gradient bucket written while its allreduce runs");
  MARLSCHED_CHECK(prescaled_ == 0 || prescaled_ == comm.size(),
                  "gradient bucket scaled for two communicators");
  prescaled_ = comm.size();
  return 1.0f / static_cast<float>(comm.size());
}

std::int64_t GradBucket::average(const Comm& comm) {
  MARLSCHED_CHECK(!req_.active(), "gradient bucket averaged while its allreduce runs");
  bind();
  if (n_ > 0 && comm.size() > 1) {
    if (host_.defined()) host_.copy_(flat_);
    comm.allreduce_sum(mpi_buffer(), static_cast<int>(n_));
  }
  ranks_ = comm.size();
  finish();
  return n_;
}

void GradBucket::start(const Comm& comm) {
  MARLSCHED_CHECK(!req_.active(), "gradient bucket started twice");
  bind();
  ranks_ = comm.size();
  if (n_ == 0 || ranks_ == 1) return;
  if (host_.defined()) host_.copy_(flat_);
  req_ = comm.iallreduce_sum(mpi_buffer(), static_cast<int>(n_));
}

void GradBucket::finish() {
  req_.wait();
  if (ranks_ > 1 && n_ > 0 && host_.defined()) flat_.copy_(host_);
  if (ranks_ > 1 && prescaled_ != ranks_) flat_.mul_(1.0f / static_cast<float>(ranks_));
  ranks_ = 1;
}

std::int64_t average_gradients(const std::vector<torch::Tensor>& params, const Comm& comm) {
  GradBucket bucket(params);
  return bucket.average(comm);
}

void broadcast_parameters(const std::vector<torch::Tensor>& params, const Comm& comm) {
  torch::NoGradGuard guard;
  const std::int64_t n = total_numel(params);
  if (n == 0 || comm.size() == 1) return;
  std::vector<float> flat(static_cast<std::size_t>(n));
  std::int64_t off = 0;
  for (const auto& p : params) {
    auto c = p.detach().to(torch::kCPU).contiguous();
    std::memcpy(flat.data() + off, c.data_ptr<float>(), sizeof(float) * p.numel());
    off += p.numel();
  }
  comm.bcast(flat.data(), static_cast<int>(n), 0);
  off = 0;
  for (const auto& p : params) {
    p.copy_(torch::from_blob(flat.data() + off, p.sizes(), torch::kFloat32));
    off += p.numel();
  }
}

std::uint64_t parameter_digest(const std::vector<torch::Tensor>& params) {
  std::uint64_t h = kFnvOffset;
  for (const auto& p : params) {
    auto c = p.detach().to(torch::kCPU).contiguous();
    h = fnv1a64(c.data_ptr(), static_cast<std::size_t>(c.numel()) * c.element_size(), h);
  }
  return h;
}

bool parameters_identical(const std::vector<torch::Tensor>& params, const Comm& comm) {
  const std::uint64_t h = parameter_digest(params);
  const std::uint64_t lo = comm.allreduce_min(h);
  const std::uint64_t hi = comm.allreduce_max(h);
  return lo == hi && lo == h;
}

}  // namespace marlsched::dist
