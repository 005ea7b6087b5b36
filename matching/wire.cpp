#include "matching/wire.hpp"

#include <array>
#include <stdexcept>

#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>

#include "matching/profile.hpp"
#include "matching/store.hpp"
#include "mesh/frame.hpp"
#include "mesh/text.hpp"

namespace matchmesh::matching {
namespace {

// An ID or a name: no control characters. A text value may hold tabs and newlines.
// (A view into the message.)
std::string_view read_text(capnp::Text::Reader text, std::size_t bytes_min, std::size_t bytes_max,
                           const char* field) {
    return mesh::read_text_view(text, {.bytes_min = bytes_min, .bytes_max = bytes_max}, field);
}

// A bucket key: its profile's ID, tag and bucket numbers, separated by tabs.
std::string_view read_key(capnp::Text::Reader text) {
    return mesh::read_text_view(
        text, {.bytes_min = 1, .bytes_max = key_bytes_max, .control_allowed = true}, "key");
}

std::chrono::seconds read_ttl(std::uint8_t seconds) {
    const std::chrono::seconds ttl(seconds);
    if (ttl < ttl_min || ttl > ttl_max) {
        throw std::invalid_argument(fmt::format("TTL of {} s is outside 1..60", seconds));
    }
    return ttl;
}

// Decodes the payload's root with `read` inside one try block.
template <typename Root, typename Read>
auto decode(mesh::PayloadView payload, const capnp::ReaderOptions& options, Read&& read)
    -> Result<decltype(read(std::declval<typename Root::Reader>()))> {
    try {
        capnp::FlatArrayMessageReader message(kj::arrayPtr(payload.data(), payload.size()),
                                              options);
        if constexpr (std::is_void_v<decltype(read(message.getRoot<Root>()))>) {
            read(message.getRoot<Root>());
            return {};
        } else {
            return read(message.getRoot<Root>());
        }
    } catch (const std::invalid_argument& invalid) {
        return fail(Errc::invalid_value, invalid.what());
    } catch (const kj::Exception& error) {
        return fail(Errc::invalid_value, error.getDescription().cStr());
    }
}

template <typename List>
void check_size(const List& list, std::size_t max, const char* what) {
    if (list.size() > max) {
        throw std::invalid_argument(fmt::format("{} {}, at most {}", list.size(), what, max));
    }
}

// An entry's scalar as a view into the message; its text checked (tabs and newlines allowed).
// Throws std::invalid_argument for a kind this version does not know.
FoundEntry::Scalar read_scalar(wire::Value::Reader entry) {
    switch (entry.which()) {
        case wire::Value::INT: return entry.getInt();
        case wire::Value::FLOAT: return entry.getFloat();
        case wire::Value::BOOL: return entry.getBool();
        case wire::Value::TEXT:
            return mesh::read_text_view(entry.getText(),
                                        {.bytes_max = value_bytes_max, .control_allowed = true},
                                        "value text");
        case wire::Value::BYTES: {
            auto data = entry.getBytes();
            return std::span<const std::uint8_t>(data.begin(), data.size());
        }
        default: throw std::invalid_argument("unknown value kind");
    }
}

// An entry's scalar, held in a map or viewed in a message.
void set_scalar(wire::Value::Builder out, std::int64_t scalar) {
    out.setInt(scalar);
}
void set_scalar(wire::Value::Builder out, double scalar) {
    out.setFloat(scalar);
}
void set_scalar(wire::Value::Builder out, bool scalar) {
    out.setBool(scalar);
}
void set_scalar(wire::Value::Builder out, std::string_view scalar) {
    out.setText(mesh::text_field(scalar));
}
void set_scalar(wire::Value::Builder out, std::span<const std::uint8_t> scalar) {
    out.setBytes(kj::arrayPtr(scalar.data(), scalar.size()));
}
void set_scalar(wire::Value::Builder out, const Bytes& scalar) {
    set_scalar(out, std::span<const std::uint8_t>(scalar.data));
}

// The texts an answer shares, numbered from 1 in the order first used; 0 stands for "in its own
// field". The writer adds texts until shared_texts_max are taken; the reader checks each text once,
// for what every field it may stand for allows (no control characters, at most value_bytes_max
// bytes), and a field then checks its length.
class SharedTexts {
public:
    SharedTexts() = default;

