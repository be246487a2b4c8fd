"""The Python package's tests run as every rank of a job (hcomm-run -n N python3 -m pytest ...):
each rank runs the same tests in the same order, so their collectives meet. Every result is
compared with numpy's own computation from all ranks' inputs, which each rank can make."""

import os

import numpy as np
import pytest

import hcomm

DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]


def value(rank, n, dtype):
    """Rank `rank`'s input of n elements: small integers every type holds, sums exact."""
    i = np.arange(n)
    v = (rank * 7 + i * 3) % 11
    if np.dtype(dtype).kind != "u":
        v = v - 5
    return v.astype(dtype)


@pytest.fixture(scope="session")
def comm():
    c = hcomm.default()
    yield c


@pytest.fixture(scope="session")
def world(comm):
    return comm.rank, comm.size


def pytest_report_header(config):
    return f"hcomm {hcomm.__version__}, rank {os.environ.get('HCOMM_RANK')}"
