// Reduction operators: built-in ops pass through to tern; PreMulSum (ncclRedOpCreatePreMulSum) scales a copy of
// the input by the op's scalar, then tern sums it.
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "shim_internal.hpp"
#include "tern/tern_ext.h"

namespace tern::nccl {

template <typename T, typename S>
void scaleInto(const void* in, void* out, size_t count, S scalar) {
  const T* s = static_cast<const T*>(in);
  T* d = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(s[i] * scalar);
}

ncclResult_t scaleHalves(const PreMulSum& op, const void* in, void* out, size_t count, const char* fn) {
  // fp16/bf16: widened to fp32 with tern's own conversion, scaled, rounded back to nearest even.
  std::vector<float> wide(count);
  ternDataType_t t = static_cast<ternDataType_t>(op.dtype);
  if (ternConvert(in, t, wide.data(), ternFloat32, count) != ternSuccess) return fromTern(ternInternalError);
  const float s = static_cast<float>(op.scalar);
  for (float& v : wide) v *= s;
  if (ternConvert(wide.data(), ternFloat32, out, t, count) != ternSuccess) return fromTern(ternInternalError);
  (void)fn;
  return ncclSuccess;
}

ncclResult_t resolveOp(ncclRedOp_t op, ncclDataType_t dtype, const void* input, size_t count, ncclComm_t comm,
                       const char* fn, ternRedOp_t* ternOp, const void** scaledInput, std::unique_ptr<char[]>* holder) {
  *scaledInput = input;
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps) {
    *ternOp = static_cast<ternRedOp_t>(op);
    return ncclSuccess;
  }
  PreMulSum pm;
  {
    std::lock_guard<std::mutex> lock(statesMutex);
    auto it = states().find(toTern(comm));
    size_t index = static_cast<size_t>(static_cast<int>(op)) - ncclNumOps;
    if (static_cast<int>(op) < 0 || it == states().end() || index >= it->second.ops.size() ||
        !it->second.ops[index].live) {
      return fail(ncclInvalidArgument, "%s: invalid reduction op %d (not built in, not a live PreMulSum of this comm)",
                  fn, static_cast<int>(op));
    }
    pm = it->second.ops[index];
  }
  if (pm.dtype != dtype) {
    return fail(ncclInvalidArgument, "%s: PreMulSum op %d was created for datatype %d, the call has %d", fn,
                static_cast<int>(op), static_cast<int>(pm.dtype), static_cast<int>(dtype));
  }
  *ternOp = ternSum;
  if (count == 0) return ncclSuccess;
  if (input == nullptr) return ncclSuccess;  // tern reports the NULL buffer
  holder->reset(new (std::nothrow) char[count * typeSize(dtype)]);
  if (!*holder) return fail(ncclSystemError, "%s: out of memory for the PreMulSum input copy", fn);
  void* out = holder->get();
  switch (dtype) {
    case ncclInt8:
      scaleInto<int8_t>(input, out, count, pm.scalarInt);
      break;
    case ncclUint8:
      scaleInto<uint8_t>(input, out, count, pm.scalarUint);
      break;
    case ncclInt32:
      scaleInto<int32_t>(input, out, count, pm.scalarInt);
      break;
    case ncclUint32:
      scaleInto<uint32_t>(input, out, count, pm.scalarUint);
      break;
    case ncclInt64:
      scaleInto<int64_t>(input, out, count, pm.scalarInt);
      break;
    case ncclUint64:
      scaleInto<uint64_t>(input, out, count, pm.scalarUint);
      break;
    case ncclFloat32:
      scaleInto<float>(input, out, count, static_cast<float>(pm.scalar));
      break;
    case ncclFloat64:
      scaleInto<double>(input, out, count, pm.scalar);
      break;
    case ncclFloat16:
    case ncclBfloat16:
      SHIM_CHECK(scaleHalves(pm, input, out, count, fn));
      break;
    default:
      return fail(ncclInvalidArgument, "%s: invalid datatype %d", fn, static_cast<int>(dtype));
  }
  *scaledInput = out;
  return ncclSuccess;
}

ncclResult_t runWithScratch(ternResult_t r, std::unique_ptr<char[]> scratch) {
  if (scratch && groupDepth > 0) groupScratch.push_back(std::move(scratch));
  return fromTern(r);
}

}  // namespace tern::nccl

using namespace tern::nccl;

NCCL_SHIM_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                    ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  if (op == nullptr || scalar == nullptr) return fail(ncclInvalidArgument, "%s: op or scalar is NULL", fn);
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (residence != ncclScalarHostImmediate) {
    return fail(ncclInvalidUsage,
                "%s: a device-resident scalar (ncclScalarDevice) needs tern's device path (not built); pass the "
                "scalar in host memory with ncclScalarHostImmediate",
                fn);
  }
  SHIM_CHECK(checkHost(scalar, 1, typeSize(datatype), fn, "scalar"));
  PreMulSum pm;
  pm.live = true;
  pm.dtype = datatype;
  switch (datatype) {
    case ncclInt8:
      pm.scalarInt = *static_cast<const int8_t*>(scalar);
      break;
    case ncclUint8:
      pm.scalarUint = *static_cast<const uint8_t*>(scalar);
      break;
    case ncclInt32:
      pm.scalarInt = *static_cast<const int32_t*>(scalar);
      break;
    case ncclUint32:
      pm.scalarUint = *static_cast<const uint32_t*>(scalar);
      break;
    case ncclInt64:
      pm.scalarInt = *static_cast<const int64_t*>(scalar);
      break;
    case ncclUint64:
      pm.scalarUint = *static_cast<const uint64_t*>(scalar);
      break;
    case ncclFloat32:
      pm.scalar = *static_cast<const float*>(scalar);
      break;
    case ncclFloat64:
      pm.scalar = *static_cast<const double*>(scalar);
      break;
    default: {  // fp16/bf16: the scalar has the call's type
      float f = 0;
      if (ternConvert(scalar, static_cast<ternDataType_t>(datatype), &f, ternFloat32, 1) != ternSuccess) {
        return fromTern(ternInternalError);
      }
      pm.scalar = f;
    }
  }
  std::lock_guard<std::mutex> lock(statesMutex);
  std::vector<PreMulSum>& ops = states()[toTern(comm)].ops;
  size_t index = 0;
  while (index < ops.size() && ops[index].live) ++index;
  if (index == ops.size())
    ops.push_back(pm);
  else
    ops[index] = pm;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char* fn = "ncclRedOpDestroy";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  std::lock_guard<std::mutex> lock(statesMutex);
  std::vector<PreMulSum>& ops = states()[toTern(comm)].ops;
  int index = static_cast<int>(op) - ncclNumOps;
  if (index < 0 || static_cast<size_t>(index) >= ops.size() || !ops[index].live) {
    return fail(ncclInvalidArgument, "%s: op %d is not a live operator created on this comm", fn, static_cast<int>(op));
  }
  ops[index].live = false;
  return ncclSuccess;
}
