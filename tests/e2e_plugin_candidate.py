# SPDX-License-Identifier: MIT
"""A `score` candidate from a kernel library, with the Python standard library only.

usage: e2e_plugin_candidate.py FIXTURES CDIR LIBRARY

For every gdn_e2e case of FIXTURES/manifest.json (`ulpgate export`), reads the
inputs from the case's safetensors file, calls the library's gdn_e2e through
include/ulpgate/kernel_abi.h (ctypes), and writes CDIR/<the case's file> with
every output the kernel wrote: an optional output (a pipeline's intermediate)
it left untouched is left out of the file, as docs/interop.md allows.
tests/e2e_plugin.sh scores what it writes.
"""
import ctypes
import json
import os
import struct
import sys

PARAMS = ["B", "T", "Hg", "H", "K", "V", "BT", "has_h0"]  # `ulpgate list` order
DTYPES = {"BF16": (0, 2), "F32": (1, 4)}  # safetensors name: (ulpgate_dtype, bytes)
POISON = 0xFF  # every byte: a NaN in bf16 and f32 that no correct output is


class Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_double)]


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("count", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


RUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Param), ctypes.c_size_t,
                       ctypes.POINTER(Tensor), ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)


class Kernel(ctypes.Structure):
    _fields_ = [("family", ctypes.c_char_p), ("run", RUN), ("user", ctypes.c_void_p)]


class Table(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("n_kernels", ctypes.c_uint32),
                ("kernels", ctypes.POINTER(Kernel))]


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    return {name: data[t["data_offsets"][0]:t["data_offsets"][1]]
            for name, t in header.items() if name != "__metadata__"}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def aligned_buffer(nbytes, fill=None):
    """A buffer of nbytes at a 64-byte aligned address (kernel_abi.h), and its address."""
    raw = ctypes.create_string_buffer(nbytes + 64)
    address = (ctypes.addressof(raw) + 63) & ~63
    if fill is not None:
        ctypes.memmove(address, fill, nbytes)
    return raw, address


def gdn_e2e(library):
    table = ctypes.CFUNCTYPE(ctypes.POINTER(Table))(("ulpgate_kernels", ctypes.CDLL(library)))()
    for i in range(table.contents.n_kernels):
        kernel = table.contents.kernels[i]
        if kernel.family == b"gdn_e2e":
            return kernel
    sys.exit(f"{library}: no gdn_e2e kernel")


def main(fixtures, cdir, library):
    kernel = gdn_e2e(library)
    manifest = json.load(open(os.path.join(fixtures, "manifest.json")))
    os.makedirs(cdir, exist_ok=True)
    for case in manifest["cases"]:
        if case["family"] != "gdn_e2e":
            continue
        inputs = read_safetensors(os.path.join(fixtures, case["file"]))
        specs = case["inputs"] + case["outputs"]
        n_inputs = len(case["inputs"])
        keep, tensors = [], (Tensor * len(specs))()
        for i, (t, spec) in enumerate(zip(tensors, specs)):
            code, width = DTYPES[spec["dtype"]]
            count = 1
            for d in spec["shape"]:
                count *= d
            fill = (inputs[spec["name"]] if count else b"") if i < n_inputs else bytes([POISON]) * (count * width)
            raw, address = aligned_buffer(count * width, fill)
            keep.append((raw, address, count * width))
            t.name, t.dtype, t.count, t.data = spec["name"].encode(), code, count, address
        params = (Param * len(PARAMS))(*[Param(p.encode(), case["params"][p]) for p in PARAMS])
        msg = ctypes.create_string_buffer(256)
        rc = kernel.run(kernel.user, params, len(PARAMS), tensors, len(specs), msg, 256)
        if rc != 0:
            sys.exit(f"{case['label']}: the kernel returned {rc}: {msg.value.decode()}")
        written = {}
        for spec, (raw, address, nbytes) in zip(specs[n_inputs:], keep[n_inputs:]):
            blob = ctypes.string_at(address, nbytes)
            if spec.get("optional") and blob == bytes([POISON]) * nbytes:
                continue  # not handed over
            written[spec["name"]] = (spec["dtype"], spec["shape"], blob)
        write_safetensors(os.path.join(cdir, case["file"]), written)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
