#include "agents/es/es.hpp"
#include "agents/model_archive.hpp"
#include "core/clock.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "agents/nn.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "dist/grad.hpp"

namespace marlsched {

void EsConfig::bind(OptionBinder& b) {
  b.group("Agent: ES (augmented random search with common random numbers)");
  b.add("es-hidden", hidden, "hidden layer sizes of the policy (empty: linear, as ARS)").positive();
  b.choice("es-actor", actor, {{"agent", EsActor::kAgent}, {"targets", EsActor::kTargets}},
           "policy input: agent (own observation, every site's public fields, the agent id; grows "
           "with the agent count) or targets (one net scores each (mode, target) of the env's "
           "targeted actions from the own observation and the target's features, e.g. geodc)");
  b.add("es-lr", lr, "step size α").learning_rate();
  b.add("es-sigma", sigma, "perturbation scale σ").positive();
  b.add("es-top", top, "share of the directions (largest paired differences) used per update")
      .greater_than(0)
      .at_most(1);
  b.add("es-normalize", normalize, "standardise inputs by running moments (ARS V2)");
  b.add("es-init-scale", init_scale, "standard deviation of the initial output weights")
      .at_least(0);
  b.add("es-imitate", imitate,
        "a baseline of the env that the linear policy first imitates (DAgger), then ES improves "
        "(empty: none)");
  b.add("es-imitate-iterations", imitate_iterations,
        "DAgger rounds (one episode per env copy each) before the ES steps")
      .in(0, 1000);
  b.add("es-imitate-l2", imitate_l2, "weight decay of the imitation fit").at_least(0);
  b.add("es-base", base,
        "a baseline of the env that the policy follows unless its logits overrule it by "
        "--es-base-margin (residual policy search; empty: none)");
  b.add("es-base-margin", base_margin,
        "logit added to each head's decision of the --es-base baseline")
      .positive();
}

void EsConfig::validate() const {
  check_declared(*this);
  MARLSCHED_REQUIRE(imitate.empty() == (imitate_iterations == 0),
                    "--es-imitate and --es-imitate-iterations go together: a teacher and the "
                    "DAgger rounds that imitate it (got '"
                        << imitate << "' and " << imitate_iterations << ")");
  MARLSCHED_REQUIRE(imitate.empty() || hidden.empty(),
                    "--es-imitate fits a linear policy: leave --es-hidden empty");
  MARLSCHED_REQUIRE(base.empty() || imitate.empty(),
                    "--es-base and --es-imitate exclude each other: the policy starts as the "
                    "--es-base baseline (got '"
                        << base << "' and '" << imitate << "')");
}

void EsConfig::check_env(const EnvSpec& spec) const {
  MARLSCHED_REQUIRE(spec.episode_length > 0, "es runs whole episodes per iteration; env '"
                                                 << spec.name
                                                 << "' declares no fixed episode length");
  MARLSCHED_REQUIRE(actor != EsActor::kTargets || spec.num_targets() > 0,
                    "--es-actor targets needs an env with a targeted action space (geodc); '"
                        << spec.name << "' has none: use --es-actor agent");
}

namespace {
constexpr std::uint64_t kEsStream = 0xE5;
}  // namespace

struct Es::Impl {
  EsConfig cfg;
  const dist::Comm& comm;
  EnvSpec spec;
  // --es-actor targets: T targets per agent, each scored from (own observation, target row of R
  // values) into `modes` logits per head; `in` is then d + R, the width of one scored row.
  // A factored action space (EnvSpec::action_heads of a targeted env: one (mode, target) per
  // class of work) is scored head by head: H heads of hn actions each, H·hn logits (`nl`), and
  // the action is each head's best, encoded as the env's flat index. Without heads H = 1.
  bool per_target;
  int T, R, modes, H, hn, nl;
  int n, first, k, e, d, pub, in, na;
  std::uint64_t seed;
  std::vector<int> sizes;        // in, hidden..., outputs per scored row
  std::vector<float> theta;      // per layer: weight [out][in] row-major, then bias [out]
  std::vector<double> moments;   // count, sum[in], sum of squares[in] over every visited input
  std::vector<double> pending;   // the same for this iteration (this rank)
  std::vector<float> mu, sd;     // frozen normalisation
  std::vector<float> noise;      // [pairs][P]: this iteration's directions
  std::vector<float> perturbed;  // [copies][P]
  bool ready = false, training = false;
  std::int64_t iteration = 0;
  std::vector<double> fitness;
  std::vector<char> finished;
  std::vector<float> x, xn, h0, h1, out;  // out: one row's logits
  std::vector<float> pre, shared;  // a row's first-layer pre-activations; a world's shared part
  std::vector<float> mo;           // --es-actor targets: one target's mode outputs
  // Imitation (--es-imitate): the teacher, its labels so far (raw inputs [sample][in] and
  // actions) and the accuracy of the last fit.
  std::unique_ptr<Policy> teacher;
  std::vector<int> teacher_actions;
  std::vector<float> demo_x;
  std::vector<std::int32_t> demo_a;
  double imitation_accuracy = 0;
  // --es-base: the baseline and its actions at this step.
  std::unique_ptr<Policy> base;
  std::vector<int> base_actions;

