#include "formats/tokenizers/added_tokens.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/models/transformer.h"

namespace attn::io {

using nlohmann::json;

namespace {
bool isAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

Expected<AddedTokens> AddedTokens::read(const json& root, const std::string& name) {
  AddedTokens out;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return out;
  const json& list = root["added_tokens"];
  if (!list.is_array()) return Error{name, "added_tokens", "must be an array"};
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& a = list[k];
    const std::string where = "added_tokens[" + std::to_string(k) + "]";
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id") ||
        !a["id"].is_number_integer() || a["id"].get<std::int64_t>() < 0 ||
        a["id"].get<std::int64_t>() >= model::kMaxVocab) {
      return Error{name, where, "needs \"content\" (a string) and \"id\" (an integer >= 0)"};
    }
    bool flags[4] = {false, false, false, false};
    const char* keys[4] = {"special", "lstrip", "rstrip", "single_word"};
    for (int f = 0; f < 4; ++f) {
      if (!a.contains(keys[f]) || a[keys[f]].is_null()) continue;
      if (!a[keys[f]].is_boolean()) return Error{name, where + "." + keys[f], "must be true or false"};
      flags[f] = a[keys[f]].get<bool>();
    }
    if (flags[3]) return Error{name, where + ".single_word", "is true; only exact matches are supported"};
    AddedToken token{a["content"].get<std::string>(), static_cast<int>(a["id"].get<std::int64_t>()),
                     flags[0], flags[1], flags[2], k};
    if (token.content.empty()) return Error{name, where + ".content", "is empty"};
    out.tokens_.push_back(std::move(token));
  }
  return fromList(std::move(out.tokens_));
}

AddedTokens AddedTokens::fromList(std::vector<AddedToken> tokens) {
  AddedTokens out;
  out.tokens_ = std::move(tokens);
  std::stable_sort(out.tokens_.begin(), out.tokens_.end(), [](const AddedToken& x, const AddedToken& y) {
    return x.content.size() > y.content.size();
  });
  return out;
}

std::vector<const AddedToken*> AddedTokens::inFileOrder() const {
  std::vector<const AddedToken*> out;
  for (const AddedToken& token : tokens_) out.push_back(&token);
  std::sort(out.begin(), out.end(), [](const AddedToken* a, const AddedToken* b) { return a->index < b->index; });
  return out;
}

const AddedToken* AddedTokens::matchAt(std::string_view text, std::size_t at) const {
  for (const AddedToken& token : tokens_)
    if (text.compare(at, token.content.size(), token.content) == 0) return &token;
  return nullptr;
}

const AddedToken* AddedTokens::find(std::string_view content) const {
  for (const AddedToken& token : tokens_)
    if (token.content == content) return &token;
  return nullptr;
}

bool AddedTokens::isSpecial(int id) const {
  for (const AddedToken& token : tokens_)
    if (token.id == id) return token.special;
  return false;
}

void AddedTokens::split(std::string_view text,
                        const std::function<void(std::string_view, std::size_t)>& plain,
                        const std::function<void(const AddedToken&)>& added) const {
  std::size_t plainStart = 0;
  for (std::size_t i = 0; i < text.size() && !tokens_.empty();) {
    const AddedToken* hit = matchAt(text, i);
    if (!hit) {
      ++i;
      continue;
    }
    std::size_t plainEnd = i;
    if (hit->lstrip)
      while (plainEnd > plainStart && isAsciiSpace(text[plainEnd - 1])) --plainEnd;
    plain(text.substr(plainStart, plainEnd - plainStart), plainStart);
    added(*hit);
    i += hit->content.size();
    if (hit->rstrip)
      while (i < text.size() && isAsciiSpace(text[i])) ++i;
    plainStart = i;
  }
  plain(text.substr(plainStart), plainStart);
}

}  // namespace attn::io
