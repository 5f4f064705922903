// Shows that a conformance check (transport_conformance.hpp) fails over a transport broken on purpose
// (faulty_transport.hpp): the check runs with its gtest failures captured, and must report one naming the symptom.
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "faulty_transport.hpp"
#include "network_mesh.hpp"

namespace tern::testing {

// The gtest failures `body` reports on any thread, captured instead of failing the running test.
inline std::vector<std::string> failuresOf(const std::function<void()>& body) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter capture(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    body();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) {
    if (results.GetTestPartResult(i).failed()) out.push_back(results.GetTestPartResult(i).message());
  }
  return out;
}

// Runs `check` over `broken` (a transport with `fault`): it must fail, and one of its failures must name `symptom`.
inline void expectCaught(Fault fault, const NetworkFactory& broken,
                         const std::function<void(const NetworkFactory&)>& check, const std::string& symptom) {
  auto failures = failuresOf([&] { check(broken); });
  ASSERT_FALSE(failures.empty()) << "the check passed over a transport with the fault '" << faultName(fault) << "'";
  bool named = std::any_of(failures.begin(), failures.end(),
                           [&](const std::string& f) { return f.find(symptom) != std::string::npos; });
  EXPECT_TRUE(named) << "no failure under '" << faultName(fault) << "' mentions '" << symptom
                     << "'; the first: " << failures.front();
}

}  // namespace tern::testing