  bool imitating() const { return iteration < cfg.imitate_iterations; }

  /// Fits the linear θ to the labels (softmax cross-entropy + l2/2 |W|², full-batch Adam from
  /// the current θ); every rank sums its gradient over the ranks, so θ stays identical.
  void fit_imitation();

  Impl(const EsConfig& c, const dist::Comm& cm, const EnvSpec& spec_, int n_, int first_, int k_,
       int e_, std::uint64_t s)
      : cfg(c),
        comm(cm),
        spec(spec_),
        per_target(c.actor == EsActor::kTargets),
        T(per_target ? spec_.num_targets() : 1),
        R(per_target ? nn::target_row_dim(spec_) : 0),
        modes(per_target ? spec_.num_modes() : spec_.num_actions()),
        H(factored_heads(spec_)),
        hn(H > 1 ? spec_.action_heads.back() : spec_.num_actions()),
        nl(H * hn),
        n(n_),
        first(first_),
        k(k_),
        e(e_),
        d(spec_.obs_dim()),
        pub(spec_.num_public),
        in(per_target ? spec_.obs_dim() + R : nn::agent_input_dim(spec_, n_)),
        na(spec_.num_actions()),
        seed(s) {
    sizes.push_back(in);
    for (int h : cfg.hidden) sizes.push_back(h);
    // Outputs per scored row: per target, `modes` per head; per agent, every head's logits.
    sizes.push_back(per_target ? modes * H : nl);
    std::size_t p = 0;
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l)
      p += static_cast<std::size_t>(sizes[l + 1]) * static_cast<std::size_t>(sizes[l] + 1);
    theta.assign(p, 0.f);
    // Hidden layers N(0, 1/fan-in) (unit-scale pre-activations for standardised inputs); the
    // output layer N(0, init_scale²), so that the first logits are small and the perturbations
    // decide the first actions; biases 0. Every rank draws the same θ from the run's seed.
    Rng init(derive_seed(seed, {kEsStream, 0x1417}));
    std::size_t off = 0;
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
      const int fan_in = sizes[l], out = sizes[l + 1];
      const double scale = l + 2 == sizes.size() ? cfg.init_scale : 1.0 / std::sqrt(fan_in);
      for (int i = 0; i < out * fan_in; ++i)
        theta[off + static_cast<std::size_t>(i)] = static_cast<float>(scale * init.normal());
      off += static_cast<std::size_t>(out) * static_cast<std::size_t>(fan_in + 1);
    }
    moments.assign(static_cast<std::size_t>(1 + 2 * in), 0.0);
    pending = moments;
    mu.assign(static_cast<std::size_t>(in), 0.f);
    sd.assign(static_cast<std::size_t>(in), 1.f);
    fitness.assign(static_cast<std::size_t>(e), 0.0);
    finished.assign(static_cast<std::size_t>(e), 0);
    x.resize(static_cast<std::size_t>(per_target ? nn::target_input_dim(spec) : in));
    xn.resize(static_cast<std::size_t>(in));
    int widest = nl;
    for (int s2 : sizes) widest = std::max(widest, s2);
    h0.resize(static_cast<std::size_t>(widest));
    h1.resize(h0.size());
    out.resize(static_cast<std::size_t>(nl));
    mo.resize(static_cast<std::size_t>(sizes.back()));
  }

  /// Heads that ES scores separately: a targeted env's action_heads (each a (mode, target)
  /// decision), else 1 (the flat action space, lstcb's heads included).
  static int factored_heads(const EnvSpec& sp) {
    return sp.targets.empty() || sp.action_heads.empty() ? 1
                                                         : static_cast<int>(sp.action_heads.size());
  }

  /// The action of the head logits `lg` (nl values): each head's best, encoded as the env's
  /// flat index (head 0 the most significant).
  int best_action(const float* lg) const {
    int a = 0;
    for (int h = 0; h < H; ++h) {
      const float* seg = lg + static_cast<std::size_t>(h) * static_cast<std::size_t>(hn);
      a = a * hn + static_cast<int>(std::max_element(seg, seg + hn) - seg);
    }
    return a;
  }

  /// The flat actions' logits (na values) of the head logits: the sum of each head's logit of
  /// its part of the action, so that their argmax is best_action()'s.
  std::vector<float> flat_logits(const float* lg) const {
    std::vector<float> flat(lg, lg + hn);
    for (int h = 1; h < H; ++h) {
      std::vector<float> next;
      next.reserve(flat.size() * static_cast<std::size_t>(hn));
      for (float f : flat)
        for (int j = 0; j < hn; ++j) next.push_back(f + lg[static_cast<std::size_t>(h * hn + j)]);
      flat.swap(next);
    }
    return flat;
  }

  std::size_t params() const { return theta.size(); }
  int pairs() const { return e / kCopyGroup; }

  /// Runs the layers after the first from its pre-activations `pre` (sizes[1] values) into
  /// `out` (tanh hidden layers, linear output). Plain loops rather than torch or BLAS: every copy
  /// acts with its own parameters, one row at a time, and at these sizes (the default linear
  /// policy is 8 dot products) a library call costs more than the arithmetic.
  void finish(const float* w, const float* pre, float* out) {
    if (sizes.size() == 2) {
      std::copy(pre, pre + sizes.back(), out);
      return;
    }
    const float* src = pre;
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
      const int fi = sizes[l], fo = sizes[l + 1];
      const bool last = l + 2 == sizes.size();
      if (l == 0) {  // the first layer's activation
        for (int o = 0; o < fo; ++o) h0[static_cast<std::size_t>(o)] = std::tanh(src[o]);
        w += static_cast<std::size_t>(fo) * static_cast<std::size_t>(fi + 1);
        src = h0.data();
        continue;
      }
      float* dst = last ? out : (src == h0.data() ? h1.data() : h0.data());
      const float* b = w + static_cast<std::size_t>(fo) * static_cast<std::size_t>(fi);
      for (int o = 0; o < fo; ++o) {
        const float* row = w + static_cast<std::size_t>(o) * static_cast<std::size_t>(fi);
        float acc = b[o];
        for (int i = 0; i < fi; ++i) acc += row[i] * src[i];
        dst[o] = last ? acc : std::tanh(acc);
      }
      w = b + fo;
      src = dst;
    }
  }

  /// Logits of the network with parameters `w` for the standardised input `xi`, into `out`:
  /// the reference that act()'s shared-part evaluation must agree with (logits(), tests).
  void forward(const float* w, const float* xi, float* out) {
    const int fi = sizes[0], fo = sizes[1];
    const float* b = w + static_cast<std::size_t>(fo) * static_cast<std::size_t>(fi);
    pre.resize(static_cast<std::size_t>(fo));
    for (int o = 0; o < fo; ++o) {
      const float* row = w + static_cast<std::size_t>(o) * static_cast<std::size_t>(fi);
      float acc = b[o];
      for (int i = 0; i < fi; ++i) acc += row[i] * xi[i];
      pre[static_cast<std::size_t>(o)] = acc;
    }
    finish(w, pre.data(), out);
  }

  /// The first layer's part that every agent of one world shares. agent_input() lays out the own
  /// observation [d], every agent's public fields [n·pub] and the one-hot id [n]; all but the own
  /// observation and the id's one entry are the same for every agent of a world, so the k local
  /// agents share one product over them: into `shared`, the bias plus the weights of the public
  /// fields and of the id (as if no agent were set) times their standardised values. With
  /// `count`, adds the k rows' public and id inputs to this iteration's moments.
  void shared_part(const float* w, const GlobalObs& g, bool count) {
    const int fo = sizes[1];
    const auto P = static_cast<std::size_t>(n) * static_cast<std::size_t>(pub);
    const auto D = static_cast<std::size_t>(d), I = static_cast<std::size_t>(in);
    for (int j = 0; j < n; ++j) {
      const float* r = g.row(j);
      for (int f = 0; f < pub; ++f) {
        const auto u = D + static_cast<std::size_t>(j * pub + f);
        xn[u] = cfg.normalize ? (r[f] - mu[u]) / sd[u] : r[f];
        if (count) {
          const double v = r[f];
          pending[1 + u] += k * v;
          pending[1 + I + u] += k * v * v;
        }
      }
    }
    for (std::size_t u = D + P; u < I; ++u) xn[u] = cfg.normalize ? -mu[u] / sd[u] : 0.f;
    const float* b = w + static_cast<std::size_t>(fo) * I;
    shared.resize(static_cast<std::size_t>(fo));
    for (int o = 0; o < fo; ++o) {
      const float* row = w + static_cast<std::size_t>(o) * I;
      float acc = b[o];
      for (std::size_t u = D; u < I; ++u) acc += row[u] * xn[u];
      shared[static_cast<std::size_t>(o)] = acc;
    }
  }

  /// Logits of local agent kk of a world into `out`, from shared_part()'s products and the
  /// agent's own observation and id. With `count`, adds the own observation and the id to this
  /// iteration's moments (and the row to their count).
  void agent_logits(const float* w, const GlobalObs& g, int kk, bool count, float* out) {
    const int fo = sizes[1], a = first + kk;
    const auto D = static_cast<std::size_t>(d), I = static_cast<std::size_t>(in);
    const float* own = g.row(a);
    for (std::size_t u = 0; u < D; ++u) xn[u] = cfg.normalize ? (own[u] - mu[u]) / sd[u] : own[u];
    const auto id = D + static_cast<std::size_t>(n) * static_cast<std::size_t>(pub) +
                    static_cast<std::size_t>(a);
    if (count) {
      pending[0] += 1;
      for (std::size_t u = 0; u < D; ++u) {
        const double v = own[u];
        pending[1 + u] += v;
        pending[1 + I + u] += v * v;
      }
      pending[1 + id] += 1;
      pending[1 + I + id] += 1;
    }
    // The id's entry is 1 for this agent: its standardised value minus the shared part's.
    const float id_step = cfg.normalize ? 1.f / sd[id] : 1.f;
    pre.resize(static_cast<std::size_t>(fo));
    for (int o = 0; o < fo; ++o) {
      const float* row = w + static_cast<std::size_t>(o) * I;
      float acc = 0.f;
      for (std::size_t u = 0; u < D; ++u) acc += row[u] * xn[u];
      pre[static_cast<std::size_t>(o)] =
          shared[static_cast<std::size_t>(o)] + acc + row[id] * id_step;
    }
    finish(w, pre.data(), out);
  }

  /// --es-actor targets: the logits (per head modes·T, the env's action order m·T + t) of the
  /// agent whose target input (nn::target_input) is in `x`, one forward per target from its
  /// standardised (own observation, target row); with `count`, adds the T rows to this
  /// iteration's moments.
  void target_logits(const float* w, bool count, float* logits) {
    const auto D = static_cast<std::size_t>(d), I = static_cast<std::size_t>(in);
    for (int t = 0; t < T; ++t) {
      const float* row = x.data() + D + static_cast<std::size_t>(t) * static_cast<std::size_t>(R);
      for (std::size_t u = 0; u < I; ++u) {
        const float raw = u < D ? x[u] : row[u - D];
        xn[u] = cfg.normalize ? (raw - mu[u]) / sd[u] : raw;
        if (count) {
          pending[1 + u] += raw;
          pending[1 + I + u] += static_cast<double>(raw) * raw;
        }
      }
      if (count) pending[0] += 1;
      forward(w, xn.data(), mo.data());
      for (int o = 0; o < modes * H; ++o) logits[o * T + t] = mo[static_cast<std::size_t>(o)];
    }
  }

  /// --es-base: adds the margin to each head's logit of the baseline's flat action `a` in `lg`.
  void add_base(int a, float* lg) const {
    const auto margin = static_cast<float>(cfg.base_margin);
    for (int h = H - 1; h >= 0; --h) {
      lg[h * hn + a % hn] += margin;
      a /= hn;
    }
  }

  /// Standardises x into xn with the frozen moments.
  void standardise() {
    for (int i = 0; i < in; ++i) {
      const auto u = static_cast<std::size_t>(i);
      xn[u] = cfg.normalize ? (x[u] - mu[u]) / sd[u] : x[u];
    }
  }

  /// Draws this iteration's directions (the same on every rank) and the copies' parameters.
  void perturb() {
    const std::size_t p = params();
    noise.resize(static_cast<std::size_t>(pairs()) * p);
    perturbed.resize(static_cast<std::size_t>(e) * p);
    for (int j = 0; j < pairs(); ++j) {
      Rng r(derive_seed(
          seed, {kEsStream, static_cast<std::uint64_t>(iteration), static_cast<std::uint64_t>(j)}));
      float* eps = noise.data() + static_cast<std::size_t>(j) * p;
      float* plus = perturbed.data() + static_cast<std::size_t>(2 * j) * p;
      float* minus = plus + p;
      for (std::size_t i = 0; i < p; ++i) {
        eps[i] = static_cast<float>(r.normal());
        const float step = static_cast<float>(cfg.sigma) * eps[i];
        plus[i] = theta[i] + step;
        minus[i] = theta[i] - step;
      }
    }
    ready = true;
  }

  /// Recomputes μ and s from the accumulated moments (s = 1 where an input never varied).
  void refresh_normalisation() {
    const double cnt = moments[0];
    if (cnt < 2) return;
    for (int i = 0; i < in; ++i) {
      const auto u = static_cast<std::size_t>(i);
      const double m = moments[1 + u] / cnt;
      const double var = std::max(0.0, moments[1 + static_cast<std::size_t>(in) + u] / cnt - m * m);
      const double s = std::sqrt(var);
      mu[u] = static_cast<float>(m);
      sd[u] = s > 1e-6 ? static_cast<float>(s) : 1.f;
    }
  }
};

