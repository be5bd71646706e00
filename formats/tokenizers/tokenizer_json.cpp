// Hugging Face tokenizer.json for byte-level BPE (see Gpt2Tokenizer::fromTokenizerJson).
//
// Fields read:
//   model: type "BPE" (or absent), vocab {token: id}, merges ["a b", ...] or [["a", "b"], ...],
//     ignore_merges; byte_fallback, dropout, continuing_subword_prefix and
//     end_of_word_suffix must be off (byte_fallback models are not read yet).
//   normalizer: null, or NFC (applied to the text between added tokens, as Qwen2 ships it).
//   pre_tokenizer: ByteLevel (add_prefix_space, use_regex: GPT-2's pattern), or a Sequence of
//     ByteLevel, Split, Digits, Punctuation, Whitespace and WhitespaceSplit steps (Qwen2 and
//     Llama 3 write Split + ByteLevel, SmolLM Digits + ByteLevel): formats/tokenizers/
//     pre_tokenizer.h.
//   added_tokens: [{id, content, special, lstrip, rstrip, single_word false}], matched in
//     the text before pre-tokenisation, longest first; lstrip / rstrip take the whitespace
//     before / after the match with it (RoBERTa's "<mask>").
//   post_processor: null, ByteLevel, TemplateProcessing (single template: a SpecialToken
//     before $A is the BOS, one after it the EOS, both added to a text run through the
//     model), RobertaProcessing / BertProcessing (cls, sep), or a Sequence of these.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "core/models/transformer.h"
#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/tokenizers/metaspace_bpe.h"
#include "formats/tokenizers/tokenizer_json_detail.h"
#include "formats/tokenizers/unicode_normalize.h"
#include "formats/tokenizers/wordpiece.h"

namespace attn::io {
using nlohmann::json;

namespace tokenizer_json {

bool isOff(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() || (it->is_boolean() && !it->get<bool>()) ||
         (it->is_string() && it->get<std::string>().empty());
}

Expected<std::pair<int, int>> readPostProcessor(const json& root, const std::string& name,
                                                const std::function<int(const std::string&)>& lookup) {
  int bos = -1, eos = -1;
  std::vector<std::pair<json, std::string>> processors;
  if (root.contains("post_processor") && !root["post_processor"].is_null()) {
    const json& p = root["post_processor"];
    if (p.is_object() && p.value("type", std::string()) == "Sequence" && p.contains("processors") &&
        p["processors"].is_array()) {
      for (std::size_t k = 0; k < p["processors"].size(); ++k)
        processors.emplace_back(p["processors"][k],
                                "post_processor.processors[" + std::to_string(k) + "]");
    } else {
      processors.emplace_back(p, "post_processor");
    }
  }
  // special_tokens[token].ids[0] of a template, else lookup(token).
  auto specialId = [&](const json& processor, const std::string& token,
                       const std::string& where) -> Expected<int> {
    if (processor.contains("special_tokens") && processor["special_tokens"].is_object()) {
      const json& table = processor["special_tokens"];
      auto it = table.find(token);
      if (it != table.end() && it->is_object() && it->contains("ids") && (*it)["ids"].is_array() &&
          (*it)["ids"].size() == 1 && (*it)["ids"][0].is_number_integer()) {
        return static_cast<int>((*it)["ids"][0].get<std::int64_t>());
      }
    }
    const int id = lookup(token);
    if (id >= 0) return id;
    return Error{name, where, "names the token \"" + token + "\", which has no id"};
  };
  for (const auto& [p, where] : processors) {
    const std::string t = p.is_object() ? p.value("type", std::string()) : std::string();
    if (t == "ByteLevel") continue;
    if (t == "TemplateProcessing") {
      const json& single = p.contains("single") ? p["single"] : json();
      if (!single.is_array()) return Error{name, where + ".single", "must be an array"};
      // One special token before $A (the BOS) and one after it (the EOS), each optional.
      bool sawSequence = false;
      for (std::size_t k = 0; k < single.size(); ++k) {
        const json& piece = single[k];
        const std::string at = where + ".single[" + std::to_string(k) + "]";
        if (piece.is_object() && piece.contains("Sequence")) {
          const json& seq = piece["Sequence"];
          if (sawSequence || !seq.is_object() || seq.value("id", std::string()) != "A") {
            return Error{name, at, "the single template must hold $A once"};
          }
          sawSequence = true;
          continue;
        }
        if (!piece.is_object() || !piece.contains("SpecialToken")) {
          return Error{name, at, "must be a SpecialToken or the Sequence $A"};
        }
        const json& st = piece["SpecialToken"];
        if (!st.is_object() || !st.contains("id") || !st["id"].is_string()) {
          return Error{name, at + ".SpecialToken.id", "must be a string"};
        }
        Expected<int> id = specialId(p, st["id"].get<std::string>(), at);
        if (!id) return id.error();
        int& slot = sawSequence ? eos : bos;
        if (slot >= 0) {
          return Error{name, at,
                       std::string("a second special token ") + (sawSequence ? "after" : "before") +
                           " $A is not supported (one BOS before, one EOS after)"};
        }
        slot = *id;
      }
      if (!sawSequence) return Error{name, where + ".single", "has no $A"};
    } else if (t == "RobertaProcessing" || t == "BertProcessing") {
      for (const char* key : {"cls", "sep"}) {
        const json& pair = p.contains(key) ? p[key] : json();
        if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer()) {
          return Error{name, where + "." + key, "must be [token, id]"};
        }
        (std::string(key) == "cls" ? bos : eos) = static_cast<int>(pair[1].get<std::int64_t>());
      }
    } else {
      return Error{name, where + ".type", "is \"" + t + "\", which is not read"};
    }
  }
  return std::pair<int, int>(bos, eos);
}

}  // namespace tokenizer_json

