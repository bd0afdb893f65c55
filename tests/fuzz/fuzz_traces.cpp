/// \file fuzz_traces.cpp
/// libFuzzer target: the CSV trace loaders. The first input byte picks the loader (Electricity
/// Maps carbon intensity, both columns; day-ahead prices; the Alibaba PAI task table; lstcb batch
/// profiles), the rest is the file.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/csv.hpp"
#include "envs/geodc/traces.hpp"
#include "envs/geodc/workload.hpp"
#include "envs/lstcb/lstcb.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  using namespace marlsched;
  const std::string path = fuzz::scratch(data + 1, size - 1, ".csv");
  fuzz::expect_clean([&] {
    switch (data[0] % 5) {
      case 0:
      case 1: {
        const auto s =
            geodc::load_carbon_csv(path, data[0] % 5 == 0 ? geodc::CarbonColumn::kLifecycle
                                                          : geodc::CarbonColumn::kDirect);
        for (double v : s.values)
          if (!std::isfinite(v) || v < 0) __builtin_trap();  // the loader promises this
        if (s.values.empty()) __builtin_trap();
        break;
      }
      case 2: {
        const auto s = geodc::load_price_csv(path, {{"EUR", 1.08}, {"JPY", 0.0071}});
        for (double v : s.values)
          if (!std::isfinite(v)) __builtin_trap();
        break;
      }
      case 3:
        geodc::load_pai_task_table(path);
        break;
      default:
        lstcb::load_profiles(path);
        break;
    }
  });
  return 0;
}
