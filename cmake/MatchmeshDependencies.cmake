# Finds every third-party library matchmesh uses. All of them come from Debian packages;
# scripts/setup.sh installs whichever is missing. A missing one fails the configure step with
# the package to install.

function(matchmesh_require found_var package)
    if(NOT ${found_var})
        message(FATAL_ERROR
            "matchmesh: missing dependency: Debian package(s) ${package}. "
            "Run scripts/setup.sh (it installs every missing package) and configure again.")
    endif()
endfunction()

find_package(Threads REQUIRED)

find_path(ASIO_INCLUDE_DIR asio.hpp)
if(ASIO_INCLUDE_DIR)
    set(matchmesh_asio_found TRUE)
endif()
matchmesh_require(matchmesh_asio_found libasio-dev)
if(NOT TARGET matchmesh_asio)
    add_library(matchmesh_asio INTERFACE)
    add_library(matchmesh::asio ALIAS matchmesh_asio)
    # The installed package finds the header again (cmake/matchmeshConfig.cmake.in).
    target_include_directories(matchmesh_asio SYSTEM INTERFACE
        "$<BUILD_INTERFACE:${ASIO_INCLUDE_DIR}>")
    # Asio picks aligned_alloc or operator new by whether a libstdc++ header came first, so two
    # files may disagree and free with the wrong one (an ODR violation ASan reports). Fix it.
    target_compile_definitions(matchmesh_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED
        ASIO_DISABLE_STD_ALIGNED_ALLOC)
    target_link_libraries(matchmesh_asio INTERFACE Threads::Threads)
endif()

find_package(CapnProto QUIET)
matchmesh_require(CapnProto_FOUND "capnproto libcapnp-dev")

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
    pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
endif()
matchmesh_require(XXHASH_FOUND libxxhash-dev)

find_package(spdlog QUIET)
matchmesh_require(spdlog_FOUND libspdlog-dev)
find_package(fmt QUIET)
matchmesh_require(fmt_FOUND libfmt-dev)

find_package(nlohmann_json 3.10 QUIET)
matchmesh_require(nlohmann_json_FOUND nlohmann-json3-dev)

find_package(CLI11 QUIET)
matchmesh_require(CLI11_FOUND libcli11-dev)

find_package(OpenSSL QUIET)
matchmesh_require(OPENSSL_FOUND libssl-dev)

find_package(prometheus-cpp QUIET)
matchmesh_require(prometheus-cpp_FOUND prometheus-cpp-dev)
# The admin port's HTTP server (prometheus-cpp's package depends on it).
find_package(civetweb QUIET)
matchmesh_require(civetweb_FOUND libcivetweb-dev)

# The WebSocket gateway's HTTP and WebSocket server: Boost.Beast on Boost.Asio (header-only).
if(MATCHMESH_BUILD_GATEWAY)
    find_package(Boost 1.74 QUIET)
    matchmesh_require(Boost_FOUND libboost-dev)
endif()

if(MATCHMESH_BUILD_TESTS)
    find_package(doctest QUIET)
    matchmesh_require(doctest_FOUND doctest-dev)
endif()

if(MATCHMESH_BUILD_BENCHMARKS)
    # The load benchmark's Redis baseline talks to Redis through hiredis (pkg-config only).
    if(PkgConfig_FOUND)
        pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET hiredis)
    endif()
    if(NOT HIREDIS_FOUND)
        message(FATAL_ERROR
            "matchmesh: missing dependency: Debian package libhiredis-dev (pkg-config module "
            "hiredis, for the benchmarks' Redis baseline). Run scripts/setup.sh --with-bench, or "
            "configure with -DMATCHMESH_BUILD_BENCHMARKS=OFF.")
    endif()
endif()

# The node binary's allocator. Past its capacity a node allocates and frees at a high rate, and
# glibc's malloc grows slower the longer a node runs through overloads (fragmented free lists);
# jemalloc keeps the cost flat. Measured on 3 nodes sharing one core at twice their capacity:
# 0.34 CPU-s per 1,000 matches against glibc's 0.38-0.43, and 2,900-3,000 matches/s against
# 2,400-2,750. Only the programs link it (a library leaves the allocator to its embedder), and
# not the sanitized builds, whose runtimes bring their own.
option(MATCHMESH_JEMALLOC "Link the node binary with jemalloc" ON)
add_library(matchmesh_allocator INTERFACE)
if(MATCHMESH_JEMALLOC AND NOT MATCHMESH_SANITIZE AND NOT MATCHMESH_FUZZ)
    find_library(MATCHMESH_JEMALLOC_LIBRARY NAMES jemalloc)
    matchmesh_require(MATCHMESH_JEMALLOC_LIBRARY libjemalloc-dev)
    target_link_libraries(matchmesh_allocator INTERFACE ${MATCHMESH_JEMALLOC_LIBRARY})
endif()
add_library(matchmesh::allocator ALIAS matchmesh_allocator)
