#include "node/gateway/web_files.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace matchmesh::gateway {
namespace {

bool plain_segment(std::string_view segment) {
    return !segment.empty() && segment.front() != '.' &&
           std::all_of(segment.begin(), segment.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
           });
}

}  // namespace

std::optional<std::string> file_for(std::string_view root, std::string_view target) {
    if (root.empty() || target.empty() || target.front() != '/') {
        return std::nullopt;
    }
    target = target.substr(0, target.find_first_of("?#"));
    std::string path(target);
    if (path.back() == '/') {
        path += "index.html";
    }
    for (std::size_t begin = 1; begin <= path.size();) {
        const std::size_t end = std::min(path.find('/', begin), path.size());
        if (!plain_segment(std::string_view(path).substr(begin, end - begin))) {
            return std::nullopt;
        }
        begin = end + 1;
    }
    std::string joined(root);
    if (joined.back() == '/') {
        joined.pop_back();
    }
    return joined + path;
}

std::string_view media_type(std::string_view path) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> types{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
    }};
    for (const auto& [extension, type] : types) {
        if (path.ends_with(extension)) {
            return type;
        }
    }
    return "application/octet-stream";
}

}  // namespace matchmesh::gateway
