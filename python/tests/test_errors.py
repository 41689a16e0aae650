"""Errors arrive as triad.Error subclasses with the CLI's kind, message, node and op type."""
import numpy as np
import pytest

import triad


def _cli_message(cli, *args):
    p = cli(*args, check=False)
    return p.returncode, p.stderr.strip()


def test_broken_model_is_invalid_and_names_the_node(small, cli):
    with pytest.raises(triad.InvalidModelError) as e:
        triad.load(small / "broken.onnx")
    err = e.value
    assert isinstance(err, triad.Error)
    assert err.kind == "invalid model" and err.exit_code == 4
    assert err.node == "conv0" and err.op_type == "Conv"
    assert "strides" in str(err)
    code, stderr = _cli_message(cli, "inspect", small / "broken.onnx")
    assert code == err.exit_code
    assert stderr == f"triad: {err.kind}: {err}"


def test_unsupported_op(small, cli):
    with pytest.raises(triad.UnsupportedError) as e:
        triad.load(small / "unknown_op.onnx")
    assert e.value.node == "frob" and e.value.op_type == "Frobnicate"
    code, stderr = _cli_message(cli, "inspect", small / "unknown_op.onnx")
    assert code == 5 and stderr.endswith(str(e.value))


def test_unsupported_on_the_fpga_names_the_layer(small):
    m = triad.load(small / "exp.onnx")
    with pytest.raises(triad.UnsupportedError) as e:
        m.quantize(calibration=np.zeros((2, 4), np.float32)).predict(np.zeros((2, 4), np.float32))
    assert e.value.node == "act" and e.value.op_type == "Exp"


def test_missing_and_truncated_files(small, tmp_path):
    with pytest.raises(triad.IoError) as e:
        triad.load(tmp_path / "nope.onnx")
    assert "nope.onnx" in str(e.value) and isinstance(e.value, OSError)
    with pytest.raises(triad.InvalidModelError):
        triad.load(small / "truncated.onnx")


def test_inputs_that_do_not_fit(small):
    exe = triad.load(small / "mlp.onnx", batch=2).compile("cpu")
    with pytest.raises(triad.RunError) as e:
        exe(np.zeros((3, 4), np.float32))
    assert "input 'x' dimension 0 ('N') is 3" in str(e.value) and e.value.exit_code == 6
    with pytest.raises(triad.RunError) as e:
        exe(np.zeros((2, 5), np.float32))
    assert "dimension 1 is fixed at 4" in str(e.value)
    with pytest.raises(triad.UnsupportedError) as e:
        exe(np.zeros((2, 4), np.complex64))  # no IR type for it
    assert "input 'x'" in str(e.value)
    with pytest.raises(triad.UsageError):
        exe.run({"nope": np.zeros((2, 4), np.float32)})
    with pytest.raises(triad.UsageError):
        exe(np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32))


def test_bad_arguments_are_usage_errors(small):
    m = triad.load(small / "mlp.onnx")
    with pytest.raises(triad.UsageError) as e:
        m.compile("tpu")
    assert "interp, cpu, gpu, fpga" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(triad.UsageError):
        m.compile("cpu", device="0")
    with pytest.raises(triad.UsageError):
        triad.load(small / "mlp.onnx", batch=0)
    with pytest.raises(triad.UsageError) as e:
        m.quantize({"default": {"precision": "fixed<99,6>"}})
    assert "99" in str(e.value)


def test_memory_limit_is_a_resource_error(models, cli):
    before = triad.max_memory()
    triad.set_max_memory(4096)
    try:
        with pytest.raises(triad.ResourceError) as e:
            triad.load(models / "digits_cnn.onnx", batch=360).compile("interp")(
                np.load(models / "digits_test_x.npy"))
    finally:
        triad.set_max_memory(before)
    assert e.value.exit_code == 7 and isinstance(e.value, MemoryError)
    # The same model refused the same way by the CLI (`inspect`: `run` reads its input file,
    # which is over the limit too, before the model, to bind the model's dimensions from it).
    code, stderr = _cli_message(cli, "--max-memory", 4096, "inspect", models / "digits_cnn.onnx",
                                "--batch", 360)
    assert code == 7 and stderr == f"triad: {e.value.kind}: {e.value}"
    assert triad.max_memory() == before
    with pytest.raises(triad.UsageError):
        triad.set_max_memory(0)


def test_one_class_per_cpp_error_kind():
    from triad import _triad, errors
    kinds = _triad.error_kinds()  # errorKindName of every ErrorKind, from ir/Diagnostics
    assert sorted(kinds) == sorted(errors._BY_KIND)
    assert all(issubclass(errors._make(k, "x").__class__, triad.Error) for k in kinds)
    assert len({c.exit_code for c in errors._BY_KIND.values()}) == len(kinds)
