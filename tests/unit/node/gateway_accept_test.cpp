// The gateway's accept loop when the process is out of descriptors: it pauses between tries
// rather than spinning on the connection the kernel keeps queued, says why, and takes that
// connection once descriptors are back.
#include <doctest/doctest.h>

// Not in the sanitized build: UBSan's vptr check, on a type it has not checked before, probes
// the object's memory through a pipe, which a process out of descriptors cannot open; it then
// reports the object's vptr as invalid (Boost.Asio's executor typeid at the first accept, the
// error category at the first failed one). The sanitized gateway program runs the same accept
// loop in the TypeScript tests.
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "node/gateway/websocket_gateway.hpp"
#include "support/descriptor_limit.hpp"

using namespace matchmesh::gateway;

namespace {

// A blocking loopback client with a receive deadline, so that no failure can hang the test.
struct Client {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ~Client() { ::close(fd); }

    bool connect(std::uint16_t port) const {
        timeval deadline{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(port);
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
    }
};

}  // namespace

TEST_CASE("gateway: out of descriptors, accepting pauses, says why, and takes the waiting "
          "connection once descriptors are back") {
    std::ostringstream lines;
    auto log = std::make_shared<spdlog::logger>(
        "gateway", std::make_shared<spdlog::sinks::ostream_sink_mt>(lines));
    GatewayOptions options;
    options.listen = Address{"127.0.0.1", 0};
    options.nodes = {Address{"127.0.0.1", 9}};
    WebSocketGateway gateway(options, log);
    std::string error;
    const std::string bound = gateway.listen(error);
    REQUIRE(error.empty());
    const auto port = static_cast<std::uint16_t>(std::stoi(bound.substr(bound.rfind(':') + 1)));

    Client client;
    REQUIRE(client.fd >= 0);
    std::thread serving([&] { gateway.run(); });
    auto stop = [&] {
        if (serving.joinable()) {
            gateway.stop();
            serving.join();
        }
    };
    struct StopOnExit {
        decltype(stop)& then;
        ~StopOnExit() { then(); }
    } stop_on_exit{stop};

    test_support::OutOfDescriptors out_of_descriptors;
    REQUIRE(client.connect(port));  // queued by the kernel: the accept is what must fail
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    out_of_descriptors.restore();

    // Accepted now, with no new connection needed to wake the loop: the request is answered.
    const std::string request = "GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(::send(client.fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
    char reply[64] = {};
    const ssize_t got = ::recv(client.fd, reply, sizeof reply - 1, 0);
    REQUIRE(got > 0);
    CHECK(std::string(reply).starts_with("HTTP/1.1 "));

    stop();
    const GatewayCounters counters = gateway.counters();
    CHECK(counters.accept_failures >= 1);
    CHECK(counters.accept_failures <= 4);  // paused between tries, not a busy loop
    CHECK(lines.str().find("gateway: accept failed: Too many open files; accepting again in "
                           "500 ms") != std::string::npos);
}
#endif
