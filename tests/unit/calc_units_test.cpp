// Units as users write them: sizes (decimal and binary), rates (bits and bytes), counts, and the printed forms.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/units.hpp"

namespace tern::planner {
namespace {

TEST(CalcUnits, Sizes) {
  EXPECT_DOUBLE_EQ(parseBytes("102.4MB"), 102.4e6);
  EXPECT_DOUBLE_EQ(parseBytes("1MiB"), 1048576);
  EXPECT_DOUBLE_EQ(parseBytes("8B"), 8);
  EXPECT_DOUBLE_EQ(parseBytes("8"), 8);
  EXPECT_DOUBLE_EQ(parseBytes("8GB"), 8e9);
  EXPECT_DOUBLE_EQ(parseBytes("4K"), 4096);  // nccl-tests style
  EXPECT_DOUBLE_EQ(parseBytes("1 GiB"), 1073741824.0);
  EXPECT_THROW(parseBytes("-1MB"), Error);
  EXPECT_THROW(parseBytes("12XB"), Error);
  EXPECT_THROW(parseBytes("MB"), Error);
  EXPECT_THROW(parseBytes("8Mb"), Error);  // bits are not a size
  const Sweep w = parseSweep("8B:8GB");
  EXPECT_EQ(w.first, 8);
  EXPECT_EQ(w.last, 8e9);
  EXPECT_EQ(w.factor, 2);
  EXPECT_EQ(parseSweep("1K:1M:x4").factor, 4);
  EXPECT_THROW(parseSweep("1M:1K"), Error);
  EXPECT_THROW(parseSweep("1M"), Error);
}

TEST(CalcUnits, RatesAndCounts) {
  EXPECT_DOUBLE_EQ(parseRate("25Gb/s"), 3.125e9);
  EXPECT_DOUBLE_EQ(parseRate("25gbit"), 3.125e9);
  EXPECT_DOUBLE_EQ(parseRate("25Gbps"), 3.125e9);
  EXPECT_DOUBLE_EQ(parseRate("3.125GB/s"), 3.125e9);
  EXPECT_DOUBLE_EQ(parseRate("100G"), 12.5e9);
  EXPECT_DOUBLE_EQ(parseRate("1gbit/s"), 0.125e9);
  EXPECT_THROW(parseRate("25furlongs"), Error);
  EXPECT_DOUBLE_EQ(parseCount("25.6M"), 25.6e6);
  EXPECT_DOUBLE_EQ(parseCount("7B"), 7e9);
  EXPECT_THROW(parseCount("3Q"), Error);
}

TEST(CalcUnits, Printing) {
  EXPECT_EQ(formatBytes(102.4e6), "102.4 MB");
  EXPECT_EQ(formatBytes(1048576), "1 MiB");
  EXPECT_EQ(formatBytes(8), "8 B");
  EXPECT_EQ(formatBytes(8e9), "8 GB");
  EXPECT_EQ(formatRate(3.125e9), "3.125 GB/s");
  EXPECT_EQ(formatLineRate(3.125e9), "25 Gb/s");
  EXPECT_EQ(formatTime(0.032768), "32.8 ms");
  EXPECT_EQ(formatTime(4.1e-6), "4.1 us");
  EXPECT_EQ(formatTime(1.25), "1.25 s");
}

TEST(CalcUnits, ClusterFlags) {
  ClusterSpec s;
  parseInter("roce:25gbit", s);
  EXPECT_EQ(s.netKind, topo::NetKind::kRoce);
  EXPECT_DOUBLE_EQ(s.netGbps, 25);
  parseInter("ib:ndr", s);
  EXPECT_DOUBLE_EQ(s.netGbps, 400);
  parseInter("eth:1gbit", s);
  EXPECT_EQ(s.netKind, topo::NetKind::kEthernet);
  EXPECT_DOUBLE_EQ(s.netGbps, 1);
  EXPECT_THROW(parseInter("carrier-pigeon:1gbit", s), Error);
  EXPECT_THROW(parseInter("eth", s), Error);
  EXPECT_EQ(parseIntra("nvlink4", s), IntraKind::kNvlink);
  EXPECT_EQ(parseIntra("pcie3", s), IntraKind::kPcie);
  EXPECT_EQ(s.pcieGen, 3);
  EXPECT_THROW(parseIntra("smoke-signals", s), Error);
  EXPECT_EQ(presetSpec("dgx-h100x4-ndr").nodes, 4);
  EXPECT_EQ(presetSpec("roce25-2x2x8").nodes, 8);
  EXPECT_THROW(presetSpec("no-such-cluster"), Error);
}

}  // namespace
}  // namespace tern::planner
