// How torch tensors and c10d reduce ops become tern buffers, datatypes and reduction ops, and the checks that turn
// a bad argument into an error naming what was wrong before anything reaches the communicator.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

#include "tern/tern.h"

namespace tern::torch_backend {

// A tensor as tern reads or writes it: contiguous elements of one tern datatype. `data` is the caller's tensor
// (viewed as real for complex, as uint8 for bool) when that is already contiguous, else a contiguous copy; for an
// output, writeBack() copies a copy back into the caller's tensor.
struct Buffer {
  at::Tensor user;
  at::Tensor data;
  ternDataType_t dtype = ternFloat32;
  size_t count = 0;  // elements of dtype

  void* ptr() const { return data.data_ptr(); }
  void writeBack() const;
};

// The tern datatype of a torch dtype; bool travels as uint8 and complex as pairs of its real type. Throws
// c10::Error naming the dtype when tern has no such type.
ternDataType_t ternTypeOf(at::ScalarType type, const char* collective);

// Checks that t can take part in a collective on this backend (a dense CPU tensor) and views it as a Buffer.
Buffer asBuffer(const at::Tensor& t, const char* collective);
// A fresh contiguous buffer of `elements` elements shaped like nothing, of t's dtype, for staging.
at::Tensor flatLike(const at::Tensor& t, int64_t elements);

// One torch tensor argument per call, as Gloo and NCCL require for CPU tensors.
const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* collective);
// Every tensor in `tensors` has the dtype and element count of `like`; the error names both sizes.
void checkSameShape(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const char* collective,
                    const char* what);

// A c10d reduce op as tern runs it: the tern op, and for PREMUL_SUM the factor the input is multiplied by first.
struct Reduction {
  ternRedOp_t op = ternSum;
  std::optional<double> premulFactor;
  at::Tensor premulTensor;  // defined when the factor is a one-element tensor

  // Multiplies data by the PREMUL_SUM factor (in place); a no-op for other ops.
  void premultiply(at::Tensor& data) const;
  bool premultiplies() const { return premulFactor.has_value() || premulTensor.defined(); }
};
// Throws c10::Error for an op tern cannot run on that dtype (bitwise ops, AVG on bool, MIN/MAX/PRODUCT on complex).
Reduction reductionOf(const c10d::ReduceOp& op, at::ScalarType type, const char* collective);

}  // namespace tern::torch_backend