Expected<Gpt2Tokenizer> Gpt2Tokenizer::fromTokenizerJson(std::string_view text,
                                                         const std::string& name) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error{name, "", "not valid JSON"};
  if (!root.is_object()) return Error{name, "", "not a JSON object"};

  // 1 model
  const json& model = root.contains("model") ? root["model"] : json();
  if (!model.is_object()) return Error{name, "model", "missing or not an object"};
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return Error{name, "model.type",
                 "is \"" + type + "\"; only BPE tokenizers are read (not WordPiece, Unigram or "
                 "WordLevel)"};
  }
  for (const char* key : {"byte_fallback", "dropout", "continuing_subword_prefix",
                          "end_of_word_suffix"}) {
    if (!tokenizer_json::isOff(model, key)) {
      return Error{name, std::string("model.") + key,
                   "is set; a byte-level BPE has none of these (byte_fallback with Metaspace "
                   "is read by MetaspaceBpeTokenizer)"};
    }
  }
  const json& vocab = model.contains("vocab") ? model["vocab"] : json();
  if (!vocab.is_object() || vocab.empty()) {
    return Error{name, "model.vocab", "missing, empty or not an object of token -> id"};
  }
  std::vector<std::pair<std::string, int>> entries;
  entries.reserve(vocab.size());
  std::vector<bool> idUsed;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= model::kMaxVocab) {
      return Error{name, "model.vocab[\"" + token + "\"]",
                   "the id must be an integer in 0.." + std::to_string(model::kMaxVocab - 1)};
    }
    const int v = static_cast<int>(id.get<std::int64_t>());
    entries.emplace_back(token, v);
    if (idUsed.size() <= static_cast<std::size_t>(v)) idUsed.resize(static_cast<std::size_t>(v) + 1);
    idUsed[static_cast<std::size_t>(v)] = true;
  }
  const json& mergeList = model.contains("merges") ? model["merges"] : json();
  if (!mergeList.is_array() || mergeList.empty()) {
    return Error{name, "model.merges",
                 "missing, empty or not an array (without merges every byte is its own token)"};
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mergeList.size());
  for (std::size_t k = 0; k < mergeList.size(); ++k) {
    const json& m = mergeList[k];
    const std::string where = "model.merges[" + std::to_string(k) + "]";
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
          s.find(' ', space + 1) != std::string::npos) {
        return Error{name, where, "expected \"left right\" (two tokens, one space)"};
      }
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Error{name, where, "expected \"left right\" or [\"left\", \"right\"]"};
    }
  }

  // 2 added tokens (ids outside model.vocab join the vocabulary for decoding)
  Gpt2Tokenizer tokenizer;
  tokenizer.kind_ = "tokenizer.json (byte-level BPE)";
  Expected<AddedTokens> added = AddedTokens::read(root, name);
  if (!added) return added.error();
  tokenizer.added_ = std::move(added).value();
  for (const AddedToken* token : tokenizer.added_.inFileOrder()) {
    const auto slot = static_cast<std::size_t>(token->id);
    if (slot >= idUsed.size() || !idUsed[slot]) {
      entries.emplace_back(token->content, token->id);
      if (idUsed.size() <= slot) idUsed.resize(slot + 1);
      idUsed[slot] = true;
    }
  }

  Expected<gpt2::BytePairEncoder> bpe = gpt2::BytePairEncoder::create(entries, merges);
  if (!bpe) {
    Error error = bpe.error();
    error.file = name;
    error.field = "model." + error.field;
    return error;
  }
  tokenizer.bpe_ = std::move(bpe).value();
  tokenizer.ignoreMerges_ = model.value("ignore_merges", false);

  // 3 normalizer
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    const json& n = root["normalizer"];
    const std::string t = n.is_object() ? n.value("type", std::string()) : std::string();
    if (t != "NFC") {
      return Error{name, "normalizer.type",
                   "is \"" + t + "\"; a byte-level BPE is read with no normalizer or NFC"};
    }
    tokenizer.nfc_ = true;
  }

  // 4 pre-tokenizer (formats/tokenizers/pre_tokenizer.h)
  Expected<PreTokenizer> pre =
      PreTokenizer::fromJson(root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json(), name);
  if (!pre) return pre.error();
  tokenizer.pre_ = std::move(pre).value();

  // 5 post-processor: BOS / EOS
  Expected<std::pair<int, int>> bosEos = tokenizer_json::readPostProcessor(
      root, name, [&](const std::string& token) {
        if (const AddedToken* a = tokenizer.added_.find(token)) return a->id;
        return tokenizer.bpe_.find(token);
      });
  if (!bosEos) return bosEos.error();
  tokenizer.bos_ = bosEos->first;
  tokenizer.eos_ = bosEos->second;
  return tokenizer;
}

