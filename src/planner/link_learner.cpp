#include "planner/link_learner.hpp"

#include <algorithm>
#include <cmath>

namespace tern::planner {

namespace {

constexpr int kNetwork = static_cast<int>(ModelLink::kNetwork);
constexpr int kMaxRounds = 8;
// Relative change of both parameters below which the fit has settled.
constexpr double kSettled = 1e-3;
// Below this, 1 - correlation^2 of the latency and byte columns says the calls cannot tell alpha from beta (their
// sizes are too alike): alpha is kept.
constexpr double kMinIndependence = 0.05;
// A latency coefficient needs a non-zero alpha to be read off the breakdown; the start value when the model has none.
constexpr double kStartAlpha = 1e-6;

// The model's view of one call with the current parameters: predicted = rest + messages x alpha + bytes x beta.
struct Terms {
  double measured = 0;
  double rest = 0;
  double messages = 0;  // network messages on the critical path
  double bytes = 0;     // network bytes on the critical path (times the local legs' factor)
};

std::vector<Terms> termsOf(const PlannerConfig& config, const LinkCost& net, const std::vector<TimedCall>& calls) {
  const Planner planner(config);
  std::vector<Terms> out;
  for (const TimedCall& call : calls) {
    if (call.seconds <= 0 || call.bytes <= 0) continue;
    const Estimate e = planner.estimate(call.collective, call.bytes, call.algorithm, call.dtype);
    if (!e.error.empty() || e.seconds <= 0) continue;
    const double latency = e.critical.latency[kNetwork], transfer = e.critical.transfer[kNetwork];
    if (transfer <= 0) continue;  // nothing of this call crossed the network on its critical path
    Terms t;
    t.measured = call.seconds;
    t.rest = e.critical.total() - latency - transfer;
    t.messages = latency / net.alpha;
    t.bytes = transfer / net.beta;
    out.push_back(t);
  }
  return out;
}

// Weighted least squares for (alpha, beta); alpha fixed at `alpha` when fitAlpha is false or the columns are not
// independent enough. Returns false when beta does not come out positive.
bool solve(const std::vector<Terms>& terms, bool fitAlpha, LinkCost& cost, bool& alphaFitted) {
  double sll = 0, slb = 0, sbb = 0, sly = 0, sby = 0;
  for (const Terms& t : terms) {
    const double w = 1.0 / (t.measured * t.measured);
    const double y = t.measured - t.rest;
    sll += w * t.messages * t.messages;
    slb += w * t.messages * t.bytes;
    sbb += w * t.bytes * t.bytes;
    sly += w * t.messages * y;
    sby += w * t.bytes * y;
  }
  if (sbb <= 0) return false;
  alphaFitted = false;
  if (fitAlpha && sll > 0) {
    const double det = sll * sbb - slb * slb;
    if (det > kMinIndependence * sll * sbb) {
      const double alpha = (sly * sbb - sby * slb) / det;
      const double beta = (sll * sby - slb * sly) / det;
      if (alpha >= 0 && beta > 0) {
        cost = {alpha, beta};
        alphaFitted = true;
        return true;
      }
      if (alpha < 0) cost.alpha = 0;  // no negative latencies: refit beta with none
    }
  }
  const double beta = (sby - cost.alpha * slb) / sbb;
  if (!(beta > 0)) return false;
  cost.beta = beta;
  return true;
}

double rmsRelativeError(const std::vector<Terms>& terms, const LinkCost& cost) {
  double sum = 0;
  for (const Terms& t : terms) {
    const double predicted = t.rest + t.messages * cost.alpha + t.bytes * cost.beta;
    const double e = (predicted - t.measured) / t.measured;
    sum += e * e;
  }
  return terms.empty() ? 0 : std::sqrt(sum / static_cast<double>(terms.size()));
}

}  // namespace

CostParams withLearnedNetwork(const CostParams& params, const LearnedNetwork& learned) {
  CostParams out = params;
  for (auto it = out.links.begin(); it != out.links.end();) {
    it = it->first.rfind("network:", 0) == 0 ? out.links.erase(it) : std::next(it);
  }
  out.links["network"] = learned.network;
  return out;
}

std::optional<LearnedNetwork> learnNetwork(const PlannerConfig& config, const std::vector<TimedCall>& calls) {
  PlannerConfig current = config;
  LearnedNetwork learned;
  {
    const Planner start(config);
    if (!start.links().hasClass(ModelLink::kNetwork)) return std::nullopt;
    learned.network.cost = start.links().classCost(ModelLink::kNetwork);
  }
  // Every network pair is priced alike from here on (a calibration replaces per-pair figures).
  if (!(learned.network.cost.beta > 0)) return std::nullopt;
  learned.network.speedGbps = -1;
  for (int round = 1; round <= kMaxRounds; ++round) {
    // The simulation needs a non-zero alpha for the latency column to be read off its breakdown.
    LearnedNetwork simulated = learned;
    simulated.network.cost.alpha = std::max(learned.network.cost.alpha, kStartAlpha);
    current.params = withLearnedNetwork(config.params, simulated);
    const std::vector<Terms> terms = termsOf(current, simulated.network.cost, calls);
    if (terms.empty()) return std::nullopt;
    LinkCost next = learned.network.cost;
    bool alphaFitted = false;
    if (!solve(terms, true, next, alphaFitted)) return std::nullopt;
    const LinkCost previous = learned.network.cost;
    learned.network.cost = next;
    learned.alphaFitted = alphaFitted;
    learned.callsUsed = static_cast<int>(terms.size());
    learned.rmsError = rmsRelativeError(terms, next);
    learned.rounds = round;
    const double da = std::abs(next.alpha - previous.alpha) / std::max(previous.alpha, kStartAlpha);
    const double db = std::abs(next.beta - previous.beta) / previous.beta;
    if (da < kSettled && db < kSettled) break;
  }
  return learned;
}

}  // namespace tern::planner
