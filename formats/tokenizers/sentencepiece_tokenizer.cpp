// tokenizer.model through libsentencepiece (see sentencepiece_tokenizer.h).
#include "formats/tokenizers/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/models/gpt2/bpe.h"
#include "formats/files.h"
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {

Expected<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path) {
  Expected<std::string> bytes = readCapped(path, kMaxTokenizerFileBytes);
  if (!bytes) return bytes.error();
  auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status status = processor->LoadFromSerializedProto(*bytes);
  if (!status.ok()) {
    return Error{path, "", std::string("not a SentencePiece model (") + status.ToString() + ")"};
  }
  if (processor->GetPieceSize() <= 0) return Error{path, "", "the model has no pieces"};
  SentencePieceTokenizer t;
  t.processor_ = std::move(processor);
  return t;
}

Tokenizer::Encoding SentencePieceTokenizer::encode(std::string_view text) const {
  Encoding out;
  gpt2::CleanText clean = gpt2::cleanUtf8(text);
  out.invalidOffsets = std::move(clean.invalidOffsets);
  // Encode fails only for an unloaded model, which load() never returns.
  (void)processor_->Encode(clean.text, &out.ids);
  return out;
}

std::string SentencePieceTokenizer::decode(std::span<const int> ids) const {
  std::vector<int> known;
  known.reserve(ids.size());
  for (int id : ids)
    if (id >= 0 && id < idLimit()) known.push_back(id);
  std::string text;
  (void)processor_->Decode(known, &text);
  return text;
}

std::string SentencePieceTokenizer::tokenText(int id) const {
  if (id < 0 || id >= idLimit()) return {};
  const std::string& piece = processor_->IdToPiece(id);
  if (processor_->IsByte(id) && piece.size() == 6) {
    const std::string byte(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    return gpt2::cleanUtf8(byte).text;
  }
  if (isSpecial(id)) return piece;
  std::string out;
  const std::string space = "\xE2\x96\x81";
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, space.size(), space) == 0) {
      out.push_back(' ');
      i += space.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

bool SentencePieceTokenizer::isSpecial(int id) const {
  return id >= 0 && id < idLimit() && (processor_->IsControl(id) || processor_->IsUnknown(id));
}

int SentencePieceTokenizer::idLimit() const { return processor_->GetPieceSize(); }
int SentencePieceTokenizer::bosId() const { return processor_->bos_id(); }
int SentencePieceTokenizer::eosId() const { return processor_->eos_id(); }

}  // namespace attn::io