Es::Es(const EsConfig& cfg, const LearnerLayout& l) {
  cfg.validate();
  cfg.check_env(*l.spec);
  impl_ = std::make_unique<Impl>(cfg, *l.comm, *l.spec, l.num_agents, l.first_agent, l.local_agents,
                                 l.copies, l.seed);
  auto baseline = [&](const std::string& name) -> std::unique_ptr<Policy> {
    if (name.empty()) return nullptr;
    MARLSCHED_CHECK(l.baselines, "es: no env baselines handed in for '" << name << "'");
    return l.baselines(name, l.seed);
  };
  impl_->teacher = baseline(cfg.imitate);
  impl_->base = baseline(cfg.base);
}

bool Es::needs_every_agent() const {
  const auto& m = *impl_;
  return (m.teacher && m.teacher->needs_every_agent()) || (m.base && m.base->needs_every_agent());
}

void Es::Impl::fit_imitation() {
  // Head h's action a of a label scores unit u of its input with output row o of W: the agent
  // input is one unit and o = h·hn + a; with --es-actor targets each target's (own observation,
  // row) is a unit, u = a mod T and o = h·modes + a / T. The loss is the sum of the heads'
  // cross-entropies (one head without a factored action space).
  const std::size_t ns = demo_a.size();
  const auto I = static_cast<std::size_t>(in), A = static_cast<std::size_t>(hn);
  const auto O = static_cast<std::size_t>(sizes.back()), U = static_cast<std::size_t>(T);
  const std::size_t W = x.size(), D = static_cast<std::size_t>(d);
  const std::size_t p = O * (I + 1);  // W [O][in], then b [O]: θ of the linear policy
  MARLSCHED_CHECK(p == theta.size(), "the imitation fit needs the linear policy");
  std::vector<double> w(theta.begin(), theta.end());
  std::vector<double> g(p + 2), m1(p), m2(p);
  std::vector<float> xs(ns * U * I);
  for (std::size_t r = 0; r < ns; ++r)
    for (std::size_t u = 0; u < U; ++u)
      for (std::size_t i = 0; i < I; ++i) {
        const float raw = !per_target || i < D
                              ? demo_x[r * W + i]
                              : demo_x[r * W + D + u * static_cast<std::size_t>(R) + (i - D)];
        xs[(r * U + u) * I + i] = cfg.normalize ? (raw - mu[i]) / sd[i] : raw;
      }
  std::vector<double> z(A);
  std::vector<int> label(static_cast<std::size_t>(H));
  auto unit = [&](std::size_t a) { return per_target ? a % U : 0; };
  auto out_row = [&](std::size_t h, std::size_t a) {
    return per_target ? h * static_cast<std::size_t>(modes) + a / U : h * A + a;
  };
  constexpr int kEpochs = 150;
  constexpr double kLr = 0.05, kB1 = 0.9, kB2 = 0.999;
  // Gradient of the summed cross-entropy over this rank's labels (and their count and the
  // correct ones last: every head right), summed over the ranks.
  auto gradient = [&] {
    std::fill(g.begin(), g.end(), 0.0);
    for (std::size_t r = 0; r < ns; ++r) {
      int rest = demo_a[r];
      for (int h = H - 1; h >= 0; --h) {
        label[static_cast<std::size_t>(h)] = rest % hn;
        rest /= hn;
      }
      bool right = true;
      for (std::size_t h = 0; h < static_cast<std::size_t>(H); ++h) {
        double top = -1e300;
        std::size_t best = 0;
        for (std::size_t a = 0; a < A; ++a) {
          const float* xr = xs.data() + (r * U + unit(a)) * I;
          const std::size_t o = out_row(h, a);
          double acc = w[O * I + o];
          for (std::size_t i = 0; i < I; ++i) acc += w[o * I + i] * xr[i];
          z[a] = acc;
          if (acc > top) top = acc, best = a;
        }
        double sum = 0;
        for (std::size_t a = 0; a < A; ++a) sum += (z[a] = std::exp(z[a] - top));
        const auto y = static_cast<std::size_t>(label[h]);
        for (std::size_t a = 0; a < A; ++a) {
          const float* xr = xs.data() + (r * U + unit(a)) * I;
          const std::size_t o = out_row(h, a);
          const double dd = z[a] / sum - (a == y ? 1.0 : 0.0);
          for (std::size_t i = 0; i < I; ++i) g[o * I + i] += dd * xr[i];
          g[O * I + o] += dd;
        }
        right = right && best == y;
      }
      g[p + 1] += right ? 1.0 : 0.0;
    }
    g[p] = static_cast<double>(ns);
    comm.allreduce_sum(g.data(), static_cast<int>(g.size()));
  };
  for (int t = 1; t <= kEpochs; ++t) {
    gradient();
    const double count = std::max(1.0, g[p]);
    for (std::size_t j = 0; j < p; ++j) {
      const double gj = g[j] / count + (j < O * I ? cfg.imitate_l2 * w[j] : 0.0);
      m1[j] = kB1 * m1[j] + (1 - kB1) * gj;
      m2[j] = kB2 * m2[j] + (1 - kB2) * gj * gj;
      const double mh = m1[j] / (1 - std::pow(kB1, t)), vh = m2[j] / (1 - std::pow(kB2, t));
      w[j] -= kLr * mh / (std::sqrt(vh) + 1e-8);
    }
  }
  gradient();
  imitation_accuracy = g[p + 1] / std::max(1.0, g[p]);
  for (std::size_t j = 0; j < p; ++j) theta[j] = static_cast<float>(w[j]);
}

