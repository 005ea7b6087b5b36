#include "node/gateway/websocket_gateway.hpp"

#include <array>
#include <atomic>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <fmt/format.h>

#include "mesh/asio/log_throttle.hpp"
#include "mesh/frame.hpp"
#include "node/client_protocol.hpp"
#include "node/gateway/web_files.hpp"

namespace matchmesh::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using boost::system::error_code;

auto on_error(error_code& error) { return net::redirect_error(net::use_awaitable, error); }

std::string text_of(const Address& address) {
    return mesh::join_host_port(address.host, address.port);
}

std::string text_of(const tcp::endpoint& endpoint) {
    return mesh::join_host_port(endpoint.address().to_string(), endpoint.port());
}

// Resolves `address` and connects `stream` to it within `timeout`.
net::awaitable<error_code> connect_to(beast::tcp_stream& stream, const Address& address,
                                      std::chrono::seconds timeout) {
    error_code error;
    tcp::resolver resolver(stream.get_executor());
    const auto endpoints = co_await resolver.async_resolve(
        address.host, std::to_string(address.port), on_error(error));
    if (!error) {
        stream.expires_after(timeout);
        co_await stream.async_connect(endpoints, on_error(error));
    }
    co_return error;
}

using Request = http::request<http::empty_body>;

constexpr std::chrono::milliseconds accept_pause{500};

}  // namespace

struct WebSocketGateway::State {
    GatewayOptions options;
    std::shared_ptr<spdlog::logger> log;
    net::io_context context{1};
    tcp::acceptor acceptor{context};
    std::size_t open = 0;  // connections being served
    std::size_t next_node = 0;
    GatewayCounters counters;
    mesh::LogThrottle throttle;
    std::atomic<bool> stopping = false;

    // Runs a coroutine on the loop; what it throws ends it alone, logged.
    void spawn(net::awaitable<void> work);
    net::awaitable<void> accept_loop();
    void turn_away(tcp::socket& socket);
    net::awaitable<void> serve(tcp::socket socket);
    net::awaitable<void> answer(beast::tcp_stream& stream, const Request& request);
    net::awaitable<std::string> cluster_metrics();
    net::awaitable<std::optional<tcp::socket>> connect_node(const std::string& client);
    [[nodiscard]] std::optional<std::string> refused_origin(const Request& request) const;
    net::awaitable<void> relay(beast::tcp_stream stream, const Request& request,
                               const std::string& client);
};

namespace {

// One WebSocket connection and its node connection. Two loops carry messages, one each way; the
// first to end says why (`closing`), closes the node's side, and the loop toward the client
// sends the WebSocket close: Beast allows one writer at a time, and that loop is it.
struct Relay {
    Relay(websocket::stream<beast::tcp_stream> socket_to_client, tcp::socket socket_to_node)
        : client(std::move(socket_to_client)),
          node(std::move(socket_to_node)),
          write_deadline(node.get_executor()) {}

    websocket::stream<beast::tcp_stream> client;
    tcp::socket node;
    net::steady_timer write_deadline;
    std::optional<websocket::close_reason> closing;  // what the client is told, if anything
    mesh::Frame last_word;  // a reply (id 0) sent before the close, as the client port does
    bool client_gone = false;  // it closed, failed, or was too slow: nothing more is said to it
    bool slow = false;         // it took no message within the write deadline

