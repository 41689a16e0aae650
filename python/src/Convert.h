// NumPy arrays <-> ir::Tensor for the extension module. Inputs are copied once into the tensor
// the runtime reads (ir::Tensor owns its bytes); outputs are handed to NumPy without a copy: the
// array owns the tensor the target returned.
#pragma once

#include "ir/Tensor.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace triad::python {

namespace nb = nanobind;

/// Any C-contiguous CPU array (the Python side makes it contiguous).
using InArray = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;

/// The tensor of an array (its dtype mapped to the IR's; an Unsupported error names `what` for
/// dtypes the IR has no type for).
ir::Tensor toTensor(const InArray& a, const std::string& what);
/// A NumPy array that owns `t` (Fixed tensors come out as their int64 raw values).
nb::object toArray(ir::Tensor&& t);
/// A float32 array of `values` reshaped to `shape`.
nb::object toArray(const std::vector<double>& values, const ir::Shape& shape);

} // namespace triad::python
