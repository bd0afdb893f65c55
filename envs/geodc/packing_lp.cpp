#include "envs/geodc/packing_lp.hpp"

#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>

#include "core/error.hpp"

namespace marlsched::geodc {

double solve_packing_lp(const char* what, int rows, const std::vector<CoinBigIndex>& starts,
                        const std::vector<int>& lengths, const std::vector<int>& indices,
                        const std::vector<double>& values, const std::vector<double>& objective,
                        const std::vector<double>& row_hi, std::vector<double>* x) {
  const int cols = static_cast<int>(objective.size());
  const CoinPackedMatrix matrix(true, rows, cols, static_cast<CoinBigIndex>(values.size()),
                                values.data(), indices.data(), starts.data(), lengths.data());
  const std::vector<double> col_lo(objective.size(), 0.0), col_hi(objective.size(), 1.0);
  const std::vector<double> row_lo(static_cast<std::size_t>(rows), -COIN_DBL_MAX);
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(matrix, col_lo.data(), col_hi.data(), objective.data(), row_lo.data(),
                 row_hi.data());
  lp.setOptimizationDirection(-1);  // maximise
  lp.dual();
  MARLSCHED_CHECK(lp.isProvenOptimal(),
                  what << " was not solved to optimality (CLP status " << lp.status() << ")");
  if (x != nullptr) x->assign(lp.primalColumnSolution(), lp.primalColumnSolution() + cols);
  return lp.objectiveValue();
}

}  // namespace marlsched::geodc
