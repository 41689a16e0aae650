// Conversion between onnx::TensorProto and ir::Tensor (initializers, Constant attributes,
// test data). Internal to the frontend: the rest of Triad never includes ONNX headers.
#pragma once

#include "ir/Tensor.h"

#include <filesystem>
#include <onnx/onnx_pb.h>
#include <string>

namespace triad::frontend {

/// `baseDir` resolves external data (data_location = EXTERNAL) relative to the model file.
/// `what` names the tensor in errors ("initializer 'fc1.weight'").
ir::Tensor tensorFromProto(const onnx::TensorProto& p, const std::filesystem::path& baseDir,
                           const std::string& what);
onnx::TensorProto tensorToProto(const ir::Tensor& t, const std::string& name);

/// Copies raw little-endian element bytes (raw_data, external data, .npy data) into `t`, which
/// holds exactly that many bytes. Bool elements become 0 or 1: any other byte value is not a
/// valid bool in C++ (undefined behaviour to read), and ONNX and NumPy take nonzero as true.
void copyRawElements(ir::Tensor& t, const char* bytes);

} // namespace triad::frontend
