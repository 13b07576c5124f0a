# SPDX-License-Identifier: MIT
"""The cases of a fixture directory written by `ulpgate export`, and the
candidate files `ulpgate score` reads back (docs/interop.md).

A case's inputs are numpy arrays exactly as exported (bf16 as
ml_dtypes.bfloat16); its outputs are described by name, dtype and shape, as
the manifest lists them, with the reference tensors `<output>.<mode>.ref` the
file holds for them. Writing checks every output before anything is written, so a wrong
candidate never leaves a file that `score` would only refuse later.
"""
import json
import os
import tempfile

import ml_dtypes
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

MANIFEST_SCHEMA = "ulpgate-fixtures/1"
MODES = ("exact", "staged")

# safetensors dtype names of the fixtures (docs/interop.md) and their numpy dtypes.
DTYPES = {
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F32": np.dtype(np.float32),
    "F64": np.dtype(np.float64),
    "U32": np.dtype(np.uint32),
}


class FixtureError(Exception):
    """A fixture directory this package cannot read (no manifest, another schema, a missing file)."""


class CandidateError(ValueError):
    """A candidate output that does not match its case: a wrong name, dtype or shape.
    Raised before any file of the case is written."""


class OutputSpec:
    """What `score` expects of one output: name, dtype (numpy), shape (tuple);
    optional (a pipeline's intermediate: hand it over if your kernel has it,
    and its stage is checked; leave it out otherwise); modes (the reference
    modes exported for it: the others depend on your intermediates)."""

    def __init__(self, name, dtype, shape, optional=False, modes=("exact", "staged")):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)
        self.optional, self.modes = optional, tuple(modes)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return "OutputSpec(%r, %s, %s)" % (self.name, dtype_name(self.dtype), list(self.shape))


def dtype_name(dtype):
    return "bfloat16" if dtype == DTYPES["BF16"] else np.dtype(dtype).name


class Case:
    """One exported case. Attributes: id, family, label, params (dict of ints),
    regime, seed, file (the file name, in the fixture and candidate
    directories), path (the fixture file), outputs (list of OutputSpec).
    `inputs` loads the input tensors on first use: {name: numpy array}."""

    def __init__(self, fixtures_dir, entry):
        self.id = entry.get("id")
        self.family = entry["family"]
        self.label = entry["label"]
        self.params = dict(entry["params"])
        self.regime = entry["regime"]
        self.seed = entry.get("seed")
        self.file = entry["file"]
        self.path = os.path.join(fixtures_dir, self.file)
        self._input_names = [i["name"] for i in entry["inputs"]]
        self._output_names = [o["name"] for o in entry["outputs"]]
        self._entry = entry
        self._inputs = None
        self._outputs = None

    @property
    def name(self):
        """FAMILY/LABEL, as ulpgate's reports name the case."""
        return "%s/%s" % (self.family, self.label)

    def __repr__(self):
        return "<ulpgate.Case %s (%s)>" % (self.name, self.file)

    def _open(self):
        if not os.path.isfile(self.path):
            raise FixtureError("%s: case file %s is missing" % (self.name, self.path))
        return safe_open(self.path, framework="numpy")

    @property
    def inputs(self):
        if self._inputs is None:
            with self._open() as f:
                self._inputs = {n: f.get_tensor(n) for n in self._input_names}
        return self._inputs

    @property
    def outputs(self):
        if self._outputs is None:
            self._outputs = [OutputSpec(o["name"], DTYPES[o["dtype"]], tuple(o["shape"]), bool(o.get("optional")),
                                        tuple(o["reference"]))
                             for o in self._entry["outputs"]]
        return self._outputs

    def torch_inputs(self, device=None):
        """The inputs as PyTorch tensors (bf16 as torch.bfloat16, through an int16
        view: torch.from_numpy knows no ml_dtypes), moved to `device` if given.
        Imports torch, which this package does not otherwise need."""
        import torch

        tensors = {}
        for name, array in self.inputs.items():
            if array.dtype == DTYPES["BF16"]:
                tensor = torch.from_numpy(np.array(array.view(np.int16))).view(torch.bfloat16)
            else:
                tensor = torch.from_numpy(np.array(array))
            tensors[name] = tensor if device is None else tensor.to(device)
        return tensors

    def output(self, name):
        for spec in self.outputs:
            if spec.name == name:
                return spec
        raise KeyError("%s has no output %r (its outputs: %s)" % (self.name, name, ", ".join(self._output_names)))

    def reference(self, name, mode="exact"):
        """The reference of an output in `mode` ("exact" or "staged"), correctly rounded to its dtype."""
        return self._tensor(name, mode, "ref")

    def reference_f64(self, name, mode="exact"):
        """The reference's high part r_hi in float64 (within 2^-53 relative of the MPFR value)."""
        return self._tensor(name, mode, "ref_f64")

    def bound(self, name, mode="exact"):
        """The per-element bound (float64) on |y - r| of a correct kernel."""
        return self._tensor(name, mode, "bound")

    def _tensor(self, name, mode, what):
        if mode not in MODES:
            raise ValueError("mode %r: expected one of %s" % (mode, ", ".join(MODES)))
        if mode not in self.output(name).modes:
            raise FixtureError("%s: output %s has no exported %s reference: it is checked against its stage's "
                               "reference computed from the intermediates your kernel hands over, which "
                               "`ulpgate score` computes (docs/interop.md)" % (self.name, name, mode))
        with self._open() as f:
            return f.get_tensor("%s.%s.%s" % (name, mode, what))

    def write(self, candidate_dir, outputs, cast=False):
        """Write this case's candidate file, CANDIDATE_DIR/<file>, from {output name: array}.

        Arrays may be numpy arrays or anything with `.numpy()` or `__array__`
        (PyTorch tensors on the CPU, MLX arrays); a CUDA tensor must be moved
        with `.cpu()` first. Every output is checked before anything is
        written: an unknown name, a missing output that has elements, a wrong
        dtype or a wrong shape raises CandidateError naming the case, the
        tensor, what was expected and what was got. float32 (or float64) data
        for a bfloat16 output is an error unless cast=True, which rounds it to
        bfloat16 (nearest, ties to even); nothing is cast silently.
        Returns the path written."""
        arrays = {}
        for name, value in outputs.items():
            if name not in self._output_names:
                raise CandidateError("%s: %r is not an output of %s (its outputs: %s)"
                                     % (self.name, name, self.family, ", ".join(self._output_names)))
            arrays[name] = self._checked(self.output(name), to_numpy(value, self.name, name), cast)
        for spec in self.outputs:
            if spec.name not in arrays and spec.size > 0 and not spec.optional:
                raise CandidateError("%s: output %s is missing (expected %s %s)"
                                     % (self.name, spec.name, dtype_name(spec.dtype), list(spec.shape)))
        os.makedirs(candidate_dir, exist_ok=True)
        path = os.path.join(candidate_dir, self.file)
        # A temporary beside the target, renamed when complete: never a half-written candidate file.
        fd, tmp = tempfile.mkstemp(prefix="." + self.file + ".", suffix=".tmp", dir=candidate_dir)
        os.close(fd)
        try:
            save_file(arrays, tmp, metadata={"family": self.family, "label": self.label})
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return path

    def _checked(self, spec, array, cast):
        got = array.dtype
        if got != spec.dtype:
            if cast and spec.dtype == DTYPES["BF16"] and got in (np.float32, np.float64):
                array = array.astype(spec.dtype)
            else:
                hint = " (pass cast=True to round it to bfloat16)" if spec.dtype == DTYPES["BF16"] and got.kind == "f" else ""
                raise CandidateError("%s: output %s: expected dtype %s, got %s%s"
                                     % (self.name, spec.name, dtype_name(spec.dtype), dtype_name(got), hint))
        if tuple(array.shape) != spec.shape:
            raise CandidateError("%s: output %s: expected shape %s, got %s"
                                 % (self.name, spec.name, list(spec.shape), list(array.shape)))
        return np.ascontiguousarray(array)