Es::~Es() = default;

Decisions Es::act(const PolicyInput& in) {
  auto& m = *impl_;
  Decisions out;
  std::vector<int>& actions = out.actions;
  const bool train = m.training;
  MARLSCHED_CHECK(!train || in.copies == m.e,
                  "es trains on " << m.e << " env copies, got " << in.copies);
  if (train && !m.ready) m.perturb();
  const bool imitate = train && m.imitating();
  if (imitate) m.teacher->act(in, m.teacher_actions);
  const bool based = !m.cfg.base.empty();
  if (based) {
    MARLSCHED_CHECK(m.base, "--es-base without a baseline");
    m.base->act(in, m.base_actions);
  }
  const auto rows = static_cast<std::size_t>(in.copies * m.k);
  actions.resize(rows);
  out.log_probs.assign(rows, 0.f);
  out.values.assign(rows, std::nanf(""));
  const std::size_t p = m.params();
  for (int c = 0; c < in.copies; ++c) {
    // DAgger: θ itself acts in the imitation rounds after the first, the teacher in the first.
    const float* w =
        train && !imitate ? m.perturbed.data() + static_cast<std::size_t>(c) * p : m.theta.data();
    const bool count = train && !m.finished[static_cast<std::size_t>(c)];
    const GlobalObs& g = in.global[static_cast<std::size_t>(c)];
    if (!m.per_target) m.shared_part(w, g, count);
    for (int kk = 0; kk < m.k; ++kk) {
      const auto row = static_cast<std::size_t>(c * m.k + kk);
      if (m.per_target)
        nn::target_input(m.spec, g, m.first + kk, m.x.data());
      else if (imitate && count)
        nn::agent_input(g, m.pub, m.first + kk, m.x.data());
      if (imitate && count) {
        m.demo_x.insert(m.demo_x.end(), m.x.begin(), m.x.end());
        m.demo_a.push_back(m.teacher_actions[row]);
      }
      if (m.per_target)
        m.target_logits(w, count, m.out.data());
      else
        m.agent_logits(w, g, kk, count, m.out.data());
      if (imitate && m.iteration == 0) {
        actions[row] = m.teacher_actions[row];
        continue;
      }
      if (based) m.add_base(m.base_actions[row], m.out.data());
      actions[row] = m.best_action(m.out.data());
    }
  }
  return out;
}

