// Fuzz target: the config loader, on any text. Each input gives a config, or an error whose
// message names the source; a loaded config is then validated as the node does after its
// command-line overrides, with the same rule for errors. Never a crash, a stack overflow (nesting
// is bounded) or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "config/config.hpp"

using namespace matchmesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto check = [](const config::ConfigError& error) {
        if (!error.message.starts_with("fuzz.json: ")) {
            std::fprintf(stderr, "a config error that does not name its source: %s\n",
                         error.message.c_str());
            std::abort();
        }
    };
    auto loaded = config::load_string(text, "fuzz.json");
    if (!loaded) {
        check(loaded.error());
        return 0;
    }
    if (auto valid = config::validate(*loaded, "fuzz.json"); !valid) {
        check(valid.error());
    }
    return 0;
}
