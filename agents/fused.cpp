#include "agents/fused.hpp"

#include <dlfcn.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

#include <ATen/Parallel.h>

#include "core/error.hpp"

namespace marlsched::nn {

// One clone per instruction set, picked by the loader (GCC and clang); `omp simd` vectorises the
// loop at every optimisation level.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MARLSCHED_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MARLSCHED_SIMD_CLONES
#endif

namespace {

// Intra-op threads (--threads > 1): the elementwise loops split their elements, the bias
// gradients their columns, over torch's OpenMP threads (the pool OpenBLAS's OpenMP build runs
// the products on), in blocks of at least this many floats; below it, or at one thread, they run
// inline. Every element (and every bias column's sum over the rows, in row order) is computed as
// at one thread, so the results do not depend on the thread count.
constexpr std::int64_t kGrain = 16384;

MARLSCHED_SIMD_CLONES
void tanh_block(float* x, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    // tanh saturates to 1 in float beyond |x| = 9; the clamp keeps 2^k in range.
    const float v = x[i];
    const float a = v < -9.f ? -9.f : (v > 9.f ? 9.f : v);  // NaN stays NaN
    // e^{2a} = 2^k · e^g with k = round(2a·log2 e), |g| <= ln2 / 2.
    const float t = a * 2.8853900817779268f;
    const float k = (t + 12582912.f) - 12582912.f;  // round to nearest (1.5·2^23 trick)
    const float g = (t - k) * 0.69314718055994531f;
    // q = e^g - 1 (Taylor to g^7: error below 1e-9 on |g| <= 0.35), kept apart from the 1 so
    // that small |a| keeps its relative precision.
    float q = 1.f / 5040;
    q = q * g + 1.f / 720;
    q = q * g + 1.f / 120;
    q = q * g + 1.f / 24;
    q = q * g + 1.f / 6;
    q = q * g + 0.5f;
    q = q * g + 1.f;
    q = q * g;
    const float kk = k == k ? k : 0.f;  // NaN: any exponent (q carries the NaN), no UB
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(kk) + 127)
                               << 23;
    float s;  // 2^k
    std::memcpy(&s, &bits, sizeof s);
    const float em1 = s * q + (s - 1.f);  // e^{2a} - 1
    x[i] = em1 / (em1 + 2.f);
  }
}

}  // namespace

void tanh_inplace(float* x, std::int64_t n) {
  at::parallel_for(0, n, kGrain, [&](std::int64_t b, std::int64_t e) { tanh_block(x + b, e - b); });
}

void ensure_shape(torch::Tensor& t, std::int64_t rows, std::int64_t cols) {
  if (!t.defined())
    t = torch::empty({rows, cols}, torch::kFloat32);
  else if (t.size(0) != rows || t.size(1) != cols)
    t.resize_({rows, cols});
}

namespace {
bool cpu_float(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.is_contiguous();
}

MARLSCHED_SIMD_CLONES
double sum_squares(const float* g, std::int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * g[i];
  return s;
}

MARLSCHED_SIMD_CLONES
void adam_loop(float* w, const float* g, float* m, float* v, std::int64_t n, float b1, float b2,
               float inv_sqrt_bc2, float eps, float step) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    m[i] = m[i] * b1 + (1.f - b1) * g[i];
    v[i] = v[i] * b2 + (1.f - b2) * g[i] * g[i];
    w[i] -= step * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
  }
}

torch::Tensor& grad_slot(const torch::Tensor& p) {
  auto& g = p.mutable_grad();
  if (!g.defined()) g = torch::zeros_like(p);
  return g;
}

// The BLAS that libtorch itself calls (libblas.so.3, whichever the alternatives system chose),
// called directly: a torch operation costs microseconds of dispatch, which at a policy step's
// handful of rows is more than the product. Looked up at run time, as core/blas.cpp does; the
// two trailing arguments are the Fortran lengths of the character arguments.
using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                       const float*, const int*, const float*, const int*, const float*, float*,
                       const int*, std::size_t, std::size_t);
Sgemm sgemm() {
  static const Sgemm f = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"));
  return f;
}

/// Row-major C [m, n] = op(A) op(B) + beta·C, op(X) = X or its transpose; lda, ldb, ldc are the
/// row lengths of A, B and C as stored.
void gemm(bool ta, bool tb, int m, int n, int k, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc) {
  if (m == 0 || n == 0) return;
  if (const Sgemm f = sgemm()) {  // column-major: C^T = op(B)^T op(A)^T
    const float one = 1.f;
    f(tb ? "T" : "N", ta ? "T" : "N", &n, &m, &k, &one, B, &ldb, A, &lda, &beta, C, &ldc, 1, 1);
    return;
  }
  // No sgemm_ in the process (a libtorch built on another BLAS): torch's own product.
  auto a = torch::from_blob(const_cast<float*>(A), {ta ? k : m, ta ? m : k});
  auto b = torch::from_blob(const_cast<float*>(B), {tb ? n : k, tb ? k : n});
  auto c = torch::from_blob(C, {m, n});
  at::addmm_out(c, c, ta ? a.t() : a, tb ? b.t() : b, beta, 1.f);
}

// The key of a parameter's entry in torch::optim::Optimizer::state(): the TensorImpl's address
// as text in libtorch 1.13 (written, as torch::optim::Adam writes it, through an ostream), the
// address itself where a newer libtorch keys the map by pointer.
template <typename Key>
Key state_key(c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << impl;
    return s.str();
  } else {
    return Key(impl);
  }
}
}  // namespace

