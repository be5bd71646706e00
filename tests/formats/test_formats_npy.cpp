// formats/npy: the strict reader (every dtype, byte order, memory order and version; every
// hostile header) and the writer, against files made by tests/support/attention_test_files.h.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "formats/npy.h"
#include "tests/support/attention_test_files.h"

namespace test_formats_npy {
namespace {

using namespace attn;
using namespace attn::testfiles;

std::span<const std::byte> asBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Expected<io::NpyArray> parse(const std::string& bytes, const std::string& file = "t.npy") {
  auto owner = std::make_shared<std::string>(bytes);
  return io::npyFromBuffer(asBytes(*owner), owner, file);
}

// A file with a hand-written dict (padded to 64) and `dataBytes` zero bytes of data.
std::string withDict(std::string dict, std::size_t dataBytes, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict + std::string(dataBytes, '\0');
}

// The error of parsing `bytes`; fails the test if it parsed.
std::string errorOf(const std::string& bytes) {
  auto parsed = parse(bytes, "bad.npy");
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  const std::string message = parsed.error().message();
  EXPECT_EQ(message.rfind("bad.npy: ", 0), 0u) << message;  // names the file
  EXPECT_EQ(message.find('\n'), std::string::npos);
  return message;
}

// =======================================================================================
// Reading every supported layout
// =======================================================================================

TEST(Npy, ReadsEveryDtypeByteOrderMemoryOrderAndVersion) {
  const std::vector<std::int64_t> shape = {2, 3, 5, 4};
  int cases = 0;
  for (std::string descr : {"<f2", ">f2", "<f4", ">f4", "<f8", ">f8"}) {
    for (bool fortran : {false, true}) {
      for (int major : {1, 2, 3}) {
        NpySpec spec{descr, fortran, shape, major};
        auto array = parse(npyBytes(spec, attentionPattern()));
        ASSERT_TRUE(array.ok()) << descr << " " << array.error().message();
        const io::NpyHeader& h = array->header;
        EXPECT_EQ(h.major, major);
        EXPECT_EQ(h.shape, shape);
        EXPECT_EQ(h.fortranOrder, fortran);
        EXPECT_EQ(h.descr(), descr);
        EXPECT_EQ(h.elementCount, 120u);
        EXPECT_EQ(h.dataBytes, 120u * io::dtypeSize(h.dtype));
        EXPECT_EQ(h.dataOffset % 64, 0u);
        // Every element, addressed through the strides of its order.
        const std::vector<std::int64_t> strides = h.strides();
        for (std::int64_t l = 0; l < 2; ++l)
          for (std::int64_t hd = 0; hd < 3; ++hd)
            for (std::int64_t i = 0; i < 5; ++i)
              for (std::int64_t j = 0; j < 4; ++j) {
                const auto flat = static_cast<std::uint64_t>(l * strides[0] + hd * strides[1] +
                                                             i * strides[2] + j * strides[3]);
                ASSERT_EQ(array->element(flat), static_cast<float>(pattern(l, hd, i, j)))
                    << descr << (fortran ? " F " : " C ") << l << hd << i << j;
              }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 36);
}

TEST(Npy, StridesForBothOrders) {
  io::NpyHeader header;
  header.shape = {2, 3, 4};
  EXPECT_EQ(header.strides(), (std::vector<std::int64_t>{12, 4, 1}));
  header.fortranOrder = true;
  EXPECT_EQ(header.strides(), (std::vector<std::int64_t>{1, 2, 6}));
}

TEST(Npy, ScalarAndEmptyShapes) {
  auto scalar = parse(withDict("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8));
  ASSERT_TRUE(scalar.ok()) << scalar.error().message();
  EXPECT_TRUE(scalar->header.shape.empty());
  EXPECT_EQ(scalar->header.elementCount, 1u);
  auto empty = parse(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", 0));
  ASSERT_TRUE(empty.ok()) << empty.error().message();
  EXPECT_EQ(empty->header.elementCount, 0u);
}

TEST(Npy, AcceptsKeyOrderDoubleQuotesNoTrailingCommaAndPython2Longs) {
  auto a = parse(withDict(R"({"shape": (2L, 3L), "fortran_order": True, "descr": "<f4"})", 24));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->header.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(a->header.fortranOrder);
}

TEST(Npy, HalfToFloatKnownValues) {
  EXPECT_EQ(io::halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(io::halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(io::halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(io::halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(io::halfToFloat(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(io::halfToFloat(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(io::halfToFloat(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(io::halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(io::halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(io::halfToFloat(0x7e00)));
  EXPECT_TRUE(std::signbit(io::halfToFloat(0x8000)));
  EXPECT_EQ(io::halfToFloat(0x8000), 0.0f);
}

TEST(Npy, MapsAFileWithoutReadingIt) {
  const fs::path dir = freshDir("npy_map");
  writeNpyFile(dir / "a.npy", {"<f4", false, {3, 4}, 1}, attentionPattern());
  auto array = io::openNpy((dir / "a.npy").string());
  ASSERT_TRUE(array.ok()) << array.error().message();
  EXPECT_EQ(array->file, (dir / "a.npy").string());
  EXPECT_EQ(array->element(5), static_cast<float>(pattern(0, 0, 1, 1)));
  auto missing = io::openNpy((dir / "none.npy").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("none.npy"), std::string::npos);
  writeFile(dir / "empty.npy", "");
  auto empty = io::openNpy((dir / "empty.npy").string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("empty file"), std::string::npos);
}

// =======================================================================================
// Hostile files
// =======================================================================================

TEST(NpyHostile, BadMagicAndVersion) {
  EXPECT_NE(errorOf("PK\x03\x04 not npy at all").find("bad magic"), std::string::npos);
  EXPECT_NE(errorOf("").find("bad magic"), std::string::npos);
  std::string v4 = npyBytes({"<f4", false, {2}, 1}, attentionPattern());
  v4[6] = 4;
  EXPECT_NE(errorOf(v4).find("version 4.0"), std::string::npos);
  std::string v11 = npyBytes({"<f4", false, {2}, 1}, attentionPattern());
  v11[7] = 1;
  EXPECT_NE(errorOf(v11).find("version 1.1"), std::string::npos);
}

TEST(NpyHostile, HeaderLengthBeyondFileOrLimit) {
  std::string bytes = npyBytes({"<f4", false, {2}, 1}, attentionPattern());
  bytes.resize(40);  // cut inside the header
  EXPECT_NE(errorOf(bytes).find("truncated .npy header"), std::string::npos);
  std::string huge = "\x93NUMPY\x02";
  huge += '\0';
  huge += std::string("\x00\x00\x00\x10", 4);  // 256 MiB of header claimed
  huge += std::string(100, ' ');
  EXPECT_NE(errorOf(huge).find("limit"), std::string::npos);
}

TEST(NpyHostile, HeaderClaimsMoreDataThanTheFileHolds) {
  std::string bytes = npyBytes({"<f4", false, {8, 8}, 1}, attentionPattern());
  bytes.resize(bytes.size() - 4);
  const std::string message = errorOf(bytes);
  EXPECT_NE(message.find("256 bytes of data"), std::string::npos) << message;
  EXPECT_NE(message.find("holds only 252"), std::string::npos) << message;
  // A shape that claims far more than any file.
  EXPECT_NE(
      errorOf(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", 64))
          .find("holds only 64"),
      std::string::npos);
}

TEST(NpyHostile, TrailingBytesAfterTheData) {
  std::string bytes = npyBytes({"<f4", false, {2}, 1}, attentionPattern()) + "xx";
  EXPECT_NE(errorOf(bytes).find("2 unexpected bytes"), std::string::npos);
}

TEST(NpyHostile, ShapeProductOverflowAndLimit) {
  const std::string overflow = errorOf(withDict(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", 0));
  EXPECT_NE(overflow.find("overflows"), std::string::npos) << overflow;
  const std::string limit =
      errorOf(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (262144, 262145), }", 0));
  EXPECT_NE(limit.find("above the limit"), std::string::npos) << limit;
  EXPECT_NE(
      errorOf(
          withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                   0))
          .find("too large"),
      std::string::npos);
  std::string dims = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 33; ++i) dims += "1, ";
  dims += "), }";
  EXPECT_NE(errorOf(withDict(dims, 4)).find("more than 32 dimensions"), std::string::npos);
}

TEST(NpyHostile, UnsupportedDtypesSayWhatTheyAre) {
  const std::pair<const char*, const char*> cases[] = {{"<i3", "unknown signed integer size"},
                                                       {"<u16", "unknown unsigned integer size"},
                                                       {"|i8", "needs a byte order"},
                                                       {"|b1", "bool"},
                                                       {"<c8", "complex"},
                                                       {"<c16", "complex"},
                                                       {"|O", "Python object"},
                                                       {"<U5", "string"},
                                                       {"|S3", "string"},
                                                       {"<M8[ns]", "datetime"},
                                                       {"|V8", "void"},
                                                       {"<f16", "long double"},
                                                       {"|f4", "byte order"},
                                                       {"<f3", "unknown float size"}};
  for (auto [descr, what] : cases) {
    const std::string message = errorOf(withDict(
        std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }", 16));
    EXPECT_NE(message.find("unsupported dtype"), std::string::npos) << descr << ": " << message;
    EXPECT_NE(message.find(what), std::string::npos) << descr << ": " << message;
    EXPECT_NE(message.find("field 'descr'"), std::string::npos) << message;
  }
  EXPECT_NE(
      errorOf(withDict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4))
          .find("structured"),
      std::string::npos);
}

TEST(NpyHostile, MalformedDictsAreParsedNeverEvaluated) {
  const std::pair<const char*, const char*> cases[] = {
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "expected '('"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "negative dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (01,)}", "leading zero"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "must end with"},
      {"{'descr': '<f4\\n', 'fortran_order': False, 'shape': (1,)}", "escapes"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", "expected ','"},
      {"{'descr': __import__('os').system('true'), 'fortran_order': False, 'shape': (1,)}",
       "quoted string"},
      {"dict(descr='<f4')", "expected '{'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "expected ','"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", "expected an integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2", "expected ','"},
  };
  for (auto [dict, what] : cases) {
    const std::string message = errorOf(withDict(dict, 4));
    EXPECT_NE(message.find("malformed .npy header"), std::string::npos) << dict << ": " << message;
    EXPECT_NE(message.find(what), std::string::npos) << dict << ": " << message;
  }
  // No newline at the end (a header padded with spaces only).
  std::string noNewline = npyBytes({"<f4", false, {1}, 1}, attentionPattern());
  noNewline[noNewline.find('\n')] = ' ';
  EXPECT_NE(errorOf(noNewline).find("must end with"), std::string::npos);
}

// =======================================================================================
// Writer
// =======================================================================================

TEST(NpyWriter, Float32RoundTripsThroughTheReader) {
  const std::vector<float> values = {0.5f, -1.25f, 3.0f, 1e-20f, 7.0f, -0.0f};
  const std::vector<std::int64_t> shape = {2, 3};
  auto bytes = io::writeNpyFloat32(values, shape);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->rfind("\x93NUMPY\x01", 0), 0u);
  EXPECT_NE(bytes->find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  auto array = parse(*bytes);
  ASSERT_TRUE(array.ok()) << array.error().message();
  EXPECT_EQ(array->header.dataOffset, 128u);  // 10 + 59-byte dict + '\n', padded to 64
  EXPECT_EQ(array->header.shape, shape);
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(array->element(i), values[i]);
}

TEST(NpyWriter, Int64HeaderAndBytes) {
  const std::vector<std::int64_t> values = {101, -2, 1ll << 40};
  const std::vector<std::int64_t> shape = {3};
  auto bytes = io::writeNpyInt64(values, shape);
  ASSERT_TRUE(bytes.ok());
  // The dict is 57 bytes; 10 + 57 + '\n' = 68, padded to 128: header length 118.
  const std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  ASSERT_EQ(bytes->size(), 128u + 24u);
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[8]), 118u);
  EXPECT_EQ((*bytes)[9], '\0');
  EXPECT_EQ(bytes->substr(10, 118), dict + std::string(118 - 57 - 1, ' ') + "\n");
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::int64_t v = 0;
    std::memcpy(&v, bytes->data() + 128 + 8 * i, 8);
    EXPECT_EQ(v, values[i]);
  }
  // The reader reads it back: int64 [3]; as ids, 2^40 does not fit an int, named by the
  // file, the field and the element.
  auto parsed = parse(*bytes, "run.npz:token_ids.npy");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->header.dtype, io::NpyDtype::Int64);
  EXPECT_EQ(parsed->header.descr(), "<i8");
  EXPECT_EQ(parsed->header.shape, shape);
  EXPECT_EQ(parsed->element(1), -2.0f);
  auto ids = io::readIds(*parsed, "token_ids");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().message(),
            "run.npz:token_ids.npy: field 'token_ids': element 2 is 1099511627776, outside an int's "
            "-2147483648..2147483647");
}

// Every integer dtype numpy writes is read (ids, indices), in both byte orders, with its
// sign; as ids each value must fit an int. Values from an independent writer
// (tests/support/attention_test_files.h).
TEST(Npy, ReadsIntegerDtypesAsIds) {
  struct Case {
    const char* descr;
    io::NpyDtype dtype;
    const char* name;
    std::vector<double> values;
  };
  const Case cases[] = {
      {"|i1", io::NpyDtype::Int8, "int8", {-128, 0, 127}},
      {"|u1", io::NpyDtype::UInt8, "uint8", {0, 200, 255}},
      {"<i2", io::NpyDtype::Int16, "int16", {-32768, 5, 32767}},
      {">u2", io::NpyDtype::UInt16, "uint16", {1, 256, 65535}},
      {"<i4", io::NpyDtype::Int32, "int32", {-2147483648.0, 7, 2147483647.0}},
      {">i4", io::NpyDtype::Int32, "int32", {-1, 50256, 3}},
      {"<u4", io::NpyDtype::UInt32, "uint32", {0, 1, 2147483647.0}},
      {"<i8", io::NpyDtype::Int64, "int64", {-5, 50256, 2147483647.0}},
      {">i8", io::NpyDtype::Int64, "int64", {-2147483648.0, 0, 9}},
      {"<u8", io::NpyDtype::UInt64, "uint64", {0, 30521, 12}},
  };
  for (const Case& c : cases) {
    const std::string bytes = npyBytes({c.descr, false, {3}, 1}, [&](const std::vector<std::int64_t>& i) {
      return c.values[static_cast<std::size_t>(i[0])];
    });
    auto array = parse(bytes, "ids.npy");
    ASSERT_TRUE(array.ok()) << c.descr << ": " << array.error().message();
    EXPECT_EQ(array->header.dtype, c.dtype) << c.descr;
    EXPECT_EQ(io::dtypeName(array->header.dtype), c.name);
    EXPECT_EQ(array->header.descr(), c.descr);
    EXPECT_TRUE(io::isInteger(array->header.dtype));
    auto ids = io::readIds(*array, "token_ids");
    ASSERT_TRUE(ids.ok()) << c.descr << ": " << ids.error().message();
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ((*ids)[i], static_cast<int>(c.values[i])) << c.descr << " " << i;
      EXPECT_EQ(array->element(i), static_cast<float>(c.values[i])) << c.descr << " " << i;
    }
  }
  // Beyond an int, both ways; a float array is not ids.
  const std::pair<const char*, double> outside[] = {{"<i8", -2147483649.0}, {"<u4", 2147483648.0}};
  for (auto [descr, value] : outside) {
    auto array = parse(npyBytes({descr, false, {2}, 1}, [&](const std::vector<std::int64_t>& i) {
      return i[0] == 1 ? value : 0.0;
    }));
    ASSERT_TRUE(array.ok()) << array.error().message();
    auto ids = io::readIds(*array, "token_ids");
    ASSERT_FALSE(ids.ok()) << descr;
    EXPECT_NE(ids.error().message().find("t.npy: field 'token_ids': element 1 is " +
                                         std::to_string(static_cast<long long>(value)) + ", outside an int's"),
              std::string::npos)
        << ids.error().message();
  }
  auto floats = parse(npyBytes({"<f4", false, {2}, 1}, [](const std::vector<std::int64_t>&) { return 1.0; }));
  ASSERT_TRUE(floats.ok());
  auto notIds = io::readIds(*floats, "token_ids");
  ASSERT_FALSE(notIds.ok());
  EXPECT_NE(notIds.error().message().find("field 'token_ids': is float32, not integer ids"), std::string::npos);
}

TEST(NpyWriter, ShapeMustMatchTheValues) {
  const std::vector<float> values(5, 1.0f);
  const std::vector<std::int64_t> shape = {2, 3};
  auto bytes = io::writeNpyFloat32(values, shape);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error().field, "shape");
  const std::vector<std::int64_t> negative = {-5};
  EXPECT_FALSE(io::writeNpyFloat32(values, negative).ok());
}

TEST(NpyWriter, LongHeaderSwitchesToVersion2) {
  std::vector<std::int64_t> shape(32, 1);
  const std::vector<float> values = {2.5f};
  // 32 dims of "1" fit easily in v1; a header over 65535 bytes cannot be produced with 32
  // dims, so check the v1 choice and the 64-byte alignment here.
  auto bytes = io::writeNpyFloat32(values, shape);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((*bytes)[6], '\x01');
  auto array = parse(*bytes);
  ASSERT_TRUE(array.ok()) << array.error().message();
  EXPECT_EQ(array->header.dataOffset % 64, 0u);
  EXPECT_EQ(array->element(0), 2.5f);
}

}  // namespace
}  // namespace test_formats_npy