    void end(std::optional<websocket::close_reason> reason, mesh::Frame word = {}) {
        if (!closing && reason) {
            closing = std::move(reason);
            last_word = std::move(word);
        }
        error_code ignored;
        node.shutdown(tcp::socket::shutdown_both, ignored);
        node.close(ignored);
    }
};

// Reads one message of at most `limit` bytes into `message`, a piece at a time so that a larger
// one costs no more than the limit: false when it is larger (the rest is left unread).
net::awaitable<bool> read_within(websocket::stream<beast::tcp_stream>& client,
                                 beast::flat_buffer& message, std::size_t limit,
                                 error_code& error) {
    message.clear();
    do {
        co_await client.async_read_some(message, limit + 1 - message.size(), on_error(error));
        if (error) {
            co_return true;
        }
        if (message.size() > limit) {
            co_return false;
        }
    } while (!client.is_message_done());
    co_return true;
}

net::awaitable<void> client_to_node(std::shared_ptr<Relay> relay, std::size_t message_bytes_max,
                                    GatewayCounters& counters, spdlog::logger& log,
                                    mesh::LogThrottle& throttle, std::string client) {
    std::optional<websocket::close_reason> reason;
    mesh::Frame word;
    beast::flat_buffer message;
    while (true) {
        error_code error;
        const bool within = co_await read_within(relay->client, message, message_bytes_max, error);
        if (error) {
            relay->client_gone = true;
            break;
        }
        if (!within) {
            ++counters.bad_messages;
            const std::string why =
                fmt::format("a message exceeds {} bytes (the node's limits.maxClientFrameBytes)",
                            message_bytes_max);
            word = node::encode_reply(
                node::ClientReply{0, node::error_of(node::ClientErrc::frame_too_large, why)});
            reason = websocket::close_reason(websocket::close_code::too_big, why);
            break;
        }
        const std::size_t size = message.size();
        if (!relay->client.got_binary()) {
            ++counters.bad_messages;
            reason = websocket::close_reason(websocket::close_code::unknown_data,
                                             "text messages are not understood: send each "
                                             "command as one binary message (a Cap'n Proto "
                                             "Request)");
            break;
        }
        if (size == 0 || size % sizeof(capnp::word) != 0) {
            ++counters.bad_messages;
            reason = websocket::close_reason(
                websocket::close_code::bad_payload,
                fmt::format("a message of {} bytes is not a Cap'n Proto message (whole 8-byte "
                            "words)",
                            size));
            break;
        }
        const auto header = mesh::frame_header(size);
        const std::array<net::const_buffer, 2> frame{net::buffer(header), message.data()};
        co_await net::async_write(relay->node, frame, on_error(error));
        if (error) {
            break;
        }
        ++counters.messages_in;
    }
    if (reason) {
        throttle.warn(log, "bad_message", "gateway: closing the connection from {}: {}", client,
                      std::string(reason->reason.data(), reason->reason.size()));
    }
    relay->end(std::move(reason), std::move(word));
}

net::awaitable<void> node_to_client(std::shared_ptr<Relay> relay, const GatewayOptions& options,
                                    GatewayCounters& counters, spdlog::logger& log,
                                    mesh::LogThrottle& throttle, std::string client) {
    mesh::FrameLimits limits;
    limits.frame_bytes_max = options.node_frame_bytes_max;
    // What the node sent, read as it comes (several frames a read when it sends several), and
    // handed on one frame at a time.
    beast::flat_buffer inbound;
    const auto header_of = [&inbound] {
        return std::span<const std::byte, mesh::frame_header_bytes>(
            static_cast<const std::byte*>(inbound.data().data()), mesh::frame_header_bytes);
    };
    while (true) {
        error_code error;
        std::optional<std::size_t> length;  // of the next frame's body, once its header is in
        while (true) {
            if (!length && inbound.size() >= mesh::frame_header_bytes) {
                const auto parsed = mesh::parse_header(header_of(), limits);
                if (!parsed) {
                    relay->end(websocket::close_reason(
                        websocket::close_code::internal_error,
                        "the node sent a frame the gateway cannot carry"));
                    log.error("gateway: the node's frame for {} was refused: {}", client,
                              parsed.error().message);
                    error = net::error::invalid_argument;
                    break;
                }
                length = *parsed;
            }
            const std::size_t whole = mesh::frame_header_bytes + length.value_or(0);
            if (length && inbound.size() >= whole) {
                break;
            }
            const std::size_t read = co_await relay->node.async_read_some(
                inbound.prepare(std::max<std::size_t>(16 * 1024, whole - inbound.size())),
                on_error(error));
            if (error) {
                break;
            }
            inbound.commit(read);
        }
        if (error) {
            break;
        }
        const auto body = net::buffer(
            static_cast<const std::byte*>(inbound.data().data()) + mesh::frame_header_bytes,
            *length);
        // A client that takes no message within the deadline is dropped: its messages would
        // otherwise wait here, and the node's for it in the node.
        relay->write_deadline.expires_after(options.write_timeout);
        relay->write_deadline.async_wait([relay](error_code expired) {
            if (!expired) {
                relay->slow = true;
                error_code ignored;
                beast::get_lowest_layer(relay->client).socket().close(ignored);
            }
        });
        co_await relay->client.async_write(body, on_error(error));
        relay->write_deadline.cancel();
        if (error) {
            relay->client_gone = true;
            break;
        }
        inbound.consume(mesh::frame_header_bytes + *length);
        ++counters.messages_out;
    }
    if (relay->slow) {
        ++counters.slow_readers;
        throttle.warn(log, "slow_reader",
                      "gateway: closed the connection from {}: it took no message within {} ms",
                      client, options.write_timeout.count());
    }
    relay->end(websocket::close_reason(websocket::close_code::normal,
                                       "the node closed the connection"));
    if (!relay->client_gone && relay->client.is_open()) {
        error_code ignored;
        if (!relay->last_word.empty()) {
            co_await relay->client.async_write(
                net::buffer(relay->last_word.data() + mesh::frame_header_bytes,
                            relay->last_word.size() - mesh::frame_header_bytes),
                on_error(ignored));
        }
        co_await relay->client.async_close(*relay->closing, on_error(ignored));
    }
}

http::response<http::string_body> plain_response(const Request& request, http::status status,
                                                 std::string body) {
    http::response<http::string_body> response(status, request.version());
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.set(http::field::cache_control, "no-store");
    response.keep_alive(request.keep_alive());
    response.body() = std::move(body);
    response.prepare_payload();
    return response;
}

}  // namespace

