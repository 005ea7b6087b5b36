#pragma once
// Running a test out of descriptors: the process's soft limit lowered to the descriptors it
// already holds, so that the next one opened (an accept, a connect) fails with EMFILE, and
// restored on restore() or on leaving the scope, also when the test fails.

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

namespace test_support {

// The descriptor the process would get next.
inline int lowest_free_descriptor() {
    const int probe = ::dup(0);
    REQUIRE(probe >= 0);
    ::close(probe);
    return probe;
}

class OutOfDescriptors {
public:
    OutOfDescriptors() {
        REQUIRE(::getrlimit(RLIMIT_NOFILE, &before_) == 0);
        rlimit tight = before_;
        tight.rlim_cur = static_cast<rlim_t>(lowest_free_descriptor());
        REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
    }
    ~OutOfDescriptors() { restore(); }
    OutOfDescriptors(const OutOfDescriptors&) = delete;
    OutOfDescriptors& operator=(const OutOfDescriptors&) = delete;

    void restore() { ::setrlimit(RLIMIT_NOFILE, &before_); }

private:
    rlimit before_{};
};

}  // namespace test_support
