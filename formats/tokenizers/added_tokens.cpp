#include "formats/tokenizers/added_tokens.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/models/transformer.h"

namespace attn::io {

using nlohmann::json;

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
    for (const char* key : {"lstrip", "rstrip", "single_word"}) {
      const json& flag = a.contains(key) ? a[key] : json(false);
      if (!flag.is_boolean()) return Error{name, where + "." + key, "must be true or false"};
      if (flag.get<bool>()) return Error{name, where + "." + key, "is true; only exact matches are supported"};
    }
    const json& special = a.contains("special") ? a["special"] : json(false);
    if (!special.is_boolean()) return Error{name, where + ".special", "must be true or false"};
    AddedToken token{a["content"].get<std::string>(), static_cast<int>(a["id"].get<std::int64_t>()),
                     special.get<bool>(), k};
    if (token.content.empty()) return Error{name, where + ".content", "is empty"};
    out.tokens_.push_back(std::move(token));
  }
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
    plain(text.substr(plainStart, i - plainStart), plainStart);
    added(*hit);
    i += hit->content.size();
    plainStart = i;
  }
  plain(text.substr(plainStart), plainStart);
}

}  // namespace attn::io
