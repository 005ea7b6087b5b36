#include "bench/allocation_count.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define MATCHMESH_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MATCHMESH_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef MATCHMESH_COUNT_ALLOCATIONS
#define MATCHMESH_COUNT_ALLOCATIONS 1
#endif

#if MATCHMESH_COUNT_ALLOCATIONS

// The C library's own entry points: these definitions take the public names for the whole
// process and hand each request on. free() stays the library's, as the memory is its own.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
}

namespace {
constinit std::atomic<std::uint64_t> allocated{0};

void count() { allocated.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

extern "C" {
void* malloc(std::size_t size) {
    count();
    return __libc_malloc(size);
}

void* calloc(std::size_t count_of, std::size_t size) {
    count();
    return __libc_calloc(count_of, size);
}

void* realloc(void* pointer, std::size_t size) {
    count();
    return __libc_realloc(pointer, size);
}

void* memalign(std::size_t alignment, std::size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
    if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) {
        return EINVAL;
    }
    count();
    void* pointer = __libc_memalign(alignment, size);
    if (pointer == nullptr) {
        return ENOMEM;
    }
    *out = pointer;
    return 0;
}
}

namespace matchmesh::bench {
std::optional<std::uint64_t> allocations() {
    return allocated.load(std::memory_order_relaxed);
}
}  // namespace matchmesh::bench

#else

namespace matchmesh::bench {
std::optional<std::uint64_t> allocations() { return std::nullopt; }
}  // namespace matchmesh::bench

#endif
