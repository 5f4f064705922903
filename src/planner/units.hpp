// Units as people write them, for tern-calc's arguments and output and for the docs' examples.
//
// Sizes: a number with an optional unit. Decimal units are powers of 1000 (kB, MB, GB, TB: 102.4MB = 102.4e6
// bytes), binary ones powers of 1024 (KiB, MiB, GiB, TiB: 1MiB = 2^20). K, M, G, T without "B" follow nccl-tests'
// -b/-e flags and are binary (1M = 2^20). "B" or no unit: bytes. Bits ("Mb") are not sizes.
// Rates: "GB/s", "GBps" are bytes, "Gb/s", "Gbps", "gbit" are bits (25gbit = 25 Gb/s = 3.125 GB/s); prefixes are
// decimal, as in every NIC datasheet. A bare "G" is bits for network speeds (RateDefault::kBits).
// Counts (parameters): K, M, B (or G), T are decimal (25.6M = 25.6e6).
// Errors: Error(ternInvalidArgument, "bad size '12XB': unknown unit 'XB' ..."), one line.
#pragma once

#include <string>
#include <string_view>

namespace tern::planner {

enum class RateDefault { kBits, kBytes };

double parseBytes(std::string_view text);
double parseRate(std::string_view text, RateDefault bare = RateDefault::kBits);  // bytes per second
double parseCount(std::string_view text);
// "8B:8GB" or "8B:8GB:x2" (factor) -> first, last, factor; the factor defaults to 2.
struct Sweep {
  double first = 0;
  double last = 0;
  double factor = 2;
};
Sweep parseSweep(std::string_view text);

std::string formatBytes(double bytes);              // "102.4 MB", "1 MiB", "8 B"
std::string formatRate(double bytesPerSecond);      // "3.125 GB/s"
std::string formatLineRate(double bytesPerSecond);  // in bits: "25 Gb/s"
std::string formatTime(double seconds);             // "32.8 ms", "4.1 us", "1.25 s"
// Up to `digits` significant digits, trailing zeros dropped ("102.4", "33", "0.0125").
std::string formatNumber(double x, int digits = 4);

}  // namespace tern::planner