const torch::Tensor& MlpTape::forward(const Mlp& net, const torch::Tensor& X) {
  torch::NoGradGuard no_grad;
  MARLSCHED_CHECK(cpu_float(X), "MlpTape: inputs must be contiguous float32 on the CPU");
  net_ = net.get();
  in_ = X;
  const auto& layers = net_->layers;
  out_.resize(layers.size() + 1);
  delta_.resize(layers.size());
  const int rows = static_cast<int>(X.size(0));
  const float* x = X.data_ptr<float>();
  int width = static_cast<int>(X.size(1));
  for (std::size_t i = 0; i <= layers.size(); ++i) {
    const auto& lin = i == layers.size() ? net_->head : layers[i];
    const int out = static_cast<int>(lin->weight.size(0));
    ensure_shape(out_[i], rows, out);
    float* y = out_[i].data_ptr<float>();
    const float* b = lin->bias.data_ptr<float>();
    for (int r = 0; r < rows; ++r) std::copy(b, b + out, y + static_cast<std::ptrdiff_t>(r) * out);
    gemm(false, true, rows, out, width, x, width, lin->weight.data_ptr<float>(), width, 1.f, y,
         out);  // y = x W^T + b
    if (i < layers.size()) tanh_inplace(y, out_[i].numel());
    x = y;
    width = out;
  }
  return out_.back();
}

void MlpTape::backward(const torch::Tensor& dy) {
  torch::NoGradGuard no_grad;
  MARLSCHED_CHECK(net_ != nullptr, "MlpTape::backward before forward");
  MARLSCHED_CHECK(cpu_float(dy) && dy.sizes() == out_.back().sizes(),
                  "MlpTape::backward: the gradient must match the output");
  const auto& layers = net_->layers;
  const std::size_t L = layers.size();
  const int rows = static_cast<int>(dy.size(0));
  // Layer i (the head is i = L) maps h_{i-1} (in_ for i = 0) to out_[i]; d is dL/d(its
  // pre-activation), [rows, out].
  const float* d = dy.data_ptr<float>();
  for (std::size_t i = L + 1; i-- > 0;) {
    const auto& lin = i == L ? net_->head : layers[i];
    const int out = static_cast<int>(lin->weight.size(0));
    const int in = static_cast<int>(lin->weight.size(1));
    const float* h = (i == 0 ? in_ : out_[i - 1]).data_ptr<float>();
    gemm(true, false, out, in, rows, d, out, h, in, 0.f, grad_slot(lin->weight).data_ptr<float>(),
         in);  // dW = d^T h
    float* gb = grad_slot(lin->bias).data_ptr<float>();
    // db = column sums of d: threads take blocks of columns, each summed over the rows in order.
    at::parallel_for(0, out, std::max<std::int64_t>(1, kGrain / std::max(rows, 1)),
                     [&](std::int64_t b, std::int64_t e) {
                       std::fill(gb + b, gb + e, 0.f);
                       for (int r = 0; r < rows; ++r) {
                         const float* dr = d + static_cast<std::ptrdiff_t>(r) * out;
                         for (std::int64_t j = b; j < e; ++j) gb[j] += dr[j];
                       }
                     });
    if (i == 0) break;
    auto& dh = delta_[i - 1];
    ensure_shape(dh, rows, in);
    float* g = dh.data_ptr<float>();
    gemm(false, false, rows, in, out, d, out, lin->weight.data_ptr<float>(), in, 0.f, g,
         in);  // dh = d W
    const float* hv = out_[i - 1].data_ptr<float>();
    at::parallel_for(0, dh.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t j = b; j < e; ++j) g[j] *= 1.f - hv[j] * hv[j];  // tanh' = 1 - tanh²
    });
    d = g;
  }
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  for (const auto& p : params)
    if (p.grad().defined() && !cpu_float(p.grad()))
      return torch::nn::utils::clip_grad_norm_(params, max_norm);
  double ss = 0;
  for (const auto& p : params)
    if (p.grad().defined()) ss += sum_squares(p.grad().data_ptr<float>(), p.grad().numel());
  const double norm = std::sqrt(ss);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    torch::NoGradGuard no_grad;
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().mul_(coef);
  }
  return norm;
}

void adam_step(torch::optim::Adam& opt) {
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
    bool loop = !o.amsgrad() && o.weight_decay() == 0;
    for (const auto& p : group.params()) loop = loop && cpu_float(p);
    if (!loop) {
      opt.step();
      return;
    }
  }
  torch::NoGradGuard no_grad;
  auto& states = opt.state();
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto key =
          state_key<typename std::decay_t<decltype(states)>::key_type>(p.unsafeGetTensorImpl());
      auto it = states.find(key);
      if (it == states.end()) {  // as torch::optim::Adam creates it on a first step
        auto s = std::make_unique<torch::optim::AdamParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        it = states.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<torch::optim::AdamParamState&>(*it->second);
      MARLSCHED_CHECK(cpu_float(s.exp_avg()) && cpu_float(s.exp_avg_sq()) && cpu_float(p.grad()),
                      "adam_step: optimizer state is not contiguous float32 on the CPU");
      s.step(s.step() + 1);
      const double bc1 = 1 - std::pow(beta1, static_cast<double>(s.step()));
      const double bc2 = 1 - std::pow(beta2, static_cast<double>(s.step()));
      float *w = p.data_ptr<float>(), *m = s.exp_avg().data_ptr<float>(),
            *v = s.exp_avg_sq().data_ptr<float>();
      const float* g = p.grad().data_ptr<float>();
      const auto b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2),
                 inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2)),
                 eps = static_cast<float>(o.eps()), step = static_cast<float>(o.lr() / bc1);
      at::parallel_for(0, p.numel(), kGrain / 4, [&](std::int64_t b, std::int64_t e) {
        adam_loop(w + b, g + b, m + b, v + b, e - b, b1, b2, inv_sqrt_bc2, eps, step);
      });
    }
  }
}

}  // namespace marlsched::nn
