// libFuzzer's custom mutator and cross-over hooks for the ONNX fuzz targets (linked into the
// libFuzzer builds of onnx_load and onnx_interp only; the replay drivers do not mutate).
#include "tests/fuzz/OnnxMutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  return triad::fuzz::mutateOnnxModel(data, size, maxSize, seed, LLVMFuzzerMutate);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t maxOutSize, unsigned int seed) {
  return triad::fuzz::crossOverOnnxModels(data1, size1, data2, size2, out, maxOutSize, seed);
}