    static SharedTexts read(capnp::List<capnp::Text>::Reader list) {
        if (list.size() > shared_texts_max) {
            throw std::invalid_argument(
                fmt::format("{} shared texts, at most {} allowed", list.size(), shared_texts_max));
        }
        SharedTexts read;
        for (auto text : list) {
            read.texts_[read.count_++] = read_text(text, 0, value_bytes_max, "shared text");
        }
        return read;
    }

    // The text's number, added if new; 0 once the table is full.
    std::uint16_t number_of(std::string_view text) {
        for (std::size_t i = 0; i < count_; ++i) {
            if (texts_[i] == text) {
                return static_cast<std::uint16_t>(i + 1);
            }
        }
        if (count_ == texts_.size()) {
            return 0;
        }
        texts_[count_++] = text;
        return static_cast<std::uint16_t>(count_);
    }

    [[nodiscard]] std::string_view text(std::uint16_t number, std::size_t bytes_min,
                                        std::size_t bytes_max, const char* field) const {
        if (number > count_) {
            throw std::invalid_argument(
                fmt::format("{} is shared text {} of {}", field, number, count_));
        }
        const std::string_view found = texts_[number - 1];
        if (found.size() < bytes_min || found.size() > bytes_max) {
            throw std::invalid_argument(fmt::format("{} must be {}..{} bytes, got {}", field,
                                                    bytes_min, bytes_max, found.size()));
        }
        return found;
    }