void WebSocketGateway::State::spawn(net::awaitable<void> work) {
    net::co_spawn(context, std::move(work), [this](const std::exception_ptr& thrown) {
        if (!thrown) {
            return;
        }
        try {
            std::rethrow_exception(thrown);
        } catch (const std::exception& error) {
            throttle.warn(*log, "failed", "gateway: a connection failed: {}", error.what());
        }
    });
}

net::awaitable<void> WebSocketGateway::State::accept_loop() {
    while (!stopping) {
        error_code error;
        tcp::socket socket = co_await acceptor.async_accept(on_error(error));
        if (error) {
            if (error == net::error::operation_aborted || stopping) {
                co_return;
            }
            // Out of descriptors, say: the connection stays queued and the next accept would
            // fail at once, so accepting pauses rather than spinning on it.
            ++counters.accept_failures;
            throttle.warn(*log, "accept", "gateway: accept failed: {}; accepting again in {} ms",
                          error.message(), accept_pause.count());
            net::steady_timer pause(context, accept_pause);
            co_await pause.async_wait(on_error(error));
            continue;
        }
        if (open >= options.connections_max) {
            turn_away(socket);
            continue;
        }
        spawn(serve(std::move(socket)));
    }
}

// A connection past the limit hears a 503 written straight to the socket (it holds a few dozen
// bytes without blocking) and is closed: the gateway spends nothing more on it.
void WebSocketGateway::State::turn_away(tcp::socket& socket) {
    ++counters.refused_limit;
    throttle.warn(*log, "limit", "gateway: refused a connection: {} connections already open",
                  open);
    constexpr std::string_view why = "this gateway holds its maximum of connections; try again\n";
    const std::string response = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
        "Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{}",
        why.size(), why);
    error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(net::buffer(response), ignored);
    socket.close(ignored);
}

net::awaitable<void> WebSocketGateway::State::serve(tcp::socket socket) {
    struct Counted {
        std::size_t& open;
        explicit Counted(std::size_t& count) : open(count) { ++open; }
        ~Counted() { --open; }
    };
    const Counted counted(open);
    error_code error;
    const tcp::endpoint peer = socket.remote_endpoint(error);
    const std::string client = error ? std::string("?") : text_of(peer);
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    while (!stopping) {
        http::request_parser<http::empty_body> parser;
        parser.header_limit(8 * 1024);
        stream.expires_after(options.handshake_timeout);
        co_await http::async_read(stream, buffer, parser, on_error(error));
        if (error) {
            if (error != http::error::end_of_stream && error != beast::error::timeout &&
                error != net::error::eof && error != net::error::connection_reset) {
                throttle.warn(*log, "http", "gateway: a bad request from {}: {}", client,
                              error.message());
                auto response = plain_response(Request{}, http::status::bad_request,
                                               "bad request: " + error.message() + "\n");
                response.keep_alive(false);
                co_await http::async_write(stream, response, on_error(error));
            }
            break;
        }
        const Request request = parser.release();
        if (websocket::is_upgrade(request)) {
            co_await relay(std::move(stream), request, client);
            break;
        }
        co_await answer(stream, request);
        if (!request.keep_alive()) {
            break;
        }
    }
}

