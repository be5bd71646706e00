// NFD and NFC (formats/tokenizers/unicode_normalize.h, ICU's Normalizer2) against Python's
// unicodedata (tests/formats/unicode_reference.py, CPython's own implementation and data):
// every code point assigned in both Unicode versions on its own, and 3000 seeded random
// strings of combining marks, Hangul jamo and syllables, singletons and composition
// exclusions. The normalisation of an assigned character never changes between Unicode
// versions (the stability policy), so two versions agree on the characters both assign.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <unicode/uchar.h>
#include <string>

#include "core/base/utf8.h"
#include "formats/tokenizers/unicode_normalize.h"
#include "tests/support/test_paths.h"

namespace test_formats_unicode {
namespace {

namespace fs = std::filesystem;
using attn::io::unicode::nfc;
using attn::io::unicode::nfd;

std::string utf8(char32_t cp) {
  std::string out;
  attn::appendUtf8(out, cp);
  return out;
}

nlohmann::json reference() {
  const fs::path script = fs::path(attn::testing::assetDir()).parent_path() / "tests/formats/unicode_reference.py";
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  FILE* pipe = ::popen((python + " '" + script.string() + "'").c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  char buffer[65536];
  for (std::size_t got; pipe && (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, got);
  EXPECT_EQ(pipe ? ::pclose(pipe) : -1, 0);
  return nlohmann::json::parse(out);
}

TEST(Unicode, EveryCodePointAndRandomSequencesMatchPython) {
  const nlohmann::json ref = reference();
  // Assigned in both: in Python's ranges and known to ICU.
  std::vector<bool> assigned(0x110000, false);
  for (const auto& range : ref["assigned"])
    for (auto cp = range[0].get<char32_t>(); cp <= range[1].get<char32_t>(); ++cp)
      assigned[cp] = u_charType(static_cast<UChar32>(cp)) != U_UNASSIGNED;
  std::set<char32_t> changed;
  std::size_t mismatches = 0;
  for (const auto& row : ref["changed"]) {
    const auto cp = row[0].get<char32_t>();
    changed.insert(cp);
    if (!assigned[cp]) continue;
    const std::string text = utf8(cp);
    if (nfd(text) != row[1].get<std::string>() || nfc(text) != row[2].get<std::string>()) {
      if (++mismatches < 20) ADD_FAILURE() << "U+" << std::hex << static_cast<unsigned>(cp);
    }
  }
  EXPECT_GT(changed.size(), 13000u);  // precomposed letters, Hangul syllables, CJK compatibility
  EXPECT_GT(std::count(assigned.begin(), assigned.end(), true), 280000);
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (!assigned[cp] || changed.count(cp)) continue;
    const std::string text = utf8(cp);
    if (nfd(text) != text || nfc(text) != text) {
      if (++mismatches < 40) ADD_FAILURE() << "U+" << std::hex << static_cast<unsigned>(cp) << " changed";
    }
  }
  ASSERT_EQ(ref["sequences"].size(), 3000u);
  for (const auto& row : ref["sequences"]) {
    const std::string text = row[0].get<std::string>();
    EXPECT_EQ(nfd(text), row[1].get<std::string>()) << text;
    EXPECT_EQ(nfc(text), row[2].get<std::string>()) << text;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(Unicode, WorkedExamples) {
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");          // e + U+0301 -> é
  EXPECT_EQ(nfd("\xC3\xA9"), "e\xCC\x81");          // é -> e + U+0301
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");      // U+212B ANGSTROM SIGN -> Å (singleton)
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(nfd("\xEA\xB0\x81"), "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8");
  EXPECT_EQ(nfc("a\xCC\xA3\xCC\x88"), nfc("a\xCC\x88\xCC\xA3"));  // reordered marks, same NFC
  EXPECT_EQ(nfc("ab\xFF" "c"), "ab\xFF" "c");                    // an invalid byte passes through
  EXPECT_EQ(nfc("e\xFF" "e\xCC\x81"), "e\xFF" "\xC3\xA9");        // runs around it are normalised
  EXPECT_EQ(attn::io::unicode::combiningClass(0x301), 230);
}

}  // namespace
}  // namespace test_formats_unicode
