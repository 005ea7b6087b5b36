#include "mesh/network.hpp"

#include <cstring>

#include <capnp/serialize.h>

namespace matchmesh::mesh {

std::string_view to_string(MeshErrc code) {
    switch (code) {
        case MeshErrc::timeout: return "timeout";
        case MeshErrc::unreachable: return "unreachable";
        case MeshErrc::overloaded: return "overloaded";
        case MeshErrc::no_handler: return "no handler";
        case MeshErrc::remote: return "remote failure";
        case MeshErrc::malformed: return "malformed";
        case MeshErrc::shutdown: return "shutdown";
    }
    return "mesh error";
}

Payload Payload::encode(capnp::MessageBuilder& message) {
    Payload payload;
    payload.words_ =
        std::make_shared<const kj::Array<capnp::word>>(capnp::messageToFlatArray(message));
    return payload;
}

Payload Payload::copy_of(std::span<const capnp::word> words) {
    auto copy = kj::heapArray<capnp::word>(words.size());
    std::memcpy(static_cast<void*>(copy.begin()), words.data(), words.size_bytes());
    Payload payload;
    payload.words_ = std::make_shared<const kj::Array<capnp::word>>(std::move(copy));
    return payload;
}

std::span<const capnp::word> Payload::words() const {
    if (!words_) {
        return {};
    }
    return std::span(words_->begin(), words_->size());
}

Responder& Responder::operator=(Responder&& other) noexcept {
    if (this != &other) {
        if (send_) {
            send_(matchmesh::fail(MeshErrc::remote, "request dropped without an answer"));
        }
        send_ = std::move(other.send_);
        other.send_ = nullptr;
    }
    return *this;
}

Responder::~Responder() {
    if (send_) {
        send_(matchmesh::fail(MeshErrc::remote, "request dropped without an answer"));
    }
}

void Responder::reply(Payload payload) {
    if (auto send = std::exchange(send_, nullptr)) {
        send(std::move(payload));
    }
}

void Responder::fail(MeshErrc code, std::string message) {
    if (auto send = std::exchange(send_, nullptr)) {
        send(std::unexpected(MeshError{code, std::move(message)}));
    }
}

}  // namespace matchmesh::mesh
