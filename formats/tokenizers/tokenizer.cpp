// The parts of the tokenizer interface shared by every implementation (see tokenizer.h).
#include "formats/tokenizers/tokenizer.h"

#include "core/models/gpt2/bpe.h"

namespace attn::io {

std::string Tokenizer::tokenDisplay(int id) const { return gpt2::displayText(tokenText(id)); }

std::vector<int> Tokenizer::encodeForModel(std::string_view text, bool bos) const {
  std::vector<int> ids;
  const int first = bosId();
  if (bos && first >= 0) ids.push_back(first);
  const Encoding encoding = encode(text);
  ids.insert(ids.end(), encoding.ids.begin(), encoding.ids.end());
  if (bos && addsEos()) ids.push_back(eosId());
  return ids;
}

}  // namespace attn::io
