#pragma once
// The error value every module returns for expected failures: a category the caller branches on,
// and a message for the human. Each module defines its own category enum.

#include <expected>
#include <string>
#include <utility>

namespace matchmesh {

template <typename Code>
struct Error {
    Code code;
    std::string message;
};

template <typename Code>
[[nodiscard]] std::unexpected<Error<Code>> fail(Code code, std::string message) {
    return std::unexpected(Error<Code>{code, std::move(message)});
}

}  // namespace matchmesh
