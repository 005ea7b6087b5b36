// scripts/demo.sh --quick runs to completion against this build, and its report shows the 1v1
// type filling above 95%.
#include <cstdlib>
#include <fstream>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "integration/node_process.hpp"

TEST_CASE("demo: the quick demo completes and fills 1v1 tickets above 95%") {
    const integration::TestFolder folder;
    const std::string command = fmt::format(
        "MATCHMESH_BIN_DIR='{}' '{}' --quick --out '{}' >'{}' 2>&1 </dev/null", MATCHMESH_BIN_DIR,
        MATCHMESH_DEMO_SCRIPT, folder.path().string(), (folder.path() / "demo.out").string());
    const int status = std::system(command.c_str());
    std::ifstream output(folder.path() / "demo.out");
    const std::string text((std::istreambuf_iterator<char>(output)),
                           std::istreambuf_iterator<char>());
    INFO("demo output:\n", text);
    REQUIRE(status == 0);

    std::ifstream file(folder.path() / "report.json");
    REQUIRE(file.good());
    const nlohmann::json report = nlohmann::json::parse(file);
    for (const char* key :
         {"tickets_started", "completed", "timed_out", "canceled", "fill_rate", "matches_per_s"}) {
        CHECK_MESSAGE(report.contains(key), key);
    }
    for (const char* key : {"p50", "p90", "p99", "max"}) {
        CHECK(report["ttm_ms"].contains(key));
    }
    REQUIRE(report["by_type"].contains("1"));
    const nlohmann::json& duel = report["by_type"]["1"];
    CHECK(duel["tickets_started"].get<int>() > 0);
    CHECK(duel["fill_rate"].get<double>() > 0.95);
    CHECK(report["unfinished"].get<int>() == 0);
    // The script stops the cluster it started: no node of this run is left.
    const std::string leftovers =
        fmt::format("pgrep -f '[-]-config {}/cluster/' >/dev/null", folder.path().string());
    CHECK(std::system(leftovers.c_str()) != 0);
}