Expected<Gpt2Tokenizer> Gpt2Tokenizer::loadTokenizerJson(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxTokenizerFileBytes);
  if (!text) return text.error();
  return fromTokenizerJson(*text, path);
}

Expected<std::shared_ptr<const Tokenizer>> tokenizerFromJson(std::string_view text,
                                                             const std::string& name) {
  if (WordPieceTokenizer::claims(text)) {
    Expected<WordPieceTokenizer> wordPiece = WordPieceTokenizer::fromTokenizerJson(text, name);
    if (!wordPiece) return wordPiece.error();
    return std::shared_ptr<const Tokenizer>(
        std::make_shared<const WordPieceTokenizer>(std::move(wordPiece).value()));
  }
  if (MetaspaceBpeTokenizer::claims(text)) {
    Expected<MetaspaceBpeTokenizer> metaspace = MetaspaceBpeTokenizer::fromTokenizerJson(text, name);
    if (!metaspace) return metaspace.error();
    return std::shared_ptr<const Tokenizer>(
        std::make_shared<const MetaspaceBpeTokenizer>(std::move(metaspace).value()));
  }
  Expected<Gpt2Tokenizer> byteLevel = Gpt2Tokenizer::fromTokenizerJson(text, name);
  if (!byteLevel) return byteLevel.error();
  return std::shared_ptr<const Tokenizer>(std::make_shared<const Gpt2Tokenizer>(std::move(byteLevel).value()));
}

Expected<std::shared_ptr<const Tokenizer>> loadTokenizerJsonAny(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxTokenizerFileBytes);
  if (!text) return text.error();
  return tokenizerFromJson(*text, path);
}

}  // namespace attn::io
