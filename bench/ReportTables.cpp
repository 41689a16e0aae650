#include "bench/ReportTables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace triad::bench::detail {

namespace {

Cell c(std::string t, std::string cls = "") {
  return {std::move(t), std::move(cls)};
}
Cell n(std::optional<double> v) {
  return {fmtNum(v), ""};
}

Table kvTable() {
  Table t;
  t.header = {"", ""};
  t.numeric = {false, false};
  return t;
}

void kv(Table& t, const std::string& k, const std::string& v) {
  if (!v.empty()) t.row({c(k), c(v)});
}

std::string join(const std::vector<std::string>& xs, std::string_view sep) {
  std::string out;
  for (const std::string& x : xs) {
    if (!out.empty()) out += sep;
    out += x;
  }
  return out;
}

/// A JSON array of scalars as "a, b, c".
std::string listText(const Json& j, std::string_view key) {
  const Json* a = getArray(j, key);
  if (!a) return text(j, key);
  std::vector<std::string> xs;
  for (const Json& x : *a)
    xs.push_back(valueText(x, kDash));
  return join(xs, ", ");
}

/// [{"name":..,"type":..}] as "input: f32[1,1,8,8]".
std::string ioText(const Json& j, std::string_view key) {
  const Json* a = getArray(j, key);
  if (!a) return "";
  std::vector<std::string> xs;
  for (const Json& x : *a)
    xs.push_back(x.is_object() ? fmt::format("{}: {}", text(x, "name", "?"), text(x, "type", "?"))
                               : valueText(x));
  return join(xs, "; ");
}

/// "— (why)" for a value that was not measured.
std::string missing(const std::string& why) {
  return why.empty() ? kDash : "— (" + why + ")";
}

Section runSection(const Json& rep) {
  Section s{"run", "Run", 2, {}, {}};
  Table t = kvTable();
  const Json* run = getObject(rep, "run");
  const Json empty = Json::object();
  const Json& r = run ? *run : empty;
  kv(t, "Run id", text(r, "id"));
  kv(t, "Started", text(r, "started"));
  kv(t, "Finished", text(r, "finished"));
  kv(t, "Status", text(r, "status"));
  kv(t, "Command", text(r, "command"));
  kv(t, "Schema", text(rep, "schema"));
  s.table(std::move(t));
  return s;
}

Section systemSection(const Json& sys) {
  Section s{"system", "System", 2, {}, {}};
  Table t = kvTable();
  kv(t, "Host", text(sys, "host"));
  kv(t, "OS", text(sys, "os"));
  kv(t, "CPU", text(sys, "cpu_model"));
  std::string cores = text(sys, "cores_physical");
  if (!cores.empty() || get(sys, "threads_logical"))
    kv(t, "Cores",
       fmt::format("{} physical, {} logical threads", cores.empty() ? "?" : cores,
                   text(sys, "threads_logical", "?")));
  if (auto m = num(sys, "memory_gib")) kv(t, "Memory", fmtNum(*m) + " GiB");
  kv(t, "Compiler", text(sys, "compiler"));
  if (const Json* cl = getArray(sys, "opencl")) {
    std::vector<std::string> xs;
    for (const Json& p : *cl)
      if (p.is_object())
        xs.push_back(fmt::format("{} / {} / {}", text(p, "platform", "?"), text(p, "device", "?"),
                                 text(p, "version", "?")));
    kv(t, "OpenCL", xs.empty() ? std::string("none") : join(xs, "; "));
  } else {
    kv(t, "OpenCL", text(sys, "opencl"));
  }
  kv(t, "Verilator", text(sys, "verilator"));
  kv(t, "Yosys", text(sys, "yosys"));
  std::string ver = text(sys, "triad_version"), commit = text(sys, "triad_commit");
  if (!ver.empty() || !commit.empty())
    kv(t, "Triad", commit.empty() ? ver : fmt::format("{} (commit {})", ver, commit));
  // Keys this renderer does not know yet (newer writers) still show, as text.
  static const std::set<std::string> known = {
      "host",     "os",     "cpu_model", "cores_physical", "threads_logical", "memory_gib",
      "compiler", "opencl", "verilator", "yosys",          "triad_commit",    "triad_version"};
  for (const auto& [k, v] : sys.items())
    if (!known.count(k) && (v.is_string() || v.is_number() || v.is_boolean()))
      kv(t, k, valueText(v));
  s.table(std::move(t));
  return s;
}

Section modelSection(const Json& m) {
  Section s{"model", "Model", 2, {}, {}};
  Table t = kvTable();
  kv(t, "Name", text(m, "name"));
  kv(t, "Path", text(m, "path"));
  kv(t, "SHA-256", text(m, "sha256"));
  kv(t, "Nodes", text(m, "nodes"));
  kv(t, "Parameters", text(m, "params"));
  kv(t, "MACs per inference", text(m, "macs"));
  kv(t, "Inputs", ioText(m, "inputs"));
  kv(t, "Outputs", ioText(m, "outputs"));
  if (const Json* q = getObject(m, "int8")) { // --precision int8
    if (get(*q, "error")) {
      kv(t, "int8 copy", "not made: " + text(*q, "error"));
    } else {
      std::string how = "calibrated on " + text(*q, "calibration");
      if (const Json* z = getObject(*q, "quantizer"))
        how +=
            fmt::format(" ({}, {} batches of {}, {} weights, {} activations)", text(*z, "method"),
                        text(*z, "calibration_batches"), text(*z, "rows_per_batch"),
                        text(*z, "per_channel") == "true" ? "per-channel" : "per-tensor",
                        text(*z, "activations"));
      kv(t, "int8 copy", text(*q, "file") + ", ONNX Runtime's QDQ quantizer, " + how);
      kv(t, "int8 SHA-256", text(*q, "sha256"));
    }
  }
  s.table(std::move(t));
  return s;
}

Section settingsSection(const Json& st) {
  Section s{"settings", "Settings", 2, {}, {}};
  Table t = kvTable();
  kv(t, "Targets", listText(st, "targets"));
  kv(t, "Peers", listText(st, "peers"));
  kv(t, "Batches", listText(st, "batches"));
  if (get(st, "precisions")) kv(t, "Precisions", listText(st, "precisions"));
  kv(t, "Timed runs", text(st, "repeat"));
  kv(t, "Warm-up runs", text(st, "warmup"));
  kv(t, "Threads", text(st, "threads"));
  kv(t, "Data", text(st, "data"));
  kv(t, "Labels", text(st, "labels"));
  if (const Json* f = getObject(st, "fpga")) {
    std::vector<std::string> xs;
    for (const char* k : {"part", "clock_mhz", "reuse", "precision"})
      if (get(*f, k))
        xs.push_back(std::string(k == std::string("clock_mhz") ? "clock" : k) + " " + text(*f, k) +
                     (k == std::string("clock_mhz") ? " MHz" : ""));
    kv(t, "FPGA", join(xs, ", "));
  }
  s.table(std::move(t));
  return s;
}

Section resultsSection(const std::vector<Result>& rs) {
  Section s{"results", "Latency and throughput", 2, {}, {}};
  if (rs.empty()) {
    s.para("No results: the run measured nothing.");
    return s;
  }
  // Devices once per target (the first result that names one).
  Table dev;
  dev.header = {"Target", "Kind", "Device", "Threads"};
  dev.numeric = {false, false, false, true};
  for (const std::string& t : targetsOf(rs)) {
    const Result* first = nullptr;
    for (const Result& r : rs)
      if (r.target == t && (!first || (first->device.empty() && !r.device.empty()))) first = &r;
    dev.row({c(t), c(first->kind), c(first->device.empty() ? kDash : first->device),
             c(text(*first->json, "threads", kDash))});
  }
  s.table(std::move(dev));

  Table t;
  t.header = {"Target",
              "Batch",
              "Compile (s)",
              "Runs",
              "p50 (ms)",
              "p90 (ms)",
              "p99 (ms)",
              "Mean (ms)",
              "Min (ms)",
              "Max (ms)",
              "Throughput (inferences/s)"};
  t.numeric = {false, true, true, true, true, true, true, true, true, true, true};
  bool anyFpga = false, anyBad = false;
  for (const Result& r : rs) {
    if (!r.ok()) {
      anyBad = true;
      continue;
    }
    const Json* l = getObject(*r.json, "latency_ms");
    const Json empty = Json::object();
    const Json& lat = l ? *l : empty;
    if (r.atClock()) anyFpga = true;
    t.row({c(r.target), c(fmtInt(double(r.batch))), n(num(*r.json, "compile_s")),
           c(text(lat, "count", kDash)), n(num(lat, "p50")), n(num(lat, "p90")), n(num(lat, "p99")),
           n(num(lat, "mean")), n(num(lat, "min")), n(num(lat, "max")),
           n(num(*r.json, "throughput_per_s"))});
  }
  if (!t.rows.empty()) s.table(std::move(t));
  if (anyFpga)
    s.para("FPGA rows: the device time at the FPGA's clock from the RTL's cycle model (latency + "
           "(batch - 1) x II cycles; measured in Verilator with --fpga-rtl), without host "
           "transfers; the emulator's own host time is fpga.emulator_ms in the JSON.");
  if (anyBad) {
    Table bad;
    bad.header = {"Target", "Kind", "Batch", "Status", "Why"};
    bad.numeric = {false, false, true, false, false};
    for (const Result& r : rs)
      if (!r.ok())
        bad.row({c(r.target), c(r.kind), c(fmtInt(double(r.batch))), c(r.status, r.status),
                 c(r.why.empty() ? "(no reason given)" : r.why, "why")});
    s.para("Not measured:");
    s.table(std::move(bad));
  }
  return s;
}

std::optional<Section> accuracySection(const std::vector<Result>& rs) {
  Section s{"accuracy", "Accuracy", 2, {}, {}};
  Table t;
  t.header = {"Target", "Batch",          "Max abs error", "Max rel error",
              "Top-1",  "Top-1 (interp)", "Samples"};
  t.numeric = {false, true, true, true, true, true, true};
  for (const Result& r : rs) {
    const Json* a = r.ok() ? getObject(*r.json, "accuracy") : nullptr;
    if (!a) continue;
    auto pct = [](std::optional<double> v) { return v ? fmtPercent(*v, 2) : std::string(kDash); };
    t.row({c(r.target), c(fmtInt(double(r.batch))), n(num(*a, "max_abs_err")),
           n(num(*a, "max_rel_err")), c(pct(num(*a, "top1"))), c(pct(num(*a, "top1_reference"))),
           c(text(*a, "samples", kDash))});
  }
  if (t.rows.empty()) return std::nullopt;
  s.para("Errors are against the reference interpreter's outputs; top-1 against the labels.");
  s.table(std::move(t));
  return s;
}

std::optional<Section> memorySection(const std::vector<Result>& rs) {
  Section s{"memory", "Memory and energy", 2, {}, {}};
  Table t;
  t.header = {"Target",       "Batch", "Peak RSS (MiB)", "Arena (bytes)", "Energy (J/inference)",
              "Energy source"};
  t.numeric = {false, true, true, true, true, false};
  for (const Result& r : rs) {
    if (!r.ok()) continue;
    const Json* m = getObject(*r.json, "memory");
    const Json* e = getObject(*r.json, "energy");
    if (!m && !e) continue;
    const Json empty = Json::object();
    const Json& mj = m ? *m : empty;
    const Json& ej = e ? *e : empty;
    std::string mwhy = text(mj, "why");
    auto rss = num(mj, "peak_rss_mib");
    auto arena = num(mj, "arena_bytes");
    auto joules = num(ej, "joules_per_inference");
    t.row({c(r.target), c(fmtInt(double(r.batch))), c(rss ? fmtNum(*rss) : missing(mwhy)),
           c(arena ? fmtInt(*arena) : missing(rss ? "" : mwhy)),
           c(joules ? fmtNum(*joules) : missing(text(ej, "why")), joules ? "" : "why"),
           c(text(ej, "source", kDash))});
  }
  if (t.rows.empty()) return std::nullopt;
  s.table(std::move(t));
  return s;
}

std::optional<Section> gpuSection(const std::vector<Result>& rs) {
  Section s{"gpu", "GPU: kernels and transfers", 2, {}, {}};
  Table t;
  t.header = {"Target",           "Batch",
              "Kernels (ms)",     "Host→device (ms)",
              "Device→host (ms)", "Host (ms)",
              "Kernel share",     "Throughput (/s)",
              "In flight",        "Throughput in flight (/s)"};
  t.numeric = {false, true, true, true, true, true, true, true, true, true};
  bool async = false;
  for (const Result& r : rs) {
    const Json* g = r.ok() ? getObject(*r.json, "gpu") : nullptr;
    if (!g) continue;
    auto k = num(*g, "kernel_ms"), h2d = num(*g, "h2d_ms"), d2h = num(*g, "d2h_ms"),
         host = num(*g, "host_ms");
    double total = k.value_or(0) + h2d.value_or(0) + d2h.value_or(0) + host.value_or(0);
    // The asynchronous mode (gpu_async): runs kept in flight, against one at a time.
    const Json* a = getObject(*r.json, "gpu_async");
    std::optional<double> lanes = a ? num(*a, "in_flight") : std::nullopt;
    async = async || lanes.has_value();
    t.row({c(r.target), c(fmtInt(double(r.batch))), n(k), n(h2d), n(d2h), n(host),
           c(k && total > 0 ? fmtPercent(*k / total) : kDash), n(num(*r.json, "throughput_per_s")),
           c(lanes ? fmtInt(*lanes) : kDash), n(a ? num(*a, "throughput_per_s") : std::nullopt)});
  }
  if (t.rows.empty()) return std::nullopt;
  s.table(std::move(t));
  if (async)
    s.para("In flight: the asynchronous mode (`--gpu-in-flight`), one lane (context, queue, "
           "buffers, host thread) per run in flight, all runs submitted at once; its throughput "
           "against the timed rounds' one run at a time.");
  return s;
}

const char* const kResourceKeys[] = {"lut", "ff", "dsp", "bram18"};
const char* const kResourceNames[] = {"LUT", "FF", "DSP", "BRAM (18 Kib)"};

std::optional<Section> fpgaSection(const std::vector<Result>& rs) {
  Section s{"fpga", "FPGA", 2, {}, {}};
  Table t;
  t.header = {"Target",
              "Batch",
              "Clock (MHz)",
              "Latency (cycles)",
              "II (cycles)",
              "Latency (µs)",
              "Throughput (/s)",
              "Precision",
              "Cycles from",
              "Fits",
              "Energy (J/inference, estimate)"};
  t.numeric = {false, true, true, true, true, true, true, false, false, false, true};
  std::vector<const Result*> withRes;
  std::set<std::string> seen;
  for (const Result& r : rs) {
    const Json* f = r.ok() ? getObject(*r.json, "fpga") : nullptr;
    if (!f) continue;
    std::string from = text(*f, "measured") == "yes"  ? "RTL simulation"
                       : text(*f, "measured") == "no" ? "cycle model"
                                                      : kDash;
    const Json* ee = getObject(*f, "energy_estimate");
    t.row({c(r.target), c(fmtInt(double(r.batch))), n(num(*f, "clock_mhz")),
           n(num(*f, "latency_cycles")), n(num(*f, "ii")), n(num(*f, "latency_us")),
           n(num(*f, "throughput_per_s")), c(text(*f, "precision", kDash)), c(from),
           c(get(*f, "fits") && !text(*f, "part").empty()
                 ? fmt::format("{} ({})", text(*f, "fits"), text(*f, "part"))
                 : text(*f, "fits", kDash)),
           n(ee ? num(*ee, "joules_per_inference") : std::nullopt)});
    if (getObject(*f, "resources") && seen.insert(r.target).second) withRes.push_back(&r);
  }
  if (t.rows.empty()) return std::nullopt;
  s.para("Latency = cycles / clock; throughput = clock / II. Energy estimates follow the "
         "documented model named in the report (an estimate, not a measurement).");
  s.table(std::move(t));

  if (!withRes.empty()) {
    const Json* budget = nullptr;
    std::string part;
    for (const Result* r : withRes) {
      const Json& f = *getObject(*r->json, "fpga");
      if (!budget) budget = getObject(f, "budget");
      if (part.empty()) part = text(f, "part");
    }
    Table rt;
    rt.header = {"Resource", fmt::format("Budget ({})", part.empty() ? "part" : part)};
    rt.numeric = {false, true};
    for (const Result* r : withRes) {
      const Json& f = *getObject(*r->json, "fpga");
      std::string src = text(*getObject(f, "resources"), "source");
      rt.header.push_back(
          fmt::format("{} (batch {}{})", r->target, r->batch, src.empty() ? "" : ", " + src));
      rt.header.push_back(fmt::format("{}: share", r->target));
      rt.numeric.push_back(true);
      rt.numeric.push_back(true);
    }
    for (size_t i = 0; i < std::size(kResourceKeys); ++i) {
      std::optional<double> b;
      if (budget) b = num(*budget, kResourceKeys[i]);
      std::vector<Cell> row = {c(kResourceNames[i]), c(b ? fmtInt(*b) : kDash)};
      for (const Result* r : withRes) {
        auto u = num(*getObject(*getObject(*r->json, "fpga"), "resources"), kResourceKeys[i]);
        row.push_back(c(u ? fmtInt(*u) : kDash));
        row.push_back(
            c(u && b && *b > 0 ? fmtPercent(*u / *b) : kDash, u && b && *u > *b ? "failed" : ""));
      }
      rt.row(std::move(row));
    }
    s.para(budget ? "Resources against the part's budget:"
                  : "Resources (the report names no budget for the part):");
    s.table(std::move(rt));
  }
  return s;
}

std::string endpoint(const Json& v, bool from) {
  if (!v.is_number()) return kDash;
  long long id = v.get<long long>();
  if (id < 0) return from ? "host (inputs)" : "host (outputs)";
  return fmt::format("P{}", id);
}

std::optional<Section> partitionSection(const Json* p) {
  if (!p) return std::nullopt;
  Section s{"partition", "Partition plan", 2, {}, {}};
  auto pred = num(*p, "predicted_ms"), meas = num(*p, "measured_ms");
  std::string line = fmt::format("Mode {}, objective {}, algorithm {}.", text(*p, "mode", "?"),
                                 text(*p, "objective", "?"), text(*p, "algorithm", "?"));
  line += fmt::format(" One inference: predicted {}, measured {}",
                      pred ? fmtDurationMs(*pred) : kDash, meas ? fmtDurationMs(*meas) : kDash);
  if (pred && meas && *pred > 0)
    line += fmt::format(" (measured / predicted {:.2f})", *meas / *pred);
  line += ".";
  if (auto tp = num(*p, "predicted_throughput_per_s"))
    line += fmt::format(" Pipelined throughput: predicted {} inferences/s.", fmtNum(*tp));
  s.para(line);

  if (const Json* parts = getArray(*p, "partitions")) {
    Table t;
    t.header = {"Partition",      "Target",        "Nodes",
                "Predicted (ms)", "Measured (ms)", "Measured / predicted"};
    t.numeric = {false, false, false, true, true, true};
    for (const Json& x : *parts) {
      if (!x.is_object()) continue;
      auto pr = num(x, "predicted_ms"), me = num(x, "measured_ms");
      t.row({c(fmt::format("P{}", text(x, "id", "?"))), c(text(x, "target", "?")),
             c(listText(x, "nodes")), n(pr), n(me),
             c(pr && me && *pr > 0 ? fmt::format("{:.2f}", *me / *pr) : kDash)});
    }
    if (!t.rows.empty()) s.table(std::move(t));
  }
  if (const Json* trs = getArray(*p, "transfers")) {
    Table t;
    t.header = {"From", "To",         "Tensor",         "Bytes",
                "Link", "Conversion", "Predicted (ms)", "Measured (ms)"};
    t.numeric = {false, false, false, true, false, false, true, true};
    double bytes = 0;
    for (const Json& x : *trs) {
      if (!x.is_object()) continue;
      auto b = num(x, "bytes");
      bytes += b.value_or(0);
      t.row({c(endpoint(x.value("from", Json()), true)), c(endpoint(x.value("to", Json()), false)),
             c(text(x, "tensor", kDash)), c(b ? fmtInt(*b) : kDash), c(text(x, "link", kDash)),
             c(text(x, "conversion").empty() ? kDash : text(x, "conversion")),
             n(num(x, "predicted_ms")),
             c(num(x, "measured_ms") ? fmtNum(num(x, "measured_ms")) : "— (modelled only)")});
    }
    if (!t.rows.empty()) {
      s.para(fmt::format("Transfers: {} moved per inference.", fmtBytes(bytes)));
      s.table(std::move(t));
    }
  }
  if (const Json* nodes = getArray(*p, "nodes")) {
    std::vector<std::string> costTargets;
    for (const Json& x : *nodes)
      if (const Json* cm = getObject(x, "cost_ms"))
        for (const auto& [k, v] : cm->items())
          if (std::find(costTargets.begin(), costTargets.end(), k) == costTargets.end())
            costTargets.push_back(k);
    Table t;
    t.header = {"Node", "Op", "Placed on"};
    t.numeric = {false, false, false};
    for (const std::string& k : costTargets) {
      t.header.push_back(k + " (ms)");
      t.numeric.push_back(true);
    }
    t.header.push_back("Why");
    t.numeric.push_back(false);
    for (const Json& x : *nodes) {
      if (!x.is_object()) continue;
      std::vector<Cell> row = {c(text(x, "node", "?")), c(text(x, "op", kDash)),
                               c(text(x, "target", "?"))};
      const Json* cm = getObject(x, "cost_ms");
      for (const std::string& k : costTargets) {
        const Json* v = cm ? get(*cm, k) : nullptr;
        row.push_back(c(!v ? std::string("unsupported") : valueText(*v, kDash)));
      }
      row.push_back(c(text(x, "why", kDash)));
      t.row(std::move(row));
    }
    if (!t.rows.empty()) {
      s.para("Where each node went and why (modelled cost per target; \"unsupported\": the "
             "target has no lowering for it or it does not fit):");
      s.table(std::move(t));
    }
  }
  return s;
}

std::string anchor(const std::string& s) {
  std::string out;
  for (char ch : s)
    out += (std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
  return out;
}

std::vector<Section> layerSections(const std::vector<Result>& rs) {
  std::vector<Section> out;
  std::vector<Result> shown = layerResults(rs);
  if (shown.empty()) return out;
  Section head{"layers", "Per-layer time", 2, {}, {}};
  head.para(fmt::format("The {} slowest layers per device at its smallest batch measured; the "
                        "rest summed as \"other\". FPGA layers: cycles at the clock.",
                        kTopLayers));
  out.push_back(std::move(head));
  int i = 0;
  for (const Result& r : shown) {
    Section s{fmt::format("layers-{}-{}", anchor(r.target), i++),
              fmt::format("{} (batch {})", r.target, r.batch),
              3,
              {},
              r.target};
    std::vector<LayerRow> rows = topLayers(*r.json, kTopLayers);
    double total = 0;
    bool cycles = false;
    if (const Json* ls = getArray(*r.json, "layers"))
      for (const Json& l : *ls)
        total += num(l, "ms").value_or(0);
    for (const LayerRow& l : rows)
      cycles |= l.cycles.has_value();
    Table t;
    t.header = {"Layer", "Op", "Time (ms)", "Share"};
    t.numeric = {false, false, true, true};
    if (cycles) {
      t.header.push_back("Cycles");
      t.numeric.push_back(true);
    }
    for (const LayerRow& l : rows) {
      std::vector<Cell> row = {c(l.merged ? fmt::format("other ({} layers)", l.merged) : l.name),
                               c(l.op.empty() ? kDash : l.op), c(fmtNum(l.ms)),
                               c(total > 0 ? fmtPercent(l.ms / total) : kDash)};
      if (cycles) row.push_back(n(l.cycles));
      t.row(std::move(row));
    }
    s.table(std::move(t));
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace

std::string reportTitle(const Json& rep) {
  const Json* m = getObject(rep, "model");
  const Json* sys = getObject(rep, "system");
  std::string model = m ? text(*m, "name", text(*m, "path", "model")) : "model";
  std::string host = sys ? text(*sys, "host") : "";
  return host.empty() ? model : fmt::format("{} on {}", model, host);
}

std::vector<Section> buildSections(const Json& rep) {
  std::vector<Section> out;
  std::vector<Result> rs = results(rep);
  out.push_back(runSection(rep));
  if (const Json* sys = getObject(rep, "system")) out.push_back(systemSection(*sys));
  if (const Json* m = getObject(rep, "model")) out.push_back(modelSection(*m));
  if (const Json* st = getObject(rep, "settings")) out.push_back(settingsSection(*st));
  out.push_back(resultsSection(rs));
  if (auto s = accuracySection(rs)) out.push_back(std::move(*s));
  if (auto s = memorySection(rs)) out.push_back(std::move(*s));
  if (auto s = gpuSection(rs)) out.push_back(std::move(*s));
  if (auto s = fpgaSection(rs)) out.push_back(std::move(*s));
  const Json* plan = getObject(rep, "partition");
  for (const Result& r : rs)
    if (!plan) plan = getObject(*r.json, "partition");
  if (auto s = partitionSection(plan)) out.push_back(std::move(*s));
  for (Section& s : layerSections(rs))
    out.push_back(std::move(s));
  return out;
}

} // namespace triad::bench::detail
