#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/blas.hpp"

using namespace marlsched;

// libtorch's BLAS is found and named; an optimized one obeys the thread count each rank sets.
TEST(Blas, TheLoadedBlasIsNamedAndItsThreadsAreSet) {
  const auto c = torch::ones({64, 64}).mm(torch::ones({64, 64}));  // loads and uses the BLAS
  EXPECT_FLOAT_EQ(c[0][0].item<float>(), 64.f);
  const BlasInfo& b = blas_info();
  std::cout << "BLAS: " << b.describe() << "\n";
  ASSERT_FALSE(b.path.empty()) << "libtorch's libblas.so.3 is not among the loaded objects";
  EXPECT_TRUE(std::filesystem::exists(b.path));
  EXPECT_NE(b.describe().find(b.name), std::string::npos);
  if (b.name == "OpenBLAS" || b.name == "BLIS") {
    ASSERT_TRUE(set_blas_threads(2));
    EXPECT_EQ(blas_threads(), 2);
    ASSERT_TRUE(set_blas_threads(1));
    EXPECT_EQ(blas_threads(), 1);
  } else {
    EXPECT_NE(b.name, "");  // "reference" or "unknown": named, with its path
  }
}
