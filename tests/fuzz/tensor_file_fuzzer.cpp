// Fuzz target `tensor_file`: the tensor file readers of frontend/TensorIO.h, as `triad run
// --input` uses them. The first byte picks the format (even: NumPy .npy, odd: ONNX TensorProto
// .pb, whose external data resolves in the scratch folder); the rest is the file. A tensor that
// reads is written back and read again, and must come back equal.
#include "frontend/TensorIO.h"
#include "tests/fuzz/FuzzHarness.h"

using namespace triad;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  bool npy = data[0] % 2 == 0;
  std::string name = npy ? "input.npy" : "input.pb";
  std::filesystem::path path = fuzz::writeScratchFile(name, fuzz::asText(data + 1, size - 1));
  fuzz::guarded([&] {
    frontend::NamedTensor t = frontend::readTensorFile(path);
    std::filesystem::path again = fuzz::scratchDir() / ("again" + path.extension().string());
    frontend::writeTensorFile(again, t.tensor, t.name);
    frontend::NamedTensor back = frontend::readTensorFile(again);
    if (!(back.tensor == t.tensor) || (!npy && back.name != t.name))
      fuzz::finding("round trip", "the tensor read back differs from the one written");
  });
  return 0;
}
