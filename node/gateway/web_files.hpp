#pragma once
// Which file under the gateway's web root an HTTP request target names, and its media type.
// Only plain paths resolve: letters, digits, '.', '_', '-' and '/', no empty or dot-leading
// segment (so no "..", no hidden files), the query dropped, "/" and a trailing '/' meaning
// index.html. Anything else is not found, never a file outside the root.

#include <optional>
#include <string>
#include <string_view>

namespace matchmesh::gateway {

// The file's path (root joined with the target), or nothing when the target is not a plain path.
[[nodiscard]] std::optional<std::string> file_for(std::string_view root, std::string_view target);

// The Content-Type for a file name, by extension (application/octet-stream when unknown).
[[nodiscard]] std::string_view media_type(std::string_view path);

}  // namespace matchmesh::gateway