net::awaitable<void> WebSocketGateway::State::answer(beast::tcp_stream& stream,
                                                     const Request& request) {
    ++counters.http_requests;
    error_code error;
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
        auto response = plain_response(request, http::status::method_not_allowed,
                                       "only GET is served here\n");
        response.set(http::field::allow, "GET, HEAD");
        co_await http::async_write(stream, response, on_error(error));
        co_return;
    }
    const std::string_view target(request.target().data(), request.target().size());
    if (target == "/ws" || target.starts_with("/ws?")) {
        auto response = plain_response(request, http::status::upgrade_required,
                                       "/ws is a WebSocket endpoint: open it with a WebSocket "
                                       "client\n");
        response.set(http::field::upgrade, "websocket");
        co_await http::async_write(stream, response, on_error(error));
        co_return;
    }
    if (target == "/cluster") {
        auto response = plain_response(request, http::status::ok, co_await cluster_metrics());
        co_await http::async_write(stream, response, on_error(error));
        co_return;
    }
    const auto path = file_for(options.web_root, target);
    http::file_body::value_type file;
    if (path) {
        file.open(path->c_str(), beast::file_mode::scan, error);
    }
    if (!path || error) {
        auto response = plain_response(request, http::status::not_found, "not found\n");
        co_await http::async_write(stream, response, on_error(error));
        co_return;
    }
    const auto mime = media_type(*path);
    if (request.method() == http::verb::head) {
        http::response<http::empty_body> response(http::status::ok, request.version());
        response.set(http::field::content_type, beast::string_view(mime.data(), mime.size()));
        response.content_length(file.size());
        response.keep_alive(request.keep_alive());
        co_await http::async_write(stream, response, on_error(error));
        co_return;
    }
    http::response<http::file_body> response(
        std::piecewise_construct, std::make_tuple(std::move(file)),
        std::make_tuple(http::status::ok, request.version()));
    response.set(http::field::content_type, beast::string_view(mime.data(), mime.size()));
    response.set(http::field::cache_control, "no-cache");
    response.prepare_payload();
    response.keep_alive(request.keep_alive());
    co_await http::async_write(stream, response, on_error(error));
}

// Each node's /metrics as its admin port gives it, under a line naming the node; a node that
// does not answer within a second gets a comment saying so.
net::awaitable<std::string> WebSocketGateway::State::cluster_metrics() {
    std::string out;
    for (const Address& admin : options.admins) {
        const std::string name = text_of(admin);
        out += fmt::format("# node {}\n", name);
        beast::tcp_stream stream(context);
        error_code error = co_await connect_to(stream, admin, std::chrono::seconds(1));
        if (!error) {
            http::request<http::empty_body> get(http::verb::get, "/metrics", 11);
            get.set(http::field::host, name);
            co_await http::async_write(stream, get, on_error(error));
        }
        beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(4 * 1024 * 1024);
        if (!error) {
            co_await http::async_read(stream, buffer, parser, on_error(error));
        }
        if (error) {
            out += fmt::format("# unreachable: {}\n", error.message());
            continue;
        }
        out += parser.get().body();
        error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    }
    co_return out;
}

// The next node in turn that takes a connection; each is tried once.
net::awaitable<std::optional<tcp::socket>> WebSocketGateway::State::connect_node(
    const std::string& client) {
    for (std::size_t tried = 0; tried < options.nodes.size(); ++tried) {
        const Address& node = options.nodes[next_node++ % options.nodes.size()];
        beast::tcp_stream stream(context);
        error_code error = co_await connect_to(stream, node, std::chrono::seconds(3));
        if (!error) {
            stream.expires_never();
            tcp::socket socket = stream.release_socket();
            socket.set_option(tcp::no_delay(true), error);
            co_return std::optional<tcp::socket>(std::move(socket));
        }
        throttle.warn(*log, "node", "gateway: cannot reach node {} for {}: {}", text_of(node),
                      client, error.message());
    }
    co_return std::nullopt;
}

