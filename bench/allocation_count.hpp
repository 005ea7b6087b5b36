#pragma once
// Heap allocations made by this process, for a figure noise cannot move: allocations per match.
// A program that links allocation_count.cpp counts every malloc, calloc, realloc and aligned
// allocation, and so every operator new (which calls malloc), whoever makes it. The memory
// itself still comes from the C library's allocator. Sanitized builds, whose runtimes replace
// the allocator, do not count.

#include <cstdint>
#include <optional>

namespace matchmesh::bench {

// Allocations so far, or nothing when this build does not count them.
[[nodiscard]] std::optional<std::uint64_t> allocations();

}  // namespace matchmesh::bench
