# SPDX-License-Identifier: MIT
"""Edits safetensors files with the standard library only, for
tests/cli/user_inputs.sh (a user's input file, a candidate, hostile inputs).

  st_edit.py inputs FIXTURE MANIFEST OUT [drop=NAME] [shape=NAME:D,D,..] [set=NAME:INDEX:VALUE] [meta=K=V]
      the case's input tensors of an exported FIXTURE file (the manifest's
      entry for it gives the names and the params, written as string
      metadata), edited: a tensor dropped, reshaped, one f32 element set,
      a metadata key removed (meta=K=) or set
  st_edit.py candidate FIXTURE OUT MODE [set=NAME:INDEX:VALUE]
      each OUTPUT.MODE.ref tensor of FIXTURE as OUTPUT (a correct candidate),
      optionally with one f32 element set (a wrong one)
  st_edit.py set FILE NAME:INDEX:VALUE
      one f32 element of FILE set in place (every other tensor kept)
  st_edit.py zeros OUT META NAME:DTYPE:D,D,.. ...
      zero-filled tensors with JSON metadata META
"""
import json
import os
import struct
import sys

SIZE = {"BF16": 2, "F32": 4, "F64": 8, "U32": 4}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {name: (t["dtype"], t["shape"], bytearray(body[t["data_offsets"][0]:t["data_offsets"][1]]))
               for name, t in header.items()}
    return meta, tensors


def write(path, tensors, meta):
    header, at, blobs = {}, 0, []
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(blob)]}
        at += len(blob)
        blobs.append(bytes(blob))
    if meta:
        header["__metadata__"] = meta
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def apply_set(tensors, spec):
    name, index, value = spec.split(":")
    dtype, _, blob = tensors[name]
    assert dtype == "F32", name
    struct.pack_into("<f", blob, 4 * int(index), float(value))


def main(argv):
    verb, edits = argv[1], [a for a in argv[2:] if "=" in a]
    if verb == "inputs":
        fixture, manifest, out = argv[2:5]
        entry = next(c for c in json.load(open(manifest))["cases"] if c["file"] == os.path.basename(fixture))
        _, all_tensors = read(fixture)
        tensors = {t["name"]: all_tensors[t["name"]] for t in entry["inputs"] if t["name"] in all_tensors}
        meta = {k: str(v) for k, v in entry["params"].items()}
        for e in edits:
            kind, arg = e.split("=", 1)
            if kind == "drop":
                del tensors[arg]
            elif kind == "shape":
                name, dims = arg.split(":")
                tensors[name] = (tensors[name][0], [int(d) for d in dims.split(",")], tensors[name][2])
            elif kind == "set":
                apply_set(tensors, arg)
            elif kind == "meta":
                key, value = arg.split("=", 1)
                if value:
                    meta[key] = value
                else:
                    meta.pop(key)
        write(out, tensors, meta)
    elif verb == "candidate":
        fixture, out, mode = argv[2:5]
        _, all_tensors = read(fixture)
        suffix = "." + mode + ".ref"
        tensors = {n[:-len(suffix)]: t for n, t in all_tensors.items() if n.endswith(suffix)}
        for e in edits:
            apply_set(tensors, e.split("=", 1)[1])
        write(out, tensors, {})
    elif verb == "set":
        meta, tensors = read(argv[2])
        apply_set(tensors, argv[3])
        write(argv[2], tensors, meta)
    elif verb == "zeros":
        out, meta = argv[2], json.loads(argv[3])
        tensors = {}
        for spec in argv[4:]:
            name, dtype, dims = spec.split(":")
            shape = [int(d) for d in dims.split(",")]
            count = 1
            for d in shape:
                count *= d
            tensors[name] = (dtype, shape, bytearray(count * SIZE[dtype]))
        write(out, tensors, meta)
    else:
        sys.exit("st_edit.py: unknown verb " + verb)


if __name__ == "__main__":
    main(sys.argv)
