"""A minimal safetensors reader and writer, written from the format description alone
(8-byte little-endian header length, JSON header, data buffer) so that tests can check
hetu's files with code that shares nothing with hetu. Tensors are torch tensors (CPU).

    tensors, metadata = read_folder("hf_out")     # model.safetensors or the sharded index
    write_file("x.safetensors", {"a": torch.ones(2)}, {"format": "pt"})
"""
import json
import os
import struct

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16,
          "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8}
NAMES = {v: k for k, v in DTYPES.items()}


def read_file(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[base + begin:base + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, metadata


def read_folder(path):
    """A HF folder (index or model.safetensors) or one .safetensors file."""
    if not os.path.isdir(path):
        return read_file(path)
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_file(os.path.join(path, "model.safetensors"))
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    tensors, metadata = {}, {}
    for shard in sorted(set(weight_map.values())):
        t, metadata = read_file(os.path.join(path, shard))
        tensors.update(t)
    assert set(tensors) == set(weight_map), "index and shards disagree"
    return tensors, metadata


def write_file(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        blob = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
