// Fuzz target: the bytes an authenticated peer sends on the mesh port, as one stream of frames.
// Each header is checked and each body decoded as an envelope, as the transport does; each
// envelope's payload is then offered to every decoder a node runs on peers' messages, whatever
// service it claims to be for. Every input must be decoded or refused: never a crash, a leak or
// undefined behaviour (the target is built with ASan and UBSan).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "matching/wire.hpp"
#include "mesh/control.hpp"
#include "mesh/frame.hpp"
#include "ticket/wire.hpp"

using namespace matchmesh;

namespace {

void offer(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    (void)mesh::decode_sync(payload, options);
    (void)mesh::decode_probe(payload, options);
    (void)mesh::decode_challenge(payload, options);
    (void)mesh::decode_hello(payload, options);
    (void)mesh::decode_welcome(payload, options);
    (void)mesh::decode_leave(payload, options);
    (void)mesh::decode_rejected(payload, options);
    (void)matching::decode_add(payload, options);
    (void)matching::decode_remove(payload, options);
    (void)matching::decode_search(payload, options);
    matching::SearchOutcome keeper;
    std::vector<matching::KeyedFound> found;
    (void)matching::decode_search_response(payload, options, keeper, found);
    (void)ticket::decode_join(payload, options);
    (void)ticket::decode_join_reply(payload, options);
    (void)ticket::decode_leave(payload, options);
    (void)ticket::decode_leave_reply(payload, options);
    (void)ticket::decode_push(payload, options);
    (void)ticket::decode_broadcast(payload, options);
    (void)ticket::decode_claim(payload, options);
    (void)ticket::decode_claim_reply(payload, options);
    (void)ticket::decode_ack(payload, options);
    (void)ticket::decode_sessions(payload, options);
    (void)ticket::decode_locate(payload, options);
    (void)ticket::decode_located(payload, options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    mesh::FrameLimits limits;
    limits.frame_bytes_max = 64 * 1024;  // the defaults' rules, on inputs a fuzzer can grow
    const capnp::ReaderOptions options = limits.reader_options();
    std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data), size);
    while (rest.size() >= mesh::frame_header_bytes) {
        auto length = mesh::parse_header(rest.first<mesh::frame_header_bytes>(), limits);
        if (!length) {
            return 0;  // the node closes the connection
        }
        rest = rest.subspan(mesh::frame_header_bytes);
        if (rest.size() < *length) {
            return 0;  // the node waits for the rest, which never comes
        }
        // Word-aligned, as the transport reads it (capnp::word cannot be copied with Clang).
        auto body = kj::heapArray<capnp::word>(*length / sizeof(capnp::word));
        std::memcpy(static_cast<void*>(body.begin()), rest.data(), *length);
        rest = rest.subspan(*length);
        auto envelope =
            mesh::decode_body(std::span<const capnp::word>(body.begin(), body.size()), limits);
        if (!envelope) {
            return 0;  // closed as well
        }
        offer(envelope->payload, options);
    }
    return 0;
}
