#pragma once
/// \file rng.hpp
/// Seeds are derived, never shared by accident: every stream (env copy, agent, episode, rank)
/// gets `derive_seed(root, a, b, ...)`, a SplitMix64 hash chain. The generator is
/// std::mt19937_64, whose output sequence is fixed by the C++ standard.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>

namespace marlsched {

/// One SplitMix64 step: a bijective 64-bit mixer with good avalanche.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// Derives an independent seed from a root seed and a path of stream identifiers.
inline std::uint64_t derive_seed(std::uint64_t root, std::initializer_list<std::uint64_t> path) {
  std::uint64_t h = splitmix64(root);
  for (auto p : path) h = splitmix64(h ^ splitmix64(p + 0x632BE59BD9B4E019ULL));
  return h;
}

/// Random stream used by envs and agents. Distributions are written here (not std::*_distribution)
/// so that sequences are identical across standard libraries.
class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : gen_(seed) {}
  void seed(std::uint64_t s) { gen_.seed(s); }
  std::uint64_t next_u64() { return gen_(); }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : gen_() % n; }
  /// Standard normal (Box-Muller, one value per call).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Poisson sample (Knuth for small means, normal approximation above 30).
  std::int64_t poisson(double mean) {
    if (mean <= 0.0) return 0;
    if (mean > 30.0) {
      const double v = std::round(mean + std::sqrt(mean) * normal());
      return v < 0 ? 0 : static_cast<std::int64_t>(v);
    }
    const double l = std::exp(-mean);
    std::int64_t k = 0;
    double p = uniform();
    while (p > l) {
      ++k;
      p *= uniform();
    }
    return k;
  }
  std::mt19937_64& engine() { return gen_; }
  const std::mt19937_64& engine() const { return gen_; }

 private:
  std::mt19937_64 gen_;
};

/// The states of some generators as text (the standard's stream format of std::mt19937_64),
/// for checkpoints and saved models.
inline std::string write_states(std::initializer_list<const Rng*> rngs) {
  std::ostringstream os;
  for (const Rng* r : rngs) os << r->engine() << ' ';
  return os.str();
}

/// Restores states written by write_states (same generators, same order); false when the text
/// is malformed.
inline bool read_states(const std::string& text, std::initializer_list<Rng*> rngs) {
  std::istringstream is(text);
  for (Rng* r : rngs) is >> r->engine();
  return static_cast<bool>(is);
}

}  // namespace marlsched
