#include "formats/tokenizers/unicode_normalize.h"

#include <unicode/normalizer2.h>
#include <cstdint>
#include <cstdlib>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

namespace attn::io::unicode {
namespace {

// Normalises one run of valid UTF-8 with `normalizer`.
void normalizeValid(const icu::Normalizer2& normalizer, std::string_view run, std::string& out) {
  if (run.empty()) return;
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString source =
      icu::UnicodeString::fromUTF8(icu::StringPiece(run.data(), static_cast<int32_t>(run.size())));
  const icu::UnicodeString result = normalizer.normalize(source, status);
  if (U_FAILURE(status)) {
    out.append(run);
    return;
  }
  result.toUTF8String(out);
}

// Splits `text` at invalid UTF-8 bytes: valid runs are normalised, invalid bytes copied.
std::string normalize(const icu::Normalizer2& normalizer, std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  const auto length = static_cast<int32_t>(text.size());
  int32_t runStart = 0;
  for (int32_t i = 0; i < length;) {
    const int32_t at = i;
    UChar32 c;
    U8_NEXT(bytes, i, length, c);
    if (c < 0) {  // invalid: flush the valid run, then the bytes U8_NEXT skipped
      normalizeValid(normalizer, text.substr(static_cast<std::size_t>(runStart), static_cast<std::size_t>(at - runStart)), out);
      out.append(text.substr(static_cast<std::size_t>(at), static_cast<std::size_t>(i - at)));
      runStart = i;
    }
  }
  normalizeValid(normalizer, text.substr(static_cast<std::size_t>(runStart)), out);
  return out;
}

const icu::Normalizer2& instance(bool compose) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = compose ? icu::Normalizer2::getNFCInstance(status)
                                      : icu::Normalizer2::getNFDInstance(status);
  // ICU's normalisation data is built into libicudata: failing here means a broken install.
  if (U_FAILURE(status) || !n) std::abort();
  return *n;
}

}  // namespace

int combiningClass(char32_t cp) { return u_getCombiningClass(static_cast<UChar32>(cp)); }

std::string nfd(std::string_view utf8) { return normalize(instance(false), utf8); }
std::string nfc(std::string_view utf8) { return normalize(instance(true), utf8); }

}  // namespace attn::io::unicode