void Es::set_training(bool training) {
  // Acting alone (evaluation, export) works with any number of copies; training needs pairs.
  auto& m = *impl_;
  if (training) require_copy_groups(name(), kCopyGroup, m.e);
  MARLSCHED_CHECK(!training || !m.imitating() || m.teacher, "--es-imitate without a teacher");
  m.training = training;
}

void Es::record(const StepFeedback& fb) {
  auto& m = *impl_;
  for (int c = 0; c < m.e; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    if (m.finished[cu]) continue;  // the pair's episode is over; later steps start another
    for (int kk = 0; kk < m.k; ++kk)
      m.fitness[cu] += fb.reward[cu * static_cast<std::size_t>(m.k) + static_cast<std::size_t>(kk)];
    if (fb.done[cu]) m.finished[cu] = 1;
  }
}

UpdateStats Es::update(const PolicyInput&) {
  auto& m = *impl_;
  UpdateStats st;
  const double t0 = now();
  if (!m.ready) m.perturb();  // an iteration without a step (no act) still has directions
  // One allreduce: every copy's return (summed over the ranks' agents) and the input moments.
  std::vector<double> buf(m.fitness);
  buf.insert(buf.end(), m.pending.begin(), m.pending.end());
  const double r0 = now();
  m.comm.allreduce_sum(buf.data(), static_cast<int>(buf.size()));
  st.time_allreduce = now() - r0;
  const int P = m.pairs();
  std::vector<double> F(buf.begin(), buf.begin() + m.e);
  for (std::size_t i = 0; i < m.pending.size(); ++i)
    m.moments[i] += buf[static_cast<std::size_t>(m.e) + i];

  std::vector<double> d(static_cast<std::size_t>(P));
  int nonzero = 0;
  for (int j = 0; j < P; ++j) {
    d[static_cast<std::size_t>(j)] =
        F[static_cast<std::size_t>(2 * j)] - F[static_cast<std::size_t>(2 * j + 1)];
    nonzero += d[static_cast<std::size_t>(j)] != 0.0 ? 1 : 0;
  }
  // ARS's top-b by the paired difference; ties broken by index (stable), so every rank agrees.
  const int b = std::max(1, static_cast<int>(std::ceil(m.cfg.top * P)));
  std::vector<int> order(static_cast<std::size_t>(P));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) {
    return std::abs(d[static_cast<std::size_t>(a)]) > std::abs(d[static_cast<std::size_t>(c)]);
  });
  order.resize(static_cast<std::size_t>(b));
  double mean = 0, sq = 0;
  for (int j : order) mean += d[static_cast<std::size_t>(j)] / b;
  for (int j : order)
    sq += (d[static_cast<std::size_t>(j)] - mean) * (d[static_cast<std::size_t>(j)] - mean);
  // The spread of the used differences around zero would count a consistent direction as
  // noise-free; ARS scales by the returns' standard deviation, here that of the differences.
  const double dsd = std::sqrt(sq / b);
  double step_sq = 0;
  const std::size_t p = m.params();
  if (m.imitating()) {  // a DAgger round: fit θ to every label so far, no ES step
    if (m.cfg.normalize) m.refresh_normalisation();
    const std::vector<float> before = m.theta;
    m.fit_imitation();
    for (std::size_t i = 0; i < p; ++i)
      step_sq += static_cast<double>(m.theta[i] - before[i]) * (m.theta[i] - before[i]);
    if (m.iteration + 1 == m.cfg.imitate_iterations) {  // the labels are no longer needed
      std::vector<float>().swap(m.demo_x);
      std::vector<std::int32_t>().swap(m.demo_a);
    }
  } else if (dsd > 0) {
    std::vector<double> step(p, 0.0);
    for (int j : order) {
      const double w = m.cfg.lr * d[static_cast<std::size_t>(j)] / (b * dsd);
      const float* eps = m.noise.data() + static_cast<std::size_t>(j) * p;
      for (std::size_t i = 0; i < p; ++i) step[i] += w * eps[i];
    }
    for (std::size_t i = 0; i < p; ++i) {
      m.theta[i] += static_cast<float>(step[i]);
      step_sq += step[i] * step[i];
    }
  }
  if (m.cfg.normalize) m.refresh_normalisation();

  double fmean = 0, fmax = F.empty() ? 0 : F[0];
  for (double f : F) {
    fmean += f / m.e;
    fmax = std::max(fmax, f);
  }
  st.values = {
      fmean, fmax, dsd, static_cast<double>(nonzero) / P, std::sqrt(step_sq), m.imitation_accuracy};
  m.iteration += 1;
  m.ready = false;
  std::fill(m.fitness.begin(), m.fitness.end(), 0.0);
  std::fill(m.finished.begin(), m.finished.end(), 0);
  std::fill(m.pending.begin(), m.pending.end(), 0.0);
  st.time_forward_backward = now() - t0 - st.time_allreduce;
  return st;
}

