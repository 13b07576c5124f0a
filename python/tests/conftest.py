# SPDX-License-Identifier: MIT
"""Fixture directories exported once per test session with the real binary."""
import os
import subprocess

import pytest
import ulpgate

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def export(tmp_path_factory, *filter_args, sweep="fixtures/sweeps/interop"):
    out = tmp_path_factory.mktemp("fixtures") / "fx"
    subprocess.run([ulpgate.find_ulpgate(), "export", "--sweep", os.path.join(REPO, sweep),
                    "--out", str(out), *filter_args], check=True, stdout=subprocess.DEVNULL)
    return ulpgate.Fixtures(out)


@pytest.fixture(scope="session")
def fx(tmp_path_factory):
    """The interop sweep: gdn_chunk_cumsum (f32) and head_norm_rope (bf16)."""
    return export(tmp_path_factory)


@pytest.fixture(scope="session")
def cumsum_fx(tmp_path_factory):
    """Its gdn_chunk_cumsum cases alone (the README's example)."""
    return export(tmp_path_factory, "--filter", "gdn_chunk_cumsum")


@pytest.fixture(scope="session")
def e2e_fx(tmp_path_factory):
    """A gdn_e2e case: a pipeline with optional intermediates."""
    return export(tmp_path_factory, sweep="fixtures/sweeps/interop-pipeline")
