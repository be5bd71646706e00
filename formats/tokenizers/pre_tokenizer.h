// The pre-tokenizer of a byte-level BPE tokenizer.json: a list of splitting steps, each
// applied to every piece the previous steps left, as Hugging Face tokenizers'
// PreTokenizedString::split does. Steps, with the Rust library's semantics:
//   ByteLevel {add_prefix_space, use_regex}   a space before every piece that lacks one;
//                                             GPT-2's pattern, Isolated (when use_regex)
//   Split {pattern: {Regex | String}, behavior, invert}
//   Digits {individual_digits}                numeric characters (char::is_numeric, \p{N}):
//                                             Isolated each, or Contiguous runs
//   Punctuation {behavior = Isolated}         ASCII punctuation and Unicode P*
//   Whitespace                                keeps \w+ and [^\w\s]+ (Unicode \w), drops the rest
//   WhitespaceSplit                           splits on White_Space, dropping it
//   Sequence {pretokenizers}                  each in turn (nested Sequences too)
// Split behaviors: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous.
// Anything else is refused by name.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

class PreTokenizer {
 public:
  enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

  // GPT-2's own: ByteLevel with its regex, no prefix space (vocab.json + merges.txt).
  static PreTokenizer gpt2();
  // tokenizer.json's "pre_tokenizer" object (`field` names it in errors, with `name` the
  // file). A byte-level BPE needs a ByteLevel step somewhere: without one the error says so.
  static Expected<PreTokenizer> fromJson(const nlohmann::json& pre, const std::string& name,
                                         const std::string& field = "pre_tokenizer");

  // The pieces of valid UTF-8 `text`, in order (with Removed behaviors they need not
  // concatenate back to the text).
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Step {
    std::shared_ptr<void> pattern;  // pcre2_code_8; null: ByteLevel without its regex
    Behavior behavior = Behavior::Isolated;
    bool invert = false;
    bool prefixSpace = false;  // ByteLevel add_prefix_space
  };
  Status add(const nlohmann::json& pre, const std::string& name, const std::string& field);
  std::vector<Step> steps_;
  bool byteLevel_ = false;
};

}  // namespace attn::io
