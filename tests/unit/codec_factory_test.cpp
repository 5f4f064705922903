// Codec spec strings: every documented form parses, canonical specs round-trip, bad specs throw
// ternInvalidArgument with a message naming the problem; codecCost answers for every codec.
#include "compress/codec_factory.hpp"

#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "compress/codec_cost.hpp"

namespace tern::compress {
namespace {

TEST(CodecFactory, ParsesEveryDocumentedForm) {
  struct Case {
    const char* spec;
    const char* canonical;
  };
  const Case cases[] = {
      {"sign", "sign"},
      {"sign:mean", "sign"},
      {"sign:rms", "sign:rms"},
      {"SIGN:RMS", "sign:rms"},
      {"qsgd:4", "qsgd:4:512"},
      {"qsgd:8:512", "qsgd:8:512"},
      {"qsgd:2:128", "qsgd:2:128"},
      {"topk", "topk:0.01"},
      {"topk:0.01", "topk:0.01"},
      {"topk:0.01:exact", "topk:0.01:exact"},
      {"topk:0.001:sampled:fp16", "topk:0.001:fp16"},
      {"topk:0.05:fp16:exact", "topk:0.05:exact:fp16"},
      {"fp16", "fp16"},
      {"bf16", "bf16"},
      {" qsgd : 8 ", "qsgd:8:512"},
  };
  for (const Case& c : cases) {
    auto codec = makeCodec(c.spec);
    ASSERT_NE(codec, nullptr);
    EXPECT_EQ(codec->spec(), c.canonical) << c.spec;
    EXPECT_EQ(makeCodec(codec->spec())->spec(), codec->spec());
  }
  EXPECT_EQ(makeCodec("qsgd:8:256")->params().qsgdBucket, 256u);
  EXPECT_EQ(makeCodec("topk:0.25:exact")->params().topkSelect, TopKSelect::kExact);
  EXPECT_EQ(makeCodec("sign:rms")->params().signScale, SignScale::kRms);
}

TEST(CodecFactory, RejectsBadSpecsWithClearErrors) {
  struct Case {
    const char* spec;
    const char* mentions;
  };
  const Case cases[] = {
      {"", "empty codec name"},
      {"gzip", "unknown codec 'gzip'"},
      {"sign:l2", "'l2'"},
      {"sign:rms:x", "one option"},
      {"qsgd", "BITS"},
      {"qsgd:3", "2, 4 or 8"},
      {"qsgd:four", "'four' is not a number"},
      {"qsgd:4:100", "multiple of 32"},
      {"qsgd:4:0", "multiple of 32"},
      {"qsgd:4:512:1", "BITS"},
      {"topk:0", "(0, 1]"},
      {"topk:1.5", "(0, 1]"},
      {"topk:-0.1", "(0, 1]"},
      {"topk:abc", "not a number"},
      {"topk:0.01:fast", "'fast'"},
      {"fp16:1", "no options"},
      {"bf16:x", "no options"},
  };
  for (const Case& c : cases) {
    try {
      makeCodec(c.spec);
      ADD_FAILURE() << "accepted '" << c.spec << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ternInvalidArgument);
      std::string what = e.what();
      EXPECT_NE(what.find(c.mentions), std::string::npos) << c.spec << ": " << what;
      EXPECT_NE(what.find("invalid codec spec"), std::string::npos) << what;
    }
  }
}

TEST(CodecFactory, CostIsPositiveAndRatiosMatchPayloads) {
  for (const char* spec :
       {"sign", "sign:rms", "qsgd:2", "qsgd:4", "qsgd:8", "topk:0.01", "topk:0.01:exact", "fp16", "bf16"}) {
    CodecCost c = codecCost(spec);
    EXPECT_GT(c.encodeSecondsPerByte, 0) << spec;
    EXPECT_GT(c.decodeSecondsPerByte, 0) << spec;
    EXPECT_GT(c.memcpyBytesPerSecond, 0) << spec;
    EXPECT_GT(c.compressionRatio, 1.9) << spec;
  }
  EXPECT_NEAR(codecCost("sign").compressionRatio, 32.0, 0.01);
  EXPECT_NEAR(codecCost("fp16").compressionRatio, 2.0, 1e-9);
  EXPECT_NEAR(codecCost("qsgd:4:512").compressionRatio, 32.0 / (4 + 32.0 / 512), 0.01);
  EXPECT_NEAR(codecCost("topk:0.01").compressionRatio, 50.0, 0.1);  // 8 bytes per kept 1% of elements
  EXPECT_THROW(codecCost("nope"), Error);
}

}  // namespace
}  // namespace tern::compress
