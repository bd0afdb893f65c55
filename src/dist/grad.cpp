#include "dist/grad.hpp"

#include <cstring>

namespace marlsched::dist {

namespace {
std::int64_t total_numel(const std::vector<torch::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}
}  // namespace

std::int64_t average_gradients(const std::vector<torch::Tensor>& params, const Comm& comm) {
  torch::NoGradGuard guard;
  const std::int64_t n = total_numel(params);
  if (n == 0) return 0;
  MARLSCHED_CHECK(n < (std::int64_t{1} << 31), "gradient buffer too large for one allreduce");
  // Pack with raw memcpy (no per-tensor torch ops on the hot path), reduce once, unpack.
  thread_local std::vector<float> flat;
  flat.resize(static_cast<std::size_t>(n));
  std::int64_t off = 0;
  for (const auto& p : params) {
    MARLSCHED_CHECK(p.scalar_type() == torch::kFloat32, "only float32 parameters are supported");
    auto& g = p.mutable_grad();
    if (!g.defined()) g = torch::zeros_like(p);
    if (!g.is_contiguous()) g = g.contiguous();
    std::memcpy(flat.data() + off, g.data_ptr<float>(),
                sizeof(float) * static_cast<std::size_t>(p.numel()));
    off += p.numel();
  }
  if (comm.size() > 1) comm.allreduce_sum(flat.data(), static_cast<int>(n));
  const float inv = 1.0f / static_cast<float>(comm.size());
  off = 0;
  for (const auto& p : params) {
    float* g = p.mutable_grad().data_ptr<float>();
    const float* src = flat.data() + off;
    for (std::int64_t i = 0; i < p.numel(); ++i) g[i] = src[i] * inv;
    off += p.numel();
  }
  return n;
}

void broadcast_parameters(const std::vector<torch::Tensor>& params, const Comm& comm) {
  torch::NoGradGuard guard;
  const std::int64_t n = total_numel(params);
  if (n == 0 || comm.size() == 1) return;
  std::vector<float> flat(static_cast<std::size_t>(n));
  std::int64_t off = 0;
  for (const auto& p : params) {
    auto c = p.detach().contiguous();
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
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& p : params) {
    auto c = p.detach().contiguous();
    const auto* b = static_cast<const unsigned char*>(c.data_ptr());
    const std::size_t bytes = static_cast<std::size_t>(c.numel()) * c.element_size();
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ULL;
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
