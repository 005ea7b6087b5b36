// The listener: what it cannot open is said with the address; the sockets it accepts send their
// frames without delay, come non-blocking with their peer's address, and are all taken from a
// burst; running out of descriptors pauses accepting instead of spinning.
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>

#include "support/descriptor_limit.hpp"
#endif

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "mesh/asio/listener.hpp"

using namespace matchmesh;

TEST_CASE("mesh/listener: an address it cannot listen on is named, with the reason") {
    asio::io_context context;
    asio::ip::tcp::acceptor acceptor(context);
    auto opened = mesh::open_listener(acceptor, "127.0.0.1:http-alt-nonsense");
    REQUIRE_FALSE(opened.has_value());
    CHECK(opened.error().starts_with("cannot listen on 127.0.0.1:http-alt-nonsense: "));
}

TEST_CASE("mesh/listener: an accepted connection has TCP_NODELAY, as the listener") {
    asio::io_context context;
    asio::ip::tcp::acceptor acceptor(context);
    auto opened = mesh::open_listener(acceptor, "127.0.0.1:0");
    REQUIRE(opened.has_value());
    asio::ip::tcp::no_delay listening;
    acceptor.get_option(listening);
    CHECK(listening.value());

    auto alive = std::make_shared<bool>(true);
    std::optional<bool> accepted_no_delay;
    asio::co_spawn(context,
                   mesh::accept_each(
                       acceptor, alive,
                       [&](asio::ip::tcp::socket socket, const asio::ip::tcp::endpoint&) {
                           asio::ip::tcp::no_delay option;
                           socket.get_option(option);
                           accepted_no_delay = option.value();
                           std::error_code ignored;
                           acceptor.close(ignored);
                       },
                       [](const std::error_code&) {}),
                   asio::detached);
    asio::ip::tcp::socket client(context);
    client.connect(*opened);
    context.run_for(std::chrono::seconds(5));
    REQUIRE(accepted_no_delay.has_value());
#ifdef __linux__
    CHECK(*accepted_no_delay);
#endif
}

#ifdef __linux__
namespace {

// accept_each on a fresh listener at 127.0.0.1, recording what it hands over.
struct Listening {
    asio::io_context context;
    asio::ip::tcp::acceptor acceptor{context};
    std::shared_ptr<bool> alive = std::make_shared<bool>(true);
    std::vector<asio::ip::tcp::socket> sockets;
    std::vector<asio::ip::tcp::endpoint> peers;
    std::vector<std::error_code> errors;
    asio::ip::tcp::endpoint address;

    Listening() {
        auto opened = mesh::open_listener(acceptor, "127.0.0.1:0");
        REQUIRE(opened.has_value());
        address = *opened;
        asio::co_spawn(context,
                       mesh::accept_each(
                           acceptor, alive,
                           [this](asio::ip::tcp::socket socket,
                                  const asio::ip::tcp::endpoint& peer) {
                               sockets.push_back(std::move(socket));
                               peers.push_back(peer);
                           },
                           [this](const std::error_code& error) { errors.push_back(error); }),
                       asio::detached);
    }

    // Runs the loop until `done` holds or five seconds have passed.
    void run_until(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            context.run_one_for(std::chrono::milliseconds(10));
        }
    }
};

}  // namespace

TEST_CASE("mesh/listener: a burst larger than one turn's batch is accepted whole, each socket "
          "non-blocking, close-on-exec, with its peer's address") {
    Listening listening;

    constexpr std::size_t burst = 150;  // over two turns' worth, all queued before the first
    std::vector<asio::ip::tcp::socket> clients;
    for (std::size_t i = 0; i < burst; ++i) {
        clients.emplace_back(listening.context).connect(listening.address);
    }
    listening.run_until([&] { return listening.sockets.size() == burst; });
    REQUIRE(listening.sockets.size() == burst);
    CHECK(listening.errors.empty());
    for (std::size_t i = 0; i < burst; ++i) {
        const int descriptor = listening.sockets[i].native_handle();
        CHECK((::fcntl(descriptor, F_GETFL) & O_NONBLOCK) != 0);
        CHECK((::fcntl(descriptor, F_GETFD) & FD_CLOEXEC) != 0);
        CHECK(listening.peers[i] == clients[i].local_endpoint());
    }
}

TEST_CASE("mesh/listener: accepted sockets read and write, and a closed one's descriptor serves "
          "the next connection") {
    Listening listening;

    std::set<int> descriptors;
    for (int round = 0; round < 50; ++round) {
        asio::ip::tcp::socket client(listening.context);
        client.connect(listening.address);
        listening.run_until([&] { return !listening.sockets.empty(); });
        REQUIRE_FALSE(listening.sockets.empty());
        auto& server = listening.sockets.back();
        descriptors.insert(server.native_handle());
        asio::write(client, asio::buffer("ping", 4));
        std::array<char, 4> got{};
        std::optional<std::error_code> read;
        asio::async_read(server, asio::buffer(got),
                         [&](const std::error_code& error, std::size_t) { read = error; });
        listening.run_until([&] { return read.has_value(); });
        REQUIRE(read.has_value());
        CHECK_FALSE(*read);
        CHECK(std::string_view(got.data(), got.size()) == "ping");
        asio::write(server, asio::buffer("pong", 4));
        asio::read(client, asio::buffer(got));
        CHECK(std::string_view(got.data(), got.size()) == "pong");
        std::error_code ignored;
        server.close(ignored);
        listening.sockets.clear();
    }
    CHECK(descriptors.size() < 50);  // descriptors were reused, each registered afresh
    CHECK(listening.errors.empty());
}

TEST_CASE("mesh/listener: out of descriptors, accepting pauses, says why, and takes the waiting "
          "connection once descriptors are back") {
    Listening listening;
    listening.context.run_for(std::chrono::milliseconds(20));  // the loop waits for a connection

    asio::ip::tcp::socket client(listening.context);
    client.connect(listening.address);  // queued by the kernel: the accept is what must fail
    test_support::OutOfDescriptors out_of_descriptors;

    listening.context.run_for(std::chrono::milliseconds(1200));
    CHECK(listening.sockets.empty());
    REQUIRE_FALSE(listening.errors.empty());
    CHECK(listening.errors.front() == std::error_code(EMFILE, std::system_category()));
    CHECK(listening.errors.size() <= 4);  // paused between tries, not a busy loop

    out_of_descriptors.restore();
    listening.run_until([&] { return !listening.sockets.empty(); });
    REQUIRE(listening.sockets.size() == 1);  // no new connection needed to wake the loop
    CHECK(listening.peers.front() == client.local_endpoint());
}
#endif
