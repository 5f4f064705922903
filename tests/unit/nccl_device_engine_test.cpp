// Finding NVIDIA's NCCL for the device engine (core/nccl_device_engine.hpp): a real one loads with its version,
// tern's own libnccl.so.2 and other libraries are refused with a reason. (The engine's collectives need a GPU:
// tests/gpu/run.sh.)
#include "core/nccl_device_engine.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tern {
namespace {

TEST(NcclDeviceEngine, RefusesTernsOwnLibnccl) {
  std::string why;
  EXPECT_EQ(NcclLibrary::open(TERN_TEST_NCCL_SHIM, &why), nullptr);
  EXPECT_NE(why.find("tern's own libnccl.so.2"), std::string::npos) << why;
}

TEST(NcclDeviceEngine, RefusesWhatIsNotNccl) {
  std::string why;
  EXPECT_EQ(NcclLibrary::open("libm.so.6", &why), nullptr);
  EXPECT_NE(why.find("not a usable NCCL"), std::string::npos) << why;
  EXPECT_EQ(NcclLibrary::open("/nonexistent/libnccl.so.2", &why), nullptr);
  EXPECT_NE(why.find("cannot be loaded"), std::string::npos) << why;
}

TEST(NcclDeviceEngine, LoadsTheToolkitsNccl) {
  std::string why;
  auto lib = NcclLibrary::open("/usr/local/cuda/lib64/libnccl.so.2", &why);
  if (!lib) GTEST_SKIP() << "no NCCL in the CUDA toolkit here: " << why;
  EXPECT_GE(lib->version, 21800);
  EXPECT_NE(lib->allReduce, nullptr);
}

TEST(NcclDeviceEngine, RunsUncompressedCollectivesAndBatchesOnly) {
  Operation op;
  op.args.coll = Collective::kAllReduce;
  EXPECT_TRUE(NcclDeviceEngine::runs(op));
  op.implicitCompression = true;  // TERN_COMPRESS may compress it: staged, where the codecs are
  EXPECT_FALSE(NcclDeviceEngine::runs(op));
  op.implicitCompression = false;
  op.args.coll = Collective::kAlltoAll;
  EXPECT_TRUE(NcclDeviceEngine::runs(op));
  op.args.inPlace = true;  // a batch cannot overwrite what it still sends
  EXPECT_FALSE(NcclDeviceEngine::runs(op));
  op.args.coll = Collective::kBarrier;
  EXPECT_FALSE(NcclDeviceEngine::runs(op));
}

}  // namespace
}  // namespace tern
