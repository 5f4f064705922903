#include "planner/model_link.hpp"

namespace tern::planner {

const char* modelLinkName(ModelLink c) {
  switch (c) {
    case ModelLink::kShm:
      return "shm";
    case ModelLink::kLoopback:
      return "loopback";
    case ModelLink::kNvlink:
      return "nvlink";
    case ModelLink::kPcie:
      return "pcie";
    case ModelLink::kSmp:
      return "smp";
    case ModelLink::kNetwork:
      return "network";
  }
  return "?";
}

std::optional<ModelLink> parseModelLink(std::string_view name) {
  for (int i = 0; i < kNumModelLinks; ++i) {
    if (name == modelLinkName(static_cast<ModelLink>(i))) return static_cast<ModelLink>(i);
  }
  if (name == "tcp") return ModelLink::kLoopback;
  if (name == "net") return ModelLink::kNetwork;
  return std::nullopt;
}

ModelLink fromTopoClass(topo::LinkClass c) {
  switch (c) {
    case topo::LinkClass::kShm:
      return ModelLink::kShm;
    case topo::LinkClass::kNvlink:
      return ModelLink::kNvlink;
    case topo::LinkClass::kPcie:
      return ModelLink::kPcie;
    case topo::LinkClass::kSmp:
      return ModelLink::kSmp;
    case topo::LinkClass::kNetwork:
      return ModelLink::kNetwork;
  }
  return ModelLink::kNetwork;
}

const char* intraTransportName(IntraTransport t) {
  switch (t) {
    case IntraTransport::kTopology:
      return "topology";
    case IntraTransport::kShm:
      return "shm";
    case IntraTransport::kLoopback:
      return "loopback";
  }
  return "?";
}

}  // namespace tern::planner