const std::vector<StatName>& Es::stat_names() const {
  static const std::vector<StatName> names = {
      {"return_mean", "es/return_mean"}, {"return_max", "es/return_max"},
      {"diff_sd", "es/diff_sd"},         {"diff_nonzero", "es/diff_nonzero"},
      {"step_norm", "es/step_norm"},     {"imitation_accuracy", "es/imitation_accuracy"}};
  return names;
}

void Es::save(const std::string& path) const {
  const auto& m = *impl_;
  ModelWriter ar;
  ar.tensor("es_meta", torch::tensor(layout()));
  if (m.per_target) ar.tensor("es_per_target", torch::tensor({std::int64_t{1}}));
  ar.base(m.cfg.base, m.cfg.base_margin);
  ar.tensor("iteration", torch::tensor({m.iteration}));
  nn::require_finite(
      {torch::from_blob(const_cast<float*>(m.theta.data()),
                        {static_cast<std::int64_t>(m.theta.size())}, torch::kFloat32)},
      "model '" + path + "'");
  ar.values("theta", m.theta);
  ar.values("moments", m.moments);
  // Within the DAgger rounds, their labels so far (a resume goes on with the same data).
  if (!m.demo_a.empty()) {
    ar.values("demo_x", m.demo_x);
    ar.values("demo_a", m.demo_a);
  }
  ar.tensor("imitation_accuracy", torch::tensor({m.imitation_accuracy}, torch::kFloat64));
  ar.save(path);
}

