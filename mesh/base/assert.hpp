#pragma once
// Assertions for bugs: they stay on in release builds, print the failed condition and abort.
// Never assert on bytes from the network or on fields of a config file: those are inputs, and
// inputs get errors, not aborts.

#include <cstdio>
#include <cstdlib>

namespace matchmesh::detail {

[[noreturn]] inline void assertion_failed(const char* condition, const char* file, int line) {
    std::fprintf(stderr, "matchmesh: assertion failed: %s (%s:%d)\n", condition, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace matchmesh::detail

#define MM_ASSERT(condition)                                                       \
    do {                                                                           \
        if (!(condition)) [[unlikely]] {                                           \
            ::matchmesh::detail::assertion_failed(#condition, __FILE__, __LINE__); \
        }                                                                          \
    } while (false)
