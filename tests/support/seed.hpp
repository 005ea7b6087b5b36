#pragma once
// The seed of a randomized test: MATCHMESH_SEED when set (to replay a failure), random otherwise.
// It is printed either way, so any failing run can be replayed.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace test_support {

inline std::uint64_t choose_seed(const char* test_name) {
    std::uint64_t seed = 0;
    if (const char* fixed = std::getenv("MATCHMESH_SEED")) {
        seed = std::strtoull(fixed, nullptr, 10);
    } else {
        seed = std::random_device{}();
    }
    std::printf("%s seed %llu (replay: MATCHMESH_SEED=%llu)\n", test_name,
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    return seed;
}

}  // namespace test_support