def to_numpy(value, case_name, tensor):
    """A numpy array of `value`: numpy arrays as they are, torch tensors through
    .detach().numpy() and MLX arrays through np.array (bfloat16 through a
    16-bit integer view: numpy has no bf16 of its own), anything else through
    .numpy() or __array__."""
    if isinstance(value, np.ndarray):
        return value
    device = getattr(value, "device", None)
    if device is not None and getattr(device, "type", "cpu") not in ("cpu", None) and hasattr(value, "cpu"):
        raise CandidateError("%s: output %s is on device %s: move it with .cpu() first" % (case_name, tensor, device))
    if type(value).__module__.startswith("torch"):
        import torch  # only when the value is a torch tensor, so torch is never required

        value = value.detach()
        if value.dtype == torch.bfloat16:
            return value.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return value.numpy()
    if type(value).__module__.startswith("mlx"):
        import mlx.core as mx  # only for an MLX array, as torch above

        if value.dtype == mx.bfloat16:
            return np.array(value.view(mx.uint16)).view(ml_dtypes.bfloat16)
        return np.array(value)
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    if hasattr(value, "__array__"):
        return np.asarray(value)
    raise CandidateError("%s: output %s is a %s: expected a numpy array or something with .numpy() or __array__"
                         % (case_name, tensor, type(value).__name__))


class Fixtures:
    """A fixture directory written by `ulpgate export`: iterate it for its Cases.

    fx = Fixtures("fx"); fx.manifest is the parsed manifest.json; len(fx) and
    fx.cases (a list); fx.select(family=...) filters by family."""

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        path = os.path.join(self.directory, "manifest.json")
        try:
            with open(path) as f:
                self.manifest = json.load(f)
        except FileNotFoundError:
            raise FixtureError("%s: no manifest.json: write the fixtures with `ulpgate export --out %s`"
                               % (self.directory, self.directory)) from None
        except json.JSONDecodeError as e:
            raise FixtureError("%s: not JSON: %s" % (path, e)) from None
        schema = self.manifest.get("schema")
        if schema != MANIFEST_SCHEMA:
            raise FixtureError("%s: schema %r, this package reads %r" % (path, schema, MANIFEST_SCHEMA))
        self.cases = [Case(self.directory, c) for c in self.manifest["cases"]]

    def __iter__(self):
        return iter(self.cases)

    def __len__(self):
        return len(self.cases)

    def select(self, family=None):
        return [c for c in self.cases if family is None or c.family == family]


def cases(directory, family=None):
    """The cases of an exported fixture directory (of one family, if given)."""
    return Fixtures(directory).select(family)