std::vector<std::int64_t> Es::layout() const {
  const auto& m = *impl_;
  std::vector<std::int64_t> l = {m.n, m.in, m.na, m.cfg.normalize ? 1 : 0};
  for (int h : m.cfg.hidden) l.push_back(h);
  return l;
}

void Es::load(const std::string& path) {
  auto& m = *impl_;
  ModelReader ar(path, "ES");
  ar.require_layout("es_meta", layout(),
                    "was trained with a different layout (agents, observation or action space, "
                    "--es-hidden or --es-normalize)");
  torch::Tensor pt;
  const bool file_per_target = ar.try_tensor("es_per_target", pt);
  MARLSCHED_REQUIRE(file_per_target == m.per_target,
                    "model '" << path << "' was trained with --es-actor "
                              << (file_per_target ? "targets" : "agent") << ", this run has "
                              << (m.per_target ? "targets" : "agent"));
  ar.require_base("--es-base", "--es-base-margin", m.cfg.base, m.cfg.base_margin);
  const auto it = ar.tensor("iteration", 1);
  ar.values("theta", m.theta, "its parameters");
  ar.values("moments", m.moments, "its optimiser moments");
  m.iteration = it.item<std::int64_t>();
  for (float v : m.theta)
    MARLSCHED_REQUIRE(std::isfinite(v), "model '" << path << "' holds a non-finite parameter");
  m.demo_x.clear();
  m.demo_a.clear();
  torch::Tensor dx, da, acc;
  if (ar.try_tensor("demo_a", da) && ar.try_tensor("demo_x", dx)) {
    MARLSCHED_REQUIRE(da.scalar_type() == torch::kInt32 && dx.scalar_type() == torch::kFloat32 &&
                          dx.numel() == da.numel() * static_cast<std::int64_t>(m.x.size()),
                      "model '" << path << "': its imitation labels do not match its layout");
    m.demo_a.assign(da.data_ptr<std::int32_t>(), da.data_ptr<std::int32_t>() + da.numel());
    m.demo_x.assign(dx.data_ptr<float>(), dx.data_ptr<float>() + dx.numel());
    for (std::int32_t a : m.demo_a)
      MARLSCHED_REQUIRE(a >= 0 && a < m.na, "model '" << path << "': an imitation label " << a
                                                      << " outside the " << m.na << " actions");
  }
  if (ar.try_tensor("imitation_accuracy", acc, 1)) m.imitation_accuracy = acc.item<double>();
  m.refresh_normalisation();
  m.ready = false;
}

