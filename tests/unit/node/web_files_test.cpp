// The gateway's web files: which request targets name a file under the root, and which never do.
#include <doctest/doctest.h>

#include "node/gateway/web_files.hpp"

using matchmesh::gateway::file_for;
using matchmesh::gateway::media_type;

TEST_CASE("web files: plain paths resolve under the root, '/' to index.html, the query dropped") {
    CHECK(file_for("/srv/web", "/") == "/srv/web/index.html");
    CHECK(file_for("/srv/web/", "/app.js") == "/srv/web/app.js");
    CHECK(file_for("/srv/web", "/sdk/generated/client.js?v=3") ==
          "/srv/web/sdk/generated/client.js");
    CHECK(file_for("/srv/web", "/docs/") == "/srv/web/docs/index.html");
    CHECK(file_for("/srv/web", "/a-b_c.1.css#top") == "/srv/web/a-b_c.1.css");
}

TEST_CASE("web files: nothing outside the root, hidden or odd resolves") {
    for (const char* target : {"/../etc/passwd", "/sdk/../../x", "/.env", "/a/.hidden/b.js", "//x",
                               "/a//b", "relative.js", "", "/%2e%2e/x", "/a b.js", "/a\\b.js",
                               "/..", "/."}) {
        CAPTURE(target);
        CHECK_FALSE(file_for("/srv/web", target).has_value());
    }
    CHECK_FALSE(file_for("", "/index.html").has_value());  // no root: nothing is served
}

TEST_CASE("web files: media types by extension") {
    CHECK(media_type("/x/index.html") == "text/html; charset=utf-8");
    CHECK(media_type("/x/app.js") == "text/javascript; charset=utf-8");
    CHECK(media_type("/x/app.js.map") == "application/json");
    CHECK(media_type("/x/shot.png") == "image/png");
    CHECK(media_type("/x/data.bin") == "application/octet-stream");
}
