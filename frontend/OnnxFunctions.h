// Inlining of ONNX model-local functions (ModelProto.functions, opset 15+).
//
// Every node of the main graph that calls a function of the model (same domain and op type as
// a FunctionProto) is replaced by the function's body, recursively for calls inside bodies:
//   - formal inputs and outputs become the call's actual values (an input the call leaves out
//     is an absent optional input);
//   - every other value of the body gets a fresh name prefixed by the call node's name
//     ("<call>/<value>", with ".1", ".2"... if that is taken), body nodes are named
//     "<call>/<node>" (unnamed ones "<call>/<OpType>_<index>");
//   - attributes with ref_attr_name take the call node's attribute of that name, or are left
//     out when the call does not set it (the op's default applies: IR 8 functions carry no
//     default values).
// Errors (InvalidModel) name the call node and the function: a call of an undefined function
// of a domain the model defines functions in, recursion (with the call chain), attributes or
// values a body refers to that do not exist, and more inputs/outputs than the function has.
// Functions must import the same default-domain opset as the model (Unsupported otherwise).
#pragma once

#include <onnx/onnx_pb.h>

namespace triad::frontend {

/// Inlines every call in `model`'s main graph and clears model.functions. The graph's nodes
/// must already have names. Returns the number of calls inlined (nested ones included).
int inlineLocalFunctions(onnx::ModelProto& model, int modelOpset);

} // namespace triad::frontend
