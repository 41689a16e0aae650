// Tensors in and out of files: NumPy .npy (v1/v2/v3, little endian, C order) and ONNX
// TensorProto .pb (the format of ONNX's test data sets). Writes are atomic: a temporary file in
// the same directory renamed over the target, so an interrupted run never leaves half a file.
#pragma once

#include "ir/Tensor.h"

#include <filesystem>
#include <string>

namespace triad::frontend {

struct NamedTensor {
  std::string name; // TensorProto name; empty for .npy
  ir::Tensor tensor;
};

/// Reads a .npy or .pb file, chosen by extension (.npy, .pb); throws triad::Error naming the file.
NamedTensor readTensorFile(const std::filesystem::path& path);
ir::Tensor readNpy(const std::filesystem::path& path);
NamedTensor readTensorProtoFile(const std::filesystem::path& path);

/// Writes by extension (.npy or .pb); `name` is stored in .pb files only.
void writeTensorFile(const std::filesystem::path& path, const ir::Tensor& t,
                     const std::string& name = "");
void writeNpy(const std::filesystem::path& path, const ir::Tensor& t);
void writeTensorProtoFile(const std::filesystem::path& path, const ir::Tensor& t,
                          const std::string& name);

/// Writes bytes to `path` atomically (temp file + rename); throws triad::Error on failure.
void writeFileAtomic(const std::filesystem::path& path, std::string_view bytes);
/// Reads a whole file; throws triad::Error(Io) naming it when it is missing or unreadable.
std::string readFile(const std::filesystem::path& path);

} // namespace triad::frontend