bool Es::shared_parameters_identical() const {
  auto& m = *impl_;
  const auto t = torch::from_blob(m.theta.data(), {static_cast<std::int64_t>(m.theta.size())},
                                  torch::kFloat32);
  return dist::parameters_identical({t}, m.comm);
}

std::uint64_t Es::shared_parameter_digest() const {
  auto& m = *impl_;
  const auto t = torch::from_blob(m.theta.data(), {static_cast<std::int64_t>(m.theta.size())},
                                  torch::kFloat32);
  return dist::parameter_digest({t});
}

std::vector<float> Es::logits(const GlobalObs& g, int local_agent) const {
  auto& m = *impl_;
  std::vector<float> out(static_cast<std::size_t>(m.nl));
  if (m.per_target) {
    nn::target_input(m.spec, g, m.first + local_agent, m.x.data());
    m.target_logits(m.theta.data(), false, out.data());
  } else {
    nn::agent_input(g, m.pub, m.first + local_agent, m.x.data());
    m.standardise();
    m.forward(m.theta.data(), m.xn.data(), out.data());
  }
  return m.H == 1 ? out : m.flat_logits(out.data());
}

std::int64_t Es::parameter_count() const {
  return static_cast<std::int64_t>(impl_->params());
}

void Es::export_torchscript(const std::vector<const Es*>& ranks, const std::string& path,
                            const std::string& metadata) {
  MARLSCHED_CHECK(!ranks.empty(), "no learner to export");
  const Impl& m = *ranks.front()->impl_;
  MARLSCHED_REQUIRE(m.cfg.base.empty(),
                    "this ES policy acts over the baseline '"
                        << m.cfg.base
                        << "' (--es-base), which a TorchScript module cannot carry: evaluate it "
                           "with marlsched eval --model instead");
  // The network with the standardisation folded into its first layer:
  // W (x − μ) / s + b = (W / s) x + (b − W μ / s).
  nn::Mlp net(m.in, m.cfg.hidden, m.sizes.back(), 1.0);
  {
    torch::NoGradGuard g;
    std::size_t off = 0;
    std::vector<torch::nn::Linear> layers = net->layers;
    layers.push_back(net->head);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const int fi = m.sizes[l], fo = m.sizes[l + 1];
      auto w = torch::empty({fo, fi}, torch::kFloat64);
      auto b = torch::empty({fo}, torch::kFloat64);
      auto wa = w.accessor<double, 2>();
      auto ba = b.accessor<double, 1>();
      for (int o = 0; o < fo; ++o) {
        double bias = m.theta[off + static_cast<std::size_t>(fo * fi + o)];
        for (int i = 0; i < fi; ++i) {
          double v = m.theta[off + static_cast<std::size_t>(o * fi + i)];
          if (l == 0 && m.cfg.normalize) {
            v /= m.sd[static_cast<std::size_t>(i)];
            bias -= v * m.mu[static_cast<std::size_t>(i)];
          }
          wa[o][i] = v;
        }
        ba[o] = bias;
      }
      layers[l]->weight.copy_(w.to(torch::kFloat32));
      layers[l]->bias.copy_(b.to(torch::kFloat32));
      off += static_cast<std::size_t>(fo) * static_cast<std::size_t>(fi + 1);
    }
  }
  auto mod = nn::policy_module(m.n, m.d, m.pub, m.na, metadata);
  std::ostringstream src;
  src << (m.per_target ? nn::script_target_input(mod, m.spec) : nn::script_agent_input())
      << nn::script_logits_head() << nn::script_actor(mod, "pi", net, "    ", m.per_target);
  if (m.H > 1)  // the heads' logits summed into the flat actions' (Impl::flat_logits)
    src << "    lh = out.reshape(out.size(0), " << m.H << ", " << m.hn << ")\n"
        << "    out = lh[:, 0]\n"
        << "    for head in range(1, " << m.H << "):\n"
        << "        out = (out.unsqueeze(-1) + lh[:, head].unsqueeze(-2)).reshape(out.size(0), "
           "-1)\n";
  src << "    return out\n" << nn::script_greedy_policy("logits");
  nn::save_module(mod, src.str(), path);
}

}  // namespace marlsched
