"""Writes the small ONNX models the end-to-end tests import with IREE's own
importer (`iree-import-onnx`): a CNN, a matmul-plus-bias MLP and a Gather
over i64 indices. Weights are deterministic, so every run writes the same
bytes.

Usage: python make_models.py OUT_DIR
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def weights(name, shape, seed):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.25
    return numpy_helper.from_array(values, name)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def cnn(path):
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [
            weights("conv_w", [4, 1, 3, 3], 1),
            weights("conv_b", [4], 2),
            weights("fc_w", [10, 64], 3),
            weights("fc_b", [10], 4),
        ],
    )
    save(graph, path)


def mlp(path):
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("Add", ["m1", "b1"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [weights("w1", [16, 32], 5), weights("b1", [32], 6), weights("w2", [32, 8], 7), weights("b2", [8], 8)],
    )
    save(graph, path)


def gather(path):
    nodes = [
        helper.make_node("Gather", ["table", "indices"], ["rows"], axis=0),
        helper.make_node("ArgMax", ["rows"], ["best"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "gather",
        [helper.make_tensor_value_info("indices", TensorProto.INT64, [3])],
        [
            helper.make_tensor_value_info("rows", TensorProto.FLOAT, [3, 16]),
            helper.make_tensor_value_info("best", TensorProto.INT64, [3]),
        ],
        [weights("table", [10, 16], 9)],
    )
    save(graph, path)


if __name__ == "__main__":
    out = sys.argv[1]
    cnn(f"{out}/cnn.onnx")
    mlp(f"{out}/mlp.onnx")
    gather(f"{out}/gather.onnx")
