// LocalMessageBuilder: a message up to the thread's scratch segment is one segment, a builder made
// while another holds the scratch gets its own, and each leaves the scratch zeroed for the next.
#include <doctest/doctest.h>

#include <capnp/serialize.h>

#include "mesh/envelope.capnp.h"
#include "mesh/frame.hpp"

using namespace matchmesh;

namespace {

// A payload whose error message is `bytes` long: about bytes / 8 words.
mesh::Payload envelope_with_text(std::size_t bytes, char fill) {
    return mesh::make_payload<mesh::wire::Envelope>([&](mesh::wire::Envelope::Builder root) {
        root.setErrorMessage(std::string(bytes, fill));
    });
}

std::size_t segments_of(const mesh::Payload& payload) {
    const auto words = payload.words();
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()));
    std::size_t count = 0;
    while (reader.getSegment(static_cast<unsigned>(count)) != nullptr) {
        ++count;
    }
    return count;
}

std::string text_of(const mesh::Payload& payload) {
    const auto words = payload.words();
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()));
    return reader.getRoot<mesh::wire::Envelope>().getErrorMessage();
}

}  // namespace

TEST_CASE("mesh/message-builder: a message up to the scratch segment is one segment") {
    const std::size_t near_limit = (mesh::scratch_segment_words - 16) * sizeof(capnp::word);
    for (std::size_t bytes : {std::size_t{10}, std::size_t{4000}, near_limit}) {
        const auto payload = envelope_with_text(bytes, 'a');
        CHECK(segments_of(payload) == 1);
        CHECK(text_of(payload) == std::string(bytes, 'a'));
    }
    // Larger ones grow further segments, as before.
    const std::size_t large = mesh::scratch_segment_words * sizeof(capnp::word) * 2;
    const auto payload = envelope_with_text(large, 'b');
    CHECK(segments_of(payload) > 1);
    CHECK(text_of(payload) == std::string(large, 'b'));
}

TEST_CASE("mesh/message-builder: a builder made while another is open has its own segment") {
    mesh::Payload inner;
    mesh::Payload outer;
    {
        mesh::LocalMessageBuilder first;
        auto root = first.initRoot<mesh::wire::Envelope>();
        root.setCorrelation(7);
        root.setService(3);
        root.setErrorMessage(std::string(3000, 'x'));
        {
            mesh::LocalMessageBuilder second;  // the scratch is lent to `first`
            second.initRoot<mesh::wire::Envelope>().setErrorMessage(std::string(3000, 'y'));
            inner = mesh::Payload::encode(second);
        }
        outer = mesh::Payload::encode(first);
    }
    CHECK(text_of(outer) == std::string(3000, 'x'));
    CHECK(text_of(inner) == std::string(3000, 'y'));
    // Each ended builder left the scratch zeroed: the next one starts (capnp checks its first
    // word) and holds only what it writes.
    const auto next = envelope_with_text(5, 'z');
    CHECK(text_of(next) == "zzzzz");
    CHECK(segments_of(next) == 1);
    const auto words = next.words();
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()));
    CHECK(reader.getRoot<mesh::wire::Envelope>().getCorrelation() == 0);
    CHECK(reader.getRoot<mesh::wire::Envelope>().getService() == 0);
}