    [[nodiscard]] std::span<const std::string_view> texts() const {
        return {texts_.data(), count_};
    }

private:
    std::array<std::string_view, shared_texts_max> texts_;
    std::size_t count_ = 0;
};

// A value's entries, each name in its own field or, given `shared`, numbered there when it can be.
void write_entries(capnp::List<wire::Value>::Builder list, const ValueMap& value,
                   SharedTexts* shared) {
    unsigned i = 0;
    for (const auto& [name, scalar] : value) {
        auto out = list[i++];
        if (const std::uint16_t number = shared != nullptr ? shared->number_of(name) : 0;
            number != 0) {
            out.setNameText(number);
        } else {
            out.setName(name);
        }
        std::visit([&out](const auto& held) { set_scalar(out, held); }, scalar);
    }
}

}  // namespace

void write_value(capnp::List<wire::Value>::Builder list, const ValueMap& value) {
    write_entries(list, value, nullptr);
}

void write_value(capnp::List<wire::Value>::Builder list, FoundValue value) {
    unsigned i = 0;
    for (const FoundEntry& entry : value) {
        auto out = list[i++];
        out.setName(mesh::text_field(entry.name));
        std::visit([&out](const auto& viewed) { set_scalar(out, viewed); }, entry.scalar);
    }
}

ValueMap read_value(capnp::List<wire::Value>::Reader list) {
    check_size(list, value_entries_max, "value entries");
    ValueMap value;
    value.reserve(list.size());
    for (auto entry : list) {
        const std::string_view name = read_text(entry.getName(), 1, value_bytes_max, "value name");
        Value scalar = to_value(read_scalar(entry));
        // Our writers send names in order (write_value), each then goes at the end.
        if (value.empty() || value.rbegin()->first < name) {
            value.emplace_hint(value.end(), name, std::move(scalar));
        } else if (!value.emplace(name, std::move(scalar)).second) {
            throw std::invalid_argument("value names repeat");
        }
    }
    if (auto ok = validate_value(value); !ok) {
        throw std::invalid_argument(ok.error().message);
    }
    return value;
}

namespace {

// read_value's checks, with the entries left where they lie: views into the message, in room
// `keeper` gives.
FoundValue read_value_in_place(capnp::List<wire::Value>::Reader list, const SharedTexts& shared,
                               SearchOutcome& keeper) {
    check_size(list, value_entries_max, "value entries");
    const std::span<FoundEntry> out = keeper.entries(list.size());
    std::size_t bytes = 0;
    bool in_order = true;  // so far
    for (unsigned i = 0; i < list.size(); ++i) {
        auto entry = list[i];
        FoundEntry& read = out[i];
        read.name = entry.getNameText() != 0
                        ? shared.text(entry.getNameText(), 1, value_bytes_max, "value name")
                        : read_text(entry.getName(), 1, value_bytes_max, "value name");
        read.scalar = read_scalar(entry);
        bytes += read.name.size() + payload_bytes(read.scalar);
        if (bytes > value_bytes_max) {
            throw std::invalid_argument(fmt::format("value is larger than {} bytes at entry '{}'",
                                                    value_bytes_max, read.name));
        }
        // Our writers send names in order (write_value): a repeat is looked for only once they
        // are out of it.
        in_order = in_order && (i == 0 || out[i - 1].name < read.name);
        if (!in_order && std::any_of(out.begin(), out.begin() + i, [&](const FoundEntry& earlier) {
                return earlier.name == read.name;
            })) {
            throw std::invalid_argument("value names repeat");
        }
    }
    return out;
}

// An offer this version does not know (a later one's) reads as none: it only orders candidates.
Offer read_offer(std::uint8_t offer) {
    return offer == static_cast<std::uint8_t>(Offer::yours) ||
                   offer == static_cast<std::uint8_t>(Offer::another)
               ? static_cast<Offer>(offer)
               : Offer::none;
}

}  // namespace

mesh::Payload encode_add(std::span<const AddedItem> items) {
    return mesh::make_payload<wire::AddItems>([&](wire::AddItems::Builder root) {
        auto list = root.initItems(static_cast<unsigned>(items.size()));
        for (unsigned i = 0; i < items.size(); ++i) {
            const AddedItem& item = items[i];
            auto out = list[i];
            out.setProfileId(item.profile_id);
            out.setKey(item.key);
            out.setUniqueId(item.unique_id);
            write_value(out.initValue(static_cast<unsigned>(item.value.size())), item.value);
            out.setTtlSeconds(static_cast<std::uint8_t>(item.ttl.count()));
        }
    });
}

mesh::Payload encode_remove(std::string_view profile_id, std::span<const std::string> unique_ids) {
    return mesh::make_payload<wire::RemoveItems>([&](wire::RemoveItems::Builder root) {
        root.setProfileId(std::string(profile_id));
        mesh::write_texts(root.initUniqueIds(static_cast<unsigned>(unique_ids.size())), unique_ids);
    });
}

mesh::Payload encode_search(std::span<const std::string_view> keys, std::size_t limit,
                            Handout handout) {
    return mesh::make_payload<wire::SearchRequest>([&](wire::SearchRequest::Builder root) {
        auto list = root.initKeys(static_cast<unsigned>(keys.size()));
        for (unsigned i = 0; i < keys.size(); ++i) {
            list.set(i, capnp::Text::Reader(keys[i].data(), keys[i].size()));
        }
        root.setLimit(static_cast<std::uint32_t>(limit));
        root.setRotation(handout.rotation);
        root.setSharedTexts(true);
        root.setOfferHoldMs(static_cast<std::uint32_t>(handout.offer_hold.count()));
    });
}

mesh::Payload encode_search_response(std::span<const KeyedView> items, Time now,
                                     bool shared_texts) {
    mesh::LocalMessageBuilder message;
    auto root = message.initRoot<wire::SearchResponse>();
    auto list = root.initItems(static_cast<unsigned>(items.size()));
    const auto text = mesh::text_field;
    SharedTexts shared;
    for (unsigned i = 0; i < items.size(); ++i) {
        const FoundItem& item = items[i].item;
        auto out = list[i];
        out.setKeyIndex(static_cast<std::uint32_t>(items[i].key_index));
        out.setUniqueId(text(item.unique_id));
        write_entries(out.initValue(static_cast<unsigned>(item.value->size())), *item.value,
                      shared_texts ? &shared : nullptr);
        out.setTtlSeconds(static_cast<std::uint8_t>(item.ttl.count()));
        const auto remaining = std::max<std::int64_t>(0, (item.expires_at - now).count());
        out.setRemainingMs(static_cast<std::uint32_t>(remaining));
        out.setOffer(static_cast<std::uint8_t>(item.offer));
        if (!shared_texts) {
            out.setProfileId(text(item.profile_id));
            out.setOrigin(text(item.origin));
            continue;
        }
        if (const std::uint16_t number = shared.number_of(item.origin); number != 0) {
            out.setOriginText(number);
        } else {
            out.setOrigin(text(item.origin));
        }
    }
    if (!shared.texts().empty()) {
        const auto texts = shared.texts();
        auto out = root.initTexts(static_cast<unsigned>(texts.size()));
        for (unsigned i = 0; i < texts.size(); ++i) {
            out.set(i, text(texts[i]));
        }
    }
    return mesh::Payload::encode(message);
}

Result<std::vector<AddedItem>> decode_add(mesh::PayloadView payload,
                                          const capnp::ReaderOptions& options) {
    return decode<wire::AddItems>(payload, options, [](wire::AddItems::Reader root) {
        auto list = root.getItems();
        check_size(list, add_batch_max, "items");
        std::vector<AddedItem> items;
        items.reserve(list.size());
        for (auto entry : list) {
            AddedItem item;
            item.profile_id =
                read_text(entry.getProfileId(), 1, profile_id_bytes_max, "profile ID");
            item.key = read_key(entry.getKey());
            if (!item.key.starts_with(item.profile_id + '\t')) {
                throw std::invalid_argument("key does not belong to its profile");
            }
            item.unique_id = read_text(entry.getUniqueId(), 1, unique_id_bytes_max, "unique ID");
            item.value = read_value(entry.getValue());
            item.ttl = read_ttl(entry.getTtlSeconds());
            items.push_back(std::move(item));
        }
        return items;
    });
}

Result<RemovedItems> decode_remove(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::RemoveItems>(payload, options, [](wire::RemoveItems::Reader root) {
        RemovedItems removed;
        removed.profile_id = read_text(root.getProfileId(), 1, profile_id_bytes_max, "profile ID");
        auto list = root.getUniqueIds();
        check_size(list, remove_batch_max, "unique IDs");
        for (auto id : list) {
            removed.unique_ids.emplace_back(read_text(id, 1, unique_id_bytes_max, "unique ID"));
        }
        return removed;
    });
}

Result<SearchQuery> decode_search(mesh::PayloadView payload, const capnp::ReaderOptions& options) {
    return decode<wire::SearchRequest>(payload, options, [](wire::SearchRequest::Reader root) {
        SearchQuery query;
        auto list = root.getKeys();
        check_size(list, search_keys_max, "keys");
        query.keys.reserve(list.size());
        for (auto key : list) {
            query.keys.push_back(read_key(key));
        }
        query.limit = root.getLimit();
        query.handout.rotation = root.getRotation();
        query.handout.offer_hold = std::min(Duration(root.getOfferHoldMs()), offer_hold_max);
        query.shared_texts = root.getSharedTexts();
        if (query.limit < 1 || query.limit > found_items_max) {
            throw std::invalid_argument(
                fmt::format("limit {} is outside 1..{}", query.limit, found_items_max));
        }
        return query;
    });
}

Result<void> decode_search_response(mesh::PayloadView payload, const capnp::ReaderOptions& options,
                                    SearchOutcome& keeper, std::vector<KeyedFound>& out) {
    // Only an answer with items is kept; they are read from the copy.
    auto items = decode<wire::SearchResponse>(
        payload, options, [](wire::SearchResponse::Reader root) { return root.getItems().size(); });
    if (!items || *items == 0) {
        return items ? Result<void>{} : std::unexpected(items.error());
    }
    return decode<wire::SearchResponse>(
        keeper.keep_answer(payload), options, [&](wire::SearchResponse::Reader root) {
            auto list = root.getItems();
            check_size(list, found_items_max, "items");
            const SharedTexts shared = SharedTexts::read(root.getTexts());
            for (auto entry : list) {
                const std::uint32_t key_index = entry.getKeyIndex();
                Found& item = out.emplace_back(KeyedFound{key_index, {}}).item;
                if (entry.hasProfileId()) {  // else left out: its key's, which the caller knows
                    item.profile_id =
                        read_text(entry.getProfileId(), 1, profile_id_bytes_max, "profile ID");
                }
                item.unique_id =
                    read_text(entry.getUniqueId(), 1, unique_id_bytes_max, "unique ID");
                item.value = read_value_in_place(entry.getValue(), shared, keeper);
                item.ttl = read_ttl(entry.getTtlSeconds());
                item.remaining = Duration(entry.getRemainingMs());
                item.offer = read_offer(entry.getOffer());
                item.origin =
                    entry.getOriginText() != 0
                        ? shared.text(entry.getOriginText(), 0, origin_bytes_max, "origin")
                        : read_text(entry.getOrigin(), 0, origin_bytes_max, "origin");
            }
        });
}

}  // namespace matchmesh::matching
