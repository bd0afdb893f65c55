#pragma once
/// \file packing_lp.hpp
/// geodc's LPs (the oracle bound, the MPC's plan, the hindsight schedule) share one form:
/// maximise objective·x subject to A x <= row_hi and 0 <= x <= 1, A given column by column.
/// This solves it with COIN-OR CLP's dual simplex.

#include <CoinTypes.hpp>

#include <vector>

namespace marlsched::geodc {

/// A given as CoinPackedMatrix's column-ordered arrays: column j's entries are
/// (indices[k], values[k]) for k in [starts[j], starts[j] + lengths[j]). Returns the optimal
/// objective and, into `x` when given, the solution; an internal error naming `what` unless CLP
/// proves the optimum.
double solve_packing_lp(const char* what, int rows, const std::vector<CoinBigIndex>& starts,
                        const std::vector<int>& lengths, const std::vector<int>& indices,
                        const std::vector<double>& values, const std::vector<double>& objective,
                        const std::vector<double>& row_hi, std::vector<double>* x = nullptr);

}  // namespace marlsched::geodc
