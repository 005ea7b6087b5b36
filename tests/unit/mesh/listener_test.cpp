// The listener: what it cannot open is said with the address, and the sockets it accepts send
// their frames without delay.
#include <doctest/doctest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

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