// Why a browser page's handshake is refused for its Origin, or nothing if it may connect.
std::optional<std::string> WebSocketGateway::State::refused_origin(const Request& request) const {
    const auto found = request.find(http::field::origin);
    if (found == request.end()) {
        return std::nullopt;  // not a browser: tokens decide, as on the client port
    }
    const std::string origin(found->value().data(), found->value().size());
    const std::string host(request[http::field::host].data(), request[http::field::host].size());
    if (origin == "http://" + host || origin == "https://" + host) {
        return std::nullopt;  // a page this gateway served
    }
    for (const std::string& allowed : options.allowed_origins) {
        if (allowed == "*" || allowed == origin) {
            return std::nullopt;
        }
    }
    return fmt::format("pages from {} may not connect here (the gateway's --allow-origin)\n",
                       origin);
}

net::awaitable<void> WebSocketGateway::State::relay(beast::tcp_stream stream,
                                                    const Request& request,
                                                    const std::string& client) {
    error_code error;
    const std::string_view target(request.target().data(), request.target().size());
    std::optional<std::pair<http::status, std::string>> refusal;
    if (target != "/ws" && !target.starts_with("/ws?")) {
        refusal.emplace(http::status::not_found, "the WebSocket endpoint is /ws\n");
    } else if (auto origin = refused_origin(request)) {
        ++counters.refused_origin;
        throttle.warn(*log, "origin", "gateway: refused a WebSocket from {}: {}", client,
                      *origin);
        refusal.emplace(http::status::forbidden, std::move(*origin));
    }
    std::optional<tcp::socket> node;
    if (!refusal) {
        node = co_await connect_node(client);
        if (!node) {
            ++counters.node_unreachable;
            refusal.emplace(http::status::service_unavailable,
                            "no node takes connections now; try again\n");
        }
    }
    if (refusal) {
        auto response = plain_response(request, refusal->first, std::move(refusal->second));
        response.keep_alive(false);
        if (refusal->first == http::status::service_unavailable) {
            response.set(http::field::retry_after, "1");
        }
        co_await http::async_write(stream, response, on_error(error));
        co_return;
    }
    stream.expires_never();
    websocket::stream<beast::tcp_stream> socket(std::move(stream));
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = options.handshake_timeout;
    timeouts.idle_timeout = options.idle_ping;
    timeouts.keep_alive_pings = true;
    socket.set_option(timeouts);
    socket.read_message_max(0);  // no limit of Beast's: read_within applies the node's
    socket.binary(true);
    co_await socket.async_accept(request, on_error(error));
    if (error) {
        throttle.warn(*log, "upgrade", "gateway: the WebSocket handshake with {} failed: {}",
                      client, error.message());
        error_code ignored;
        node->close(ignored);
        co_return;
    }
    ++counters.websockets;
    auto shared = std::make_shared<Relay>(std::move(socket), std::move(*node));
    spawn(client_to_node(shared, options.message_bytes_max, counters, *log, throttle, client));
    co_await node_to_client(shared, options, counters, *log, throttle, client);
}

WebSocketGateway::WebSocketGateway(GatewayOptions options, std::shared_ptr<spdlog::logger> log)
    : state_(std::make_unique<State>()) {
    state_->options = std::move(options);
    state_->log = std::move(log);
}

WebSocketGateway::~WebSocketGateway() = default;

std::string WebSocketGateway::listen(std::string& error) {
    State& state = *state_;
    error_code failure;
    tcp::resolver resolver(state.context);
    const auto endpoints =
        resolver.resolve(state.options.listen.host, std::to_string(state.options.listen.port),
                         tcp::resolver::passive, failure);
    if (!failure && !endpoints.empty()) {
        const tcp::endpoint endpoint = endpoints.begin()->endpoint();
        state.acceptor.open(endpoint.protocol(), failure);
        if (!failure) {
            state.acceptor.set_option(tcp::acceptor::reuse_address(true), failure);
        }
        if (!failure) {
            state.acceptor.bind(endpoint, failure);
        }
        if (!failure) {
            state.acceptor.listen(net::socket_base::max_listen_connections, failure);
        }
    }
    if (failure || endpoints.empty()) {
        error = fmt::format("cannot listen on {}: {}", text_of(state.options.listen),
                            failure ? failure.message() : "no address");
        return {};
    }
    return text_of(state.acceptor.local_endpoint());
}

void WebSocketGateway::run() {
    state_->spawn(state_->accept_loop());
    state_->context.run();
}

void WebSocketGateway::stop() {
    state_->stopping = true;
    state_->context.stop();
}

GatewayCounters WebSocketGateway::counters() const {
    return state_->counters;
}

}  // namespace matchmesh::gateway
