#pragma once
// The least-squares slope of y over x. Over logarithms of a pool's size and of a cost, it is the
// cost's growth exponent (cost ~ size^slope): matchmesh-bench-sim and matchmesh-bench-summary
// fit it alike.

#include <cstddef>
#include <vector>

namespace matchmesh::bench {

[[nodiscard]] inline double least_squares_slope(const std::vector<double>& x,
                                                const std::vector<double>& y) {
    const auto n = static_cast<double>(x.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    const double denominator = n * sxx - sx * sx;
    return denominator == 0 ? 0.0 : (n * sxy - sx * sy) / denominator;
}

}  // namespace matchmesh::bench
