// A structure-aware mutator for ONNX models (libprotobuf-mutator is not in Debian; this is a
// small one that knows the onnx schema). It parses the input as onnx::ModelProto, applies one or
// a few mutations chosen to reach the importer's semantic checks rather than the protobuf
// parser, and serializes the result:
//   - attribute values (ints such as strides, pads, axes set to 0, negative or huge; floats to
//     NaN, infinities, denormals; strings to other modes), attribute types, attributes added,
//     removed or given twice;
//   - tensors (initializers, Constant values, tensor attributes): dims, data types, raw_data
//     truncated or extended, typed data lists resized, external_data entries (location, offset
//     and length, including non-numeric, negative, overflowing and escaping values);
//   - value infos (graph inputs, outputs, value_info): dims, element types, non-tensor types;
//   - subgraph attributes (a copy of the graph as `body`, If/Loop/Scan nodes) and model-local
//     functions (a node wrapped into one, called from the graph);
//   - node wiring: inputs and outputs swapped, dropped, duplicated or pointed at other values,
//     op types swapped to other known ops, domains, nodes duplicated, removed or moved;
//   - graph outputs duplicated, added or removed, initializers re-declared as graph inputs with a
//     matching or contradicting type, opset and IR versions;
//   - any other field of the model, through protobuf reflection.
// When the input does not parse (and now and then when it does), libFuzzer's byte mutations are
// used instead, so that the parser itself is fuzzed too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace triad::fuzz {

/// A byte-level mutator with libFuzzer's LLVMFuzzerMutate contract: mutates data[0, size) in
/// place, returns the new size (at most maxSize).
using ByteMutator = size_t (*)(uint8_t* data, size_t size, size_t maxSize);

/// LLVMFuzzerCustomMutator's contract: mutates the model in data[0, size) in place (data has
/// room for maxSize bytes) and returns the new size. Deterministic for a given seed.
size_t mutateOnnxModel(uint8_t* data, size_t size, size_t maxSize, unsigned seed,
                       ByteMutator bytes);

/// LLVMFuzzerCustomCrossOver's contract: writes into out[0, maxOutSize) a model made of the first
/// one with nodes, initializers or functions of the second spliced in; returns its size (0: no
/// cross-over possible, libFuzzer then does its own).
size_t crossOverOnnxModels(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                           uint8_t* out, size_t maxOutSize, unsigned seed);

} // namespace triad::fuzz
