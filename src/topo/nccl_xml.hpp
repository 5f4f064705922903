// Reading NCCL's topology XML (the files NCCL_TOPO_FILE reads and NCCL_TOPO_DUMP_FILE writes), so that a system
// described for NCCL works with tern unchanged. One file describes one host:
//
//   <system version="1">
//     <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
//       <pci busid="0000:03:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">   a PCIe switch
//         <pci busid="0000:04:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
//           <gpu dev="0" sm="80" rank="0" gdr="1">
//             <nvlink target="0000:05:00.0" count="4" tclass="0x030200"/>    to a GPU (0x068000: an NVSwitch)
//           </gpu>
//         </pci>
//         <pci busid="0000:06:00.0" class="0x020700" link_speed="16.0 GT/s PCIe" link_width="16">
//           <nic><net name="mlx5_0" dev="0" speed="200000" port="1" guid="0x..." maxconn="131072" gdr="1"/></nic>
//         </pci>
//       </pci>
//       <nic><net name="eth0" dev="1" speed="10000" port="0" gdr="0"/></nic>     a NIC with no PCI path
//     </cpu>
//   </system>
//
// Mapping: each <cpu> becomes a package with one NUMA node (NCCL's CPU node is a NUMA domain); a <pci> of class
// 0x0604 is a switch; a <pci> holding a <gpu> or <nic> is that device, linked by its own link_speed/link_width;
// every <net> is a NIC (speed is in Mb/s; InfiniBand when its PCI class is 0x0207, RoCE when an RDMA device is on an
// Ethernet function, Ethernet for socket devices); NVLinks to NVSwitches (target class 0x068000) are summed into one
// link per GPU to an "nvs0" node; <gpu rank=...> attributes, when present, become the rank placement. Elements tern
// does not model (c2c, other PCI devices) are skipped.
#pragma once

#include <string>
#include <string_view>

#include "topo/topology.hpp"

namespace tern::topo {

// Parses an NCCL topology XML into a one-host job. `source` names the file in errors, which are
// Error(ternInvalidArgument, "<source>: <problem>").
JobTopology parseNcclXml(std::string_view text, const std::string& source);

}  // namespace tern::topo
